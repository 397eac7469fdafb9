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
// (Statuses' order, then policy, rule and object). Not safe for
// concurrent use.
type Report struct {
	max int
	ns  map[string]*nsReport
}

type nsReport struct {
	summary map[Status]int
	total   int
	kept    keptHeap
}

// NewReport caps each report at maxResults results (<= 0: DefaultMaxResults).
func NewReport(maxResults int) *Report {
	if maxResults <= 0 {
		maxResults = DefaultMaxResults
	}
	return &Report{max: maxResults, ns: map[string]*nsReport{}}
}

// Add counts r and keeps it when it is among the cap's most pressing.
func (rp *Report) Add(r Result) {
	r.Message = CutMessage(r.Message)
	n := rp.ns[r.Resource.Namespace]
	if n == nil {
		n = &nsReport{summary: map[Status]int{}}
		rp.ns[r.Resource.Namespace] = n
	}
	n.summary[r.Result]++
	n.total++
	if len(n.kept) < rp.max {
		heap.Push(&n.kept, r)
		return
	}
	if less(r, n.kept[0]) { // more pressing than the least kept
		n.kept[0] = r
		heap.Fix(&n.kept, 0)
	}
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
	for i, r := range kept {
		res := map[string]any{"policy": r.Policy, "rule": r.Rule, "result": string(r.Result), "source": Source,
			"scored": true, "timestamp": ts, "properties": map[string]any{"kind": r.Kind},
			"resources": []any{resourceRef(r.Resource)}}
		if r.Message != "" {
			res["message"] = r.Message
		}
		if sev := strings.ToLower(r.Severity); slices.Contains(severities, sev) {
			res["severity"] = sev
		}
		if r.Category != "" {
			res["category"] = r.Category
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

// compare orders results: status (Statuses' order), policy, rule, object,
// message.
func compare(a, b Result) int {
	return cmp.Or(cmp.Compare(a.Result.rank(), b.Result.rank()), cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Rule, b.Rule),
		cmp.Compare(a.Resource.Namespace, b.Resource.Namespace), cmp.Compare(a.Resource.Name, b.Resource.Name),
		cmp.Compare(a.Resource.Kind, b.Resource.Kind), cmp.Compare(a.Resource.APIVersion, b.Resource.APIVersion), cmp.Compare(a.Message, b.Message))
}

func less(a, b Result) bool { return compare(a, b) < 0 }

// keptHeap holds the kept results with the least pressing on top.
type keptHeap []Result

func (h keptHeap) Len() int           { return len(h) }
func (h keptHeap) Less(i, j int) bool { return less(h[j], h[i]) }
func (h keptHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keptHeap) Push(x any)        { *h = append(*h, x.(Result)) }
func (h *keptHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
