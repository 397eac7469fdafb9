package rules

import (
	"cmp"
	"slices"
)

// DefaultClusterRulesNamespace is where cluster-wide rules live unless
// configured otherwise (KubeMod's namespace).
const DefaultClusterRulesNamespace = "kubemod-system"

// SnapshotOptions configure a Snapshot.
type SnapshotOptions struct {
	// ClusterRulesNamespace holds the rules that apply to cluster-scoped
	// objects and, through targetNamespaceRegex, to other namespaces.
	// Empty means DefaultClusterRulesNamespace.
	ClusterRulesNamespace string
}

// Snapshot is an immutable, indexed set of compiled rules. It is safe for
// concurrent use; publish new versions by swapping a pointer.
type Snapshot struct {
	clusterNS string
	all       []*Rule // every rule, sorted by Key
	broken    []*Rule
	byNS      map[string]*opIndex // rules of one namespace
	global    *opIndex            // rules with no namespace: apply to every object
	cluster   *opIndex            // rules of the cluster-rules namespace
}

// opIndex indexes one scope's rules by operation, then kind.
type opIndex struct {
	ops [3]kindIndex // CREATE, UPDATE, DELETE
}

type kindIndex struct {
	byKind  map[string][]*Rule // pinned to the kind, merged with anyKind, in evaluation order
	anyKind []*Rule            // rules not pinned to a kind, in evaluation order
}

func opSlot(op Operation) int {
	switch op {
	case Create:
		return 0
	case Update:
		return 1
	case Delete:
		return 2
	}
	return -1
}

var allOps = [3]Operation{Create, Update, Delete}

// Less is the evaluation order: tier, then namespace, then name.
func Less(a, b *Rule) int {
	if c := cmp.Compare(a.Tier, b.Tier); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// NewSnapshot indexes rules. Rules with a compile error are kept (see
// Broken) but never returned as candidates. When two rules share a Key the
// later one wins.
func NewSnapshot(rules []*Rule, opts SnapshotOptions) *Snapshot {
	s := &Snapshot{clusterNS: opts.ClusterRulesNamespace, byNS: map[string]*opIndex{}}
	if s.clusterNS == "" {
		s.clusterNS = DefaultClusterRulesNamespace
	}
	seen := make(map[string]int, len(rules))
	for _, r := range rules {
		if i, ok := seen[r.Key]; ok {
			s.all[i] = r
			continue
		}
		seen[r.Key] = len(s.all)
		s.all = append(s.all, r)
	}
	slices.SortFunc(s.all, func(a, b *Rule) int { return cmp.Compare(a.Key, b.Key) })

	groups := map[string][]*Rule{}
	var global, cluster []*Rule
	for _, r := range s.all {
		switch {
		case r.Err != nil:
			s.broken = append(s.broken, r)
		case r.Namespace == "":
			global = append(global, r)
		case r.Namespace == s.clusterNS:
			cluster = append(cluster, r)
		default:
			groups[r.Namespace] = append(groups[r.Namespace], r)
		}
	}
	for ns, rs := range groups {
		s.byNS[ns] = buildIndex(rs)
	}
	s.global = buildIndex(global)
	s.cluster = buildIndex(cluster)
	return s
}

func buildIndex(rules []*Rule) *opIndex {
	idx := &opIndex{}
	for slot, op := range allOps {
		ki := &idx.ops[slot]
		pinned := map[string][]*Rule{}
		for _, r := range rules {
			if !r.Operations(op) {
				continue
			}
			if r.kinds == nil {
				ki.anyKind = append(ki.anyKind, r)
				continue
			}
			for _, k := range r.kinds {
				pinned[k] = append(pinned[k], r)
			}
		}
		slices.SortFunc(ki.anyKind, Less)
		if len(pinned) > 0 {
			ki.byKind = make(map[string][]*Rule, len(pinned))
			for k, rs := range pinned {
				slices.SortFunc(rs, Less)
				ki.byKind[k] = mergeSorted(rs, ki.anyKind)
			}
		}
	}
	return idx
}

// mergeSorted merges two lists sorted by Less into a new one. Less is a
// total order on the rules of an index (their keys are unique), so the
// result is what sorting the concatenation would give, in linear time: an
// index of thousands of rules not pinned to a kind merges them into the
// list of every pinned kind.
func mergeSorted(a, b []*Rule) []*Rule {
	out := make([]*Rule, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if Less(b[0], a[0]) < 0 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}

func (idx *opIndex) lookup(slot int, kind string) []*Rule {
	if idx == nil {
		return nil
	}
	ki := &idx.ops[slot]
	if rs, ok := ki.byKind[kind]; ok {
		return rs
	}
	return ki.anyKind
}

// ClusterRulesNamespace returns the namespace whose rules are cluster-wide.
func (s *Snapshot) ClusterRulesNamespace() string { return s.clusterNS }

// Rules returns every rule, compiled or broken, sorted by Key. The slice
// must not be modified.
func (s *Snapshot) Rules() []*Rule { return s.all }

// Broken returns the rules that failed to compile, sorted by Key.
func (s *Snapshot) Broken() []*Rule { return s.broken }

// Len is the number of rules, broken ones included.
func (s *Snapshot) Len() int { return len(s.all) }

// Candidates returns the rules that can apply to an object of the given kind
// in namespace ns ("" for cluster-scoped objects) for op, in evaluation
// order (tier, namespace, name). An empty kind means unknown: only rules not
// pinned to a kind are returned. buf is reused when the result must be
// assembled from several scopes; the result must not be modified.
func (s *Snapshot) Candidates(ns string, op Operation, kind string, buf []*Rule) []*Rule {
	slot := opSlot(op)
	if slot < 0 {
		return nil
	}
	var local []*Rule
	if ns != "" && ns != s.clusterNS {
		local = s.byNS[ns].lookup(slot, kind)
	}
	global := s.global.lookup(slot, kind)
	cluster := s.cluster.lookup(slot, kind)

	out := buf[:0]
	for _, r := range cluster {
		if s.clusterApplies(r, ns) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		switch {
		case len(global) == 0:
			return local
		case len(local) == 0:
			return global
		}
	}
	out = append(out, local...)
	out = append(out, global...)
	slices.SortFunc(out, Less)
	return out
}

// clusterApplies: a cluster rule applies to cluster-scoped objects when it has
// no targetNamespaceRegex, and to objects of every namespace (the empty name
// standing for cluster-scoped objects) its regex matches.
func (s *Snapshot) clusterApplies(r *Rule, ns string) bool {
	if r.TargetNamespaces == nil {
		return ns == ""
	}
	return r.TargetNamespaces.MatchString(ns)
}
