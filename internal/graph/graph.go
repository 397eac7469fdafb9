package graph

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Selects is the built-in edge type between a Service or a workload and
// the Pods its selector selects (docs/graph.md).
const Selects = "SELECTS"

// Graph is the edges between a set of objects, indexed by both ends. It is
// immutable once built and safe for concurrent reads.
type Graph struct {
	edges    []Edge
	out, in  map[Ref][]int // indexes into edges, by from and by to
	nObjects int
}

// Deriver derives more edges of one object (a rule pack's router); nil:
// none.
type Deriver func(obj map[string]any) []Edge

// Build builds the graph of objs: each object's built-in edges (Extract),
// those derive gives, and SELECTS edges from Services and workloads to the
// Pods of their namespace their selectors match.
func Build(objs []map[string]any, derive Deriver) *Graph {
	g := &Graph{out: map[Ref][]int{}, in: map[Ref][]int{}, nObjects: len(objs)}
	var all []Edge
	type pod struct {
		ref    Ref
		labels labels.Set
	}
	pods := map[string][]pod{} // by namespace
	for _, o := range objs {
		all = append(all, Extract(o)...)
		if derive != nil {
			all = append(all, derive(o)...)
		}
		if str(o, "kind") == "Pod" && str(o, "apiVersion") == "v1" {
			ns := str(o, "metadata", "namespace")
			pods[ns] = append(pods[ns], pod{Ref{"Pod", ns, str(o, "metadata", "name")}, stringMap(dig(o, "metadata", "labels"))})
		}
	}
	for _, o := range objs {
		sel, ok := selectorOf(o)
		if !ok {
			continue
		}
		ns := str(o, "metadata", "namespace")
		from := Ref{str(o, "kind"), ns, str(o, "metadata", "name")}
		for _, p := range pods[ns] {
			if sel.Matches(p.labels) {
				all = append(all, Edge{Type: Selects, From: from, To: p.ref})
			}
		}
	}
	slices.SortFunc(all, Compare)
	g.edges = slices.Compact(all)
	for i, e := range g.edges {
		g.out[e.From] = append(g.out[e.From], i)
		g.in[e.To] = append(g.in[e.To], i)
	}
	return g
}

// selectorOf is a Service's or a workload's Pod selector; an empty one
// selects nothing here (a Service without selector has its endpoints
// managed by hand).
func selectorOf(o map[string]any) (labels.Selector, bool) {
	switch str(o, "kind") {
	case "Service":
		m := stringMap(dig(o, "spec", "selector"))
		if len(m) == 0 {
			return nil, false
		}
		return labels.SelectorFromSet(m), true
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		s, ok := dig(o, "spec", "selector").(map[string]any)
		if !ok {
			return nil, false
		}
		ls := &metav1.LabelSelector{MatchLabels: stringMap(s["matchLabels"])}
		for _, e := range list(s, "matchExpressions") {
			req := metav1.LabelSelectorRequirement{Key: str(e, "key"), Operator: metav1.LabelSelectorOperator(str(e, "operator"))}
			for _, v := range list(e, "values") {
				if sv, ok := v.(string); ok {
					req.Values = append(req.Values, sv)
				}
			}
			ls.MatchExpressions = append(ls.MatchExpressions, req)
		}
		if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
			return nil, false
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, false
		}
		return sel, true
	}
	return nil, false
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		if s, ok := e.(string); ok {
			out[k] = s
		}
	}
	return out
}

// Edges are every edge, sorted.
func (g *Graph) Edges() []Edge { return g.edges }

// Outgoing are the edges from ref, sorted.
func (g *Graph) Outgoing(ref Ref) []Edge { return g.pick(g.out[ref]) }

// Incoming are the edges to ref, sorted.
func (g *Graph) Incoming(ref Ref) []Edge { return g.pick(g.in[ref]) }

func (g *Graph) pick(idx []int) []Edge {
	out := make([]Edge, len(idx))
	for i, j := range idx {
		out[i] = g.edges[j]
	}
	return out
}
