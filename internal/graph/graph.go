package graph

import (
	"encoding/binary"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Selects is the built-in edge type between a Service or a workload and
// the Pods its selector selects (docs/graph.md).
const Selects = "SELECTS"

// Graph is the edges between objects, indexed by both ends and kept up to
// date object by object (Upsert, Delete): the operator feeds it from its
// informers, the CLI builds it from manifests (Build). It is safe for
// concurrent use; reads see each update whole.
type Graph struct {
	derive Deriver

	mu      sync.RWMutex
	objects map[Ref]*node
	// out and in index the edges by their ends, sorted; an edge two
	// objects derive is there twice (a query gives it once). Both point to
	// one copy of each edge: an object's own edges are its node's (never
	// modified: replaced whole), a SELECTS edge is allocated once.
	out, in map[Ref][]*Edge
	// pods: the labels of each namespace's Pods; holders: the Services'
	// and workloads' selectors, by namespace (SELECTS edges).
	pods    map[string]map[Ref]labels.Set
	holders map[string]map[Ref]labels.Selector
	// labelSets are the distinct label sets the objects carry, one map
	// each, shared by every object that carries it (a workload's Pods carry
	// their template's labels), by labelsKey; a set no object carries any
	// more is dropped.
	labelSets map[string]*labelSet
}

// labelSet is one label set the graph's objects share, and how many
// carry it.
type labelSet struct {
	key  string
	m    map[string]string
	refs int
}

// node is what the graph keeps of an object: its identity and the edges
// it derived (SELECTS apart).
type node struct {
	res Resource
	own []Edge
	// selector: a holder's selector text ("" for none), to skip updates
	// that do not change it.
	selector string
	labels   *labelSet // nil: none
}

// Deriver derives more edges of one object (a rule pack's router); nil:
// none.
type Deriver func(obj map[string]any) []Edge

// New is an empty graph whose objects' edges are their built-in ones and
// those derive gives.
func New(derive Deriver) *Graph {
	return &Graph{derive: derive, objects: map[Ref]*node{}, out: map[Ref][]*Edge{}, in: map[Ref][]*Edge{},
		pods: map[string]map[Ref]labels.Set{}, holders: map[string]map[Ref]labels.Selector{}, labelSets: map[string]*labelSet{}}
}

// Build builds the graph of objs: each object's built-in edges (Extract),
// those derive gives, and SELECTS edges from Services and workloads to the
// Pods of their namespace their selectors match.
func Build(objs []map[string]any, derive Deriver) *Graph {
	g := New(derive)
	for _, o := range objs {
		g.Upsert(o)
	}
	return g
}

// RefOf names an object.
func RefOf(obj map[string]any) Ref {
	return Ref{Kind: str(obj, "kind"), Namespace: str(obj, "metadata", "namespace"), Name: str(obj, "metadata", "name")}
}

// Derive is an object's own edges: its built-in ones and those the
// graph's deriver gives, sorted, without duplicates.
func (g *Graph) Derive(obj map[string]any) []Edge {
	own := Extract(obj)
	if g.derive != nil {
		if d := g.derive(obj); len(d) > 0 {
			own = append(own, d...)
			slices.SortFunc(own, Compare)
			own = slices.Compact(own)
		}
	}
	return own
}

// Upsert adds an object or replaces its earlier version: its edges are
// derived again (an object whose edges did not change costs a comparison).
// obj is not kept nor modified.
func (g *Graph) Upsert(obj map[string]any) {
	ref := RefOf(obj)
	if ref.Kind == "" || ref.Name == "" {
		return
	}
	own := g.Derive(obj)
	sel, selText, isHolder := selectorOf(obj)
	res := resourceOf(ref, obj)
	isPod := ref.Kind == "Pod" && res.GroupVersion == "v1"
	objLabels, _ := dig(obj, "metadata", "labels").(map[string]any)
	key := labelsKey(objLabels)

	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.objects[ref]
	if n == nil {
		n = &node{}
		g.objects[ref] = n
	}
	ls := g.shareLabels(key, objLabels) // before the old set is let go: it may be the same
	g.releaseLabels(n.labels)
	n.labels = ls
	if ls != nil {
		res.Labels = ls.m
	}
	n.res = res
	podLabels := labels.Set(res.Labels) // shared: never modified
	if !slices.Equal(n.own, own) {
		for _, e := range n.own {
			g.unlink(e)
		}
		for i := range own {
			g.link(&own[i])
		}
		n.own = own
	}
	if isPod {
		old, had := g.pods[ref.Namespace][ref]
		if !had || !labels.Equals(old, podLabels) {
			g.setPod(ref, podLabels)
		}
	}
	if isHolder && (selText != n.selector || g.holders[ref.Namespace][ref] == nil) {
		g.setHolder(ref, sel)
		n.selector = selText
	} else if !isHolder && n.selector != "" {
		g.dropHolder(ref)
		n.selector = ""
	}
}

// Delete removes an object and the edges it derived.
func (g *Graph) Delete(ref Ref) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.objects[ref]
	if n == nil {
		return
	}
	for _, e := range n.own {
		g.unlink(e)
	}
	if _, ok := g.pods[ref.Namespace][ref]; ok {
		g.dropSelected(ref)
		delete(g.pods[ref.Namespace], ref)
	}
	if n.selector != "" {
		g.dropHolder(ref)
	}
	g.releaseLabels(n.labels)
	delete(g.objects, ref)
}

// shareLabels is the shared label set of key (labelsKey of objLabels),
// made when no object carries it yet, with one more reference; nil for
// none. Under g.mu.
func (g *Graph) shareLabels(key string, objLabels map[string]any) *labelSet {
	if key == "" {
		return nil
	}
	ls := g.labelSets[key]
	if ls == nil {
		ls = &labelSet{key: key, m: stringMap(objLabels)}
		g.labelSets[key] = ls
	}
	ls.refs++
	return ls
}

// releaseLabels lets go of one reference to ls (nil: none), dropping the
// set when no object carries it. Under g.mu.
func (g *Graph) releaseLabels(ls *labelSet) {
	if ls == nil {
		return
	}
	if ls.refs--; ls.refs == 0 {
		delete(g.labelSets, ls.key)
	}
}

// labelsKey is a label set's canonical text: its string-valued pairs,
// sorted, each key and value prefixed by its length (a manifest's labels,
// which no API server validated, may hold any byte); "" for none.
func labelsKey(m map[string]any) string {
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		if s, ok := v.(string); ok {
			keys = append(keys, k)
			n += len(k) + len(s) + 2*binary.MaxVarintLen64
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	for _, k := range keys {
		v := m[k].(string)
		b = append(binary.AppendUvarint(b, uint64(len(k))), k...)
		b = append(binary.AppendUvarint(b, uint64(len(v))), v...)
	}
	return string(b)
}

// setPod records a Pod's labels and its SELECTS edges anew.
func (g *Graph) setPod(ref Ref, set labels.Set) {
	g.dropSelected(ref)
	if g.pods[ref.Namespace] == nil {
		g.pods[ref.Namespace] = map[Ref]labels.Set{}
	}
	g.pods[ref.Namespace][ref] = set
	for h, sel := range g.holders[ref.Namespace] {
		if sel.Matches(set) {
			g.link(&Edge{Type: Selects, From: h, To: ref})
		}
	}
}

// dropSelected removes the SELECTS edges into a Pod.
func (g *Graph) dropSelected(pod Ref) {
	for _, e := range slices.Clone(g.in[pod]) {
		if e.Type == Selects {
			g.unlink(*e)
		}
	}
}

// setHolder records a Service's or workload's selector and its SELECTS
// edges anew.
func (g *Graph) setHolder(ref Ref, sel labels.Selector) {
	g.dropHolder(ref)
	if g.holders[ref.Namespace] == nil {
		g.holders[ref.Namespace] = map[Ref]labels.Selector{}
	}
	g.holders[ref.Namespace][ref] = sel
	for p, set := range g.pods[ref.Namespace] {
		if sel.Matches(set) {
			g.link(&Edge{Type: Selects, From: ref, To: p})
		}
	}
}

// dropHolder removes a holder's selector and its SELECTS edges.
func (g *Graph) dropHolder(ref Ref) {
	for _, e := range slices.Clone(g.out[ref]) {
		if e.Type == Selects {
			g.unlink(*e)
		}
	}
	delete(g.holders[ref.Namespace], ref)
}

// link adds e to both indexes, each kept sorted (a lookup copies, no
// sorting).
func (g *Graph) link(e *Edge) {
	g.out[e.From] = insertSorted(g.out[e.From], e)
	g.in[e.To] = insertSorted(g.in[e.To], e)
}

func insertSorted(es []*Edge, e *Edge) []*Edge {
	i, _ := slices.BinarySearchFunc(es, *e, compareAt)
	return slices.Insert(es, i, e)
}

// compareAt is Compare of the edge a points to and b.
func compareAt(a *Edge, b Edge) int { return Compare(*a, b) }

// unlink removes one copy of e from both indexes.
func (g *Graph) unlink(e Edge) {
	g.out[e.From] = removeOne(g.out[e.From], e)
	if len(g.out[e.From]) == 0 {
		delete(g.out, e.From)
	}
	g.in[e.To] = removeOne(g.in[e.To], e)
	if len(g.in[e.To]) == 0 {
		delete(g.in, e.To)
	}
}

func removeOne(es []*Edge, e Edge) []*Edge {
	if i, found := slices.BinarySearchFunc(es, e, compareAt); found {
		return slices.Delete(es, i, i+1)
	}
	return es
}

// values are the edges es points to.
func values(es []*Edge) []Edge {
	out := make([]Edge, len(es))
	for i, e := range es {
		out[i] = *e
	}
	return out
}

// selectorOf is a Service's or a workload's Pod selector and its text;
// an empty one selects nothing here (a Service without selector has its
// endpoints managed by hand).
func selectorOf(o map[string]any) (labels.Selector, string, bool) {
	switch str(o, "kind") {
	case "Service":
		m := stringMap(dig(o, "spec", "selector"))
		if len(m) == 0 {
			return nil, "", false
		}
		sel := labels.SelectorFromSet(m)
		return sel, sel.String(), true
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		s, ok := dig(o, "spec", "selector").(map[string]any)
		if !ok {
			return nil, "", false
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
			return nil, "", false
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, "", false
		}
		return sel, sel.String(), true
	}
	return nil, "", false
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

// Edges are every edge, sorted, once each.
func (g *Graph) Edges() []Edge {
	g.mu.RLock()
	var all []Edge
	for _, es := range g.out {
		for _, e := range es {
			all = append(all, *e)
		}
	}
	g.mu.RUnlock()
	return sorted(all)
}

// Outgoing are the edges from ref, sorted, once each.
func (g *Graph) Outgoing(ref Ref) []Edge {
	g.mu.RLock()
	es := values(g.out[ref])
	g.mu.RUnlock()
	return slices.Compact(es)
}

// Incoming are the edges to ref, sorted, once each.
func (g *Graph) Incoming(ref Ref) []Edge {
	g.mu.RLock()
	es := values(g.in[ref])
	g.mu.RUnlock()
	return slices.Compact(es)
}

// Resource is what the graph keeps of an object, KubeAtlas' resource
// (its read API's shape). Its Labels are shared with the other objects
// that carry the same set: never modify them.
type Resource struct {
	Kind            string            `json:"kind"`
	Name            string            `json:"name"`
	Namespace       string            `json:"namespace"`
	Labels          map[string]string `json:"labels,omitempty"`
	GroupVersion    string            `json:"groupVersion,omitempty"`
	UID             string            `json:"uid,omitempty"`
	OwnerReferences []OwnerRef        `json:"ownerReferences,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
}

// OwnerRef is an owner reference as a Resource lists it.
type OwnerRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	UID  string `json:"uid"`
}

func resourceOf(ref Ref, obj map[string]any) Resource {
	r := Resource{Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace, GroupVersion: str(obj, "apiVersion"),
		UID: str(obj, "metadata", "uid"), ResourceVersion: str(obj, "metadata", "resourceVersion")}
	for _, o := range list(obj, "metadata", "ownerReferences") {
		r.OwnerReferences = append(r.OwnerReferences, OwnerRef{Kind: str(o, "kind"), Name: str(o, "name"), UID: str(o, "uid")})
	}
	return r
}

// Object is the object ref names, when the graph holds it (one an
// informer or a manifest gave, not only an edge's end).
func (g *Graph) Object(ref Ref) (Resource, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n := g.objects[ref]
	if n == nil {
		return Resource{}, false
	}
	return n.res, true
}

// Len is the number of objects the graph holds.
func (g *Graph) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.objects)
}

// Size is the number of objects and of edges (an edge two objects derive
// counts twice).
func (g *Graph) Size() (objects, edges int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, es := range g.out {
		edges += len(es)
	}
	return len(g.objects), edges
}

func sorted(es []Edge) []Edge {
	slices.SortFunc(es, Compare)
	return slices.Compact(es)
}

// Of are the edges of the object self for a rule: those into it, and
// those out of it (own, derived from the object as the request has it,
// and those the graph holds from it: SELECTS, and those another object
// derived).
func (g *Graph) Of(self Ref, own []Edge) (incoming, outgoing []Edge) {
	incoming = g.Incoming(self)
	for _, e := range g.Outgoing(self) {
		own = append(own, e)
	}
	outgoing = own[:0:0]
	for _, e := range sorted(own) {
		if e.From == self {
			outgoing = append(outgoing, e)
		}
	}
	return incoming, outgoing
}

// Tree is an edge as a JSON tree: {type, from: {kind, namespace, name},
// to: {...}, attributes (when it has some)}.
func (e Edge) Tree() map[string]any {
	ref := func(r Ref) map[string]any {
		return map[string]any{"kind": r.Kind, "namespace": r.Namespace, "name": r.Name}
	}
	t := map[string]any{"type": e.Type, "from": ref(e.From), "to": ref(e.To)}
	if m := e.Attributes.Map(); m != nil {
		attrs := make(map[string]any, len(m))
		for k, v := range m {
			attrs[k] = v
		}
		t["attributes"] = attrs
	}
	return t
}

// Named is obj as the request names it: with self's namespace and name
// where the object itself has none or another namespace (a manifest
// without metadata.namespace), so that its edges are derived as the
// object will be stored. obj is not modified.
func Named(obj map[string]any, self Ref) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil || (md["namespace"] == self.Namespace || self.Namespace == "") && md["name"] != nil {
		return obj
	}
	md = maps.Clone(md)
	if self.Namespace != "" {
		md["namespace"] = self.Namespace
	}
	if md["name"] == nil {
		md["name"] = self.Name
	}
	obj = maps.Clone(obj)
	obj["metadata"] = md
	return obj
}
