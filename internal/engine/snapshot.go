package engine

import (
	"cmp"
	"slices"

	"github.com/modwright/modwright/internal/rules"
)

// Snapshot is an immutable, indexed set of compiled rules of every kind. It
// is safe for concurrent use; publish new versions by swapping a pointer.
type Snapshot struct {
	all      []Rule // every rule, sorted by kind then key
	broken   []Rule
	byNS     map[string]*opIndex // rules of one namespace ("" for cluster-scoped objects)
	anyNS    *opIndex            // rules for every namespace
	filtered *opIndex            // rules whose scope Rule.InScope decides
	payloads []Rule              // rules of JSON payloads, in evaluation order
}

// opIndex indexes one scope's rules by operation, then kind.
type opIndex struct {
	ops [4]kindIndex // CREATE, UPDATE, DELETE, CONNECT
}

type kindIndex struct {
	byKind  map[string][]Rule // pinned to the kind, merged with anyKind, in evaluation order
	anyKind []Rule            // rules not pinned to a kind, in evaluation order
}

func opSlot(op rules.Operation) int {
	switch op {
	case rules.Create:
		return 0
	case rules.Update:
		return 1
	case rules.Delete:
		return 2
	case rules.Connect:
		return 3
	}
	return -1
}

var allOps = [4]rules.Operation{rules.Create, rules.Update, rules.Delete, rules.Connect}

// Less is the evaluation order: tier, then kind, then namespace, then name.
func Less(a, b Rule) int {
	ai, bi := a.Info(), b.Info()
	if c := cmp.Compare(ai.Tier, bi.Tier); c != 0 {
		return c
	}
	if c := cmp.Compare(ai.Kind, bi.Kind); c != 0 {
		return c
	}
	if c := cmp.Compare(ai.Namespace, bi.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(ai.Name, bi.Name)
}

func byKey(a, b Rule) int {
	ai, bi := a.Info(), b.Info()
	if c := cmp.Compare(ai.Kind, bi.Kind); c != 0 {
		return c
	}
	return cmp.Compare(ai.Key, bi.Key)
}

// NewSnapshot indexes rules of any kinds. Rules with a compile error are
// kept (see Broken) but never returned as candidates. When two rules of one
// kind share a Key the later one wins.
func NewSnapshot(rs []Rule) *Snapshot {
	s := &Snapshot{byNS: map[string]*opIndex{}}
	type id struct{ kind, key string }
	seen := make(map[id]int, len(rs))
	for _, r := range rs {
		k := id{r.Info().Kind, r.Info().Key}
		if i, ok := seen[k]; ok {
			s.all[i] = r
			continue
		}
		seen[k] = len(s.all)
		s.all = append(s.all, r)
	}
	slices.SortFunc(s.all, byKey)

	groups := map[string][]Rule{}
	var anyNS, filtered []Rule
	for _, r := range s.all {
		info := r.Info()
		switch {
		case info.Err != nil:
			s.broken = append(s.broken, r)
		case info.Index.Payloads:
			s.payloads = append(s.payloads, r)
		case info.Index.Filtered:
			filtered = append(filtered, r)
		case info.Index.AnyNamespace:
			anyNS = append(anyNS, r)
		default:
			groups[info.Index.Namespace] = append(groups[info.Index.Namespace], r)
		}
	}
	for ns, g := range groups {
		s.byNS[ns] = buildIndex(g)
	}
	s.anyNS = buildIndex(anyNS)
	s.filtered = buildIndex(filtered)
	slices.SortFunc(s.payloads, Less)
	return s
}

func buildIndex(rs []Rule) *opIndex {
	idx := &opIndex{}
	for slot, op := range allOps {
		ki := &idx.ops[slot]
		pinned := map[string][]Rule{}
		for _, r := range rs {
			keys := &r.Info().Index
			if !keys.Operations.Has(op) {
				continue
			}
			if keys.Kinds == nil {
				ki.anyKind = append(ki.anyKind, r)
				continue
			}
			for _, k := range keys.Kinds {
				pinned[k] = append(pinned[k], r)
			}
		}
		slices.SortFunc(ki.anyKind, Less)
		if len(pinned) > 0 {
			ki.byKind = make(map[string][]Rule, len(pinned))
			for k, p := range pinned {
				slices.SortFunc(p, Less)
				ki.byKind[k] = mergeSorted(p, ki.anyKind)
			}
		}
	}
	return idx
}

// mergeSorted merges two lists sorted by Less into a new one. Less is a
// total order on the rules of an index (their kind and key are unique), so
// the result is what sorting the concatenation would give, in linear time:
// an index of thousands of rules not pinned to a kind merges them into the
// list of every pinned kind.
func mergeSorted(a, b []Rule) []Rule {
	out := make([]Rule, 0, len(a)+len(b))
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

func (idx *opIndex) lookup(slot int, kind string) []Rule {
	if idx == nil {
		return nil
	}
	ki := &idx.ops[slot]
	if rs, ok := ki.byKind[kind]; ok {
		return rs
	}
	return ki.anyKind
}

// PayloadRules returns the rules that evaluate JSON payloads
// (IndexKeys.Payloads), in evaluation order; the slice must not be
// modified.
func (s *Snapshot) PayloadRules() []Rule { return s.payloads }

// Rules returns every rule, compiled or broken, sorted by kind then Key.
// The slice must not be modified.
func (s *Snapshot) Rules() []Rule { return s.all }

// Broken returns the rules that failed to compile, sorted by kind then Key.
func (s *Snapshot) Broken() []Rule { return s.broken }

// Len is the number of rules, broken ones included.
func (s *Snapshot) Len() int { return len(s.all) }

// Candidates returns the rules that can apply to an object of the given kind
// in namespace ns ("" for cluster-scoped objects) for op, in evaluation
// order (Less). An empty kind means unknown: only rules not pinned to a
// kind are returned. buf is reused when the result must be assembled from
// several scopes; the result must not be modified.
func (s *Snapshot) Candidates(ns string, op rules.Operation, kind string, buf []Rule) []Rule {
	slot := opSlot(op)
	if slot < 0 {
		return nil
	}
	local := s.byNS[ns].lookup(slot, kind)
	global := s.anyNS.lookup(slot, kind)
	filtered := s.filtered.lookup(slot, kind)

	out := buf[:0]
	for _, r := range filtered {
		if r.InScope(ns) {
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
