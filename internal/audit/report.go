package audit

import (
	"cmp"
	"container/heap"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report names and annotations.
const (
	// ReportAPIVersion is the reports' API (wgpolicyk8s.io's, as Kyverno,
	// Policy Reporter and Kubewarden read it).
	ReportAPIVersion = "wgpolicyk8s.io/v1alpha2"
	// ReportName is the name of modwright's report in each namespace (and
	// of its ClusterPolicyReport).
	ReportName = "modwright-audit"
	// Source is the results' source.
	Source = "modwright"
	// AnnotationTruncated is "true" on a report that holds fewer results
	// than its summary counts; AnnotationResults is how many there were.
	AnnotationTruncated = "modwright.io/truncated"
	AnnotationResults   = "modwright.io/results"
)

// DefaultMaxResults is a report's default cap: about half a megabyte of
// results, well under etcd's 1.5 MiB object limit.
const DefaultMaxResults = 1000

// MaxMessageBytes bounds a kept result's message: a rule's message may
// hold an object's text (a deny message quoting an annotation, say), and
// a report of DefaultMaxResults such messages must stay under etcd's
// object limit.
const MaxMessageBytes = 1024

// CutMessage is msg cut to MaxMessageBytes (at a character's boundary,
// marked as cut), for whatever keeps results' messages.
func CutMessage(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	return strings.ToValidUTF8(msg[:MaxMessageBytes], "") + "... (truncated)"
}

// Report aggregates results into one report per namespace (and one for
// cluster-scoped objects) without keeping more than the cap of each: the
// summary counts every result, the kept results are the most pressing
// (Statuses' order, then policy, rule and object). A kept result is
// compact (entry): what thousands of results repeat (a rule's names and
// labels, the object's kind, the status; the message of a rule that says
// the same of every object) is one shared copy. Not safe for concurrent
// use.
type Report struct {
	max int
	ns  map[string]*nsReport
	// ids and messages are the shared copies, each bounded by maxShared
	// (past it a result keeps its own).
	ids      map[identity]*identity
	messages map[string]string
}

type nsReport struct {
	summary map[Status]int
	total   int
	kept    keptHeap
}

// identity is what results of one rule's status on one kind share.
type identity struct {
	Status                                 Status
	Policy, Kind, Rule, Severity, Category string
	ResourceAPIVersion, ResourceKind       string
}

// entry is a kept result.
type entry struct {
	id            *identity
	msg           string
	ns, name, uid string
}

// maxShared bounds Report's shared identities and messages: enough for
// the results of hundreds of rules, whatever their messages say.
const maxShared = 4096

// NewReport caps each report at maxResults results (<= 0: DefaultMaxResults).
func NewReport(maxResults int) *Report {
	if maxResults <= 0 {
		maxResults = DefaultMaxResults
	}
	return &Report{max: maxResults, ns: map[string]*nsReport{}, ids: map[identity]*identity{}, messages: map[string]string{}}
}

// Add counts r and keeps it when it is among the cap's most pressing.
func (rp *Report) Add(r Result) {
	n := rp.ns[r.Resource.Namespace]
	if n == nil {
		n = &nsReport{summary: map[Status]int{}}
		rp.ns[r.Resource.Namespace] = n
	}
	n.summary[r.Result]++
	n.total++
	e := entry{id: rp.identity(r), msg: CutMessage(r.Message), ns: r.Resource.Namespace, name: r.Resource.Name, uid: r.Resource.UID}
	if len(n.kept) < rp.max {
		e.msg = rp.message(e.msg)
		heap.Push(&n.kept, e)
		return
	}
	if less(e, n.kept[0]) { // more pressing than the least kept
		e.msg = rp.message(e.msg)
		n.kept[0] = e
		heap.Fix(&n.kept, 0)
	}
}

// identity is r's shared identity.
func (rp *Report) identity(r Result) *identity {
	id := identity{Status: r.Result, Policy: r.Policy, Kind: r.Kind, Rule: r.Rule, Severity: r.Severity, Category: r.Category,
		ResourceAPIVersion: r.Resource.APIVersion, ResourceKind: r.Resource.Kind}
	if p := rp.ids[id]; p != nil {
		return p
	}
	p := new(identity) // only now: a result's identity stays on the stack
	*p = id
	if len(rp.ids) < maxShared {
		rp.ids[id] = p
	}
	return p
}

// message is msg's shared copy.
func (rp *Report) message(msg string) string {
	if m, ok := rp.messages[msg]; ok {
		return m
	}
	if len(rp.messages) < maxShared {
		rp.messages[msg] = msg
	}
	return msg
}

// Reset forgets namespace ns's results (before its objects are scanned
// again).
func (rp *Report) Reset(ns string) { delete(rp.ns, ns) }

// Summary counts every result added, by status.
func (rp *Report) Summary() map[Status]int {
	out := map[Status]int{}
	for _, n := range rp.ns {
		for s, c := range n.summary {
			out[s] += c
		}
	}
	return out
}

// Namespaces are the namespaces with results, sorted ("" first: the
// cluster-scoped objects').
func (rp *Report) Namespaces() []string {
	nss := make([]string, 0, len(rp.ns))
	for ns := range rp.ns {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	return nss
}

// Object is the report of namespace ns ("": the ClusterPolicyReport) as a
// wgpolicyk8s.io object, each result stamped with now; nil when ns has no
// results. Build one at a time to hold one in memory.
func (rp *Report) Object(ns string, now time.Time) map[string]any {
	n := rp.ns[ns]
	if n == nil {
		return nil
	}
	return n.object(ns, now)
}

// Objects are every report (Object of each of Namespaces).
func (rp *Report) Objects(now time.Time) []map[string]any {
	nss := rp.Namespaces()
	out := make([]map[string]any, 0, len(nss))
	for _, ns := range nss {
		out = append(out, rp.ns[ns].object(ns, now))
	}
	return out
}

func (n *nsReport) object(ns string, now time.Time) map[string]any {
	kept := slices.Clone(n.kept)
	slices.SortFunc(kept, compare)
	results := make([]any, len(kept))
	// Numbers as int64, as unstructured objects hold them.
	ts := map[string]any{"seconds": now.Unix(), "nanos": int64(0)}
	for i, e := range kept {
		id := e.id
		res := map[string]any{"policy": id.Policy, "rule": id.Rule, "result": string(id.Status), "source": Source,
			"scored": true, "timestamp": ts, "properties": map[string]any{"kind": id.Kind},
			"resources": []any{resourceRef(Resource{APIVersion: id.ResourceAPIVersion, Kind: id.ResourceKind, Namespace: e.ns, Name: e.name, UID: e.uid})}}
		if e.msg != "" {
			res["message"] = e.msg
		}
		if sev := strings.ToLower(id.Severity); slices.Contains(severities, sev) {
			res["severity"] = sev
		}
		if id.Category != "" {
			res["category"] = id.Category
		}
		results[i] = res
	}
	summary := map[string]any{}
	for _, s := range Statuses {
		summary[string(s)] = int64(n.summary[s])
	}
	md := map[string]any{"name": ReportName, "labels": map[string]any{"app.kubernetes.io/managed-by": "modwright"}}
	kind := "ClusterPolicyReport"
	if ns != "" {
		kind, md["namespace"] = "PolicyReport", ns
	}
	if len(kept) < n.total {
		md["annotations"] = map[string]any{AnnotationTruncated: "true", AnnotationResults: strconv.Itoa(n.total)}
	}
	return map[string]any{"apiVersion": ReportAPIVersion, "kind": kind, "metadata": md, "summary": summary, "results": results}
}

// severities are the severities a report's schema allows (another is
// left out of the report: the API server would refuse the whole report).
var severities = []string{"critical", "high", "medium", "low", "info"}

func resourceRef(r Resource) map[string]any {
	m := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name}
	if r.Namespace != "" {
		m["namespace"] = r.Namespace
	}
	if r.UID != "" {
		m["uid"] = r.UID
	}
	return m
}

// compare orders kept results: status (Statuses' order), policy, rule,
// object, message.
func compare(a, b entry) int {
	return cmp.Or(cmp.Compare(a.id.Status.rank(), b.id.Status.rank()), cmp.Compare(a.id.Policy, b.id.Policy), cmp.Compare(a.id.Rule, b.id.Rule),
		cmp.Compare(a.ns, b.ns), cmp.Compare(a.name, b.name),
		cmp.Compare(a.id.ResourceKind, b.id.ResourceKind), cmp.Compare(a.id.ResourceAPIVersion, b.id.ResourceAPIVersion), cmp.Compare(a.msg, b.msg))
}

func less(a, b entry) bool { return compare(a, b) < 0 }

// keptHeap holds the kept results with the least pressing on top.
type keptHeap []entry

func (h keptHeap) Len() int           { return len(h) }
func (h keptHeap) Less(i, j int) bool { return less(h[j], h[i]) }
func (h keptHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keptHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *keptHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
