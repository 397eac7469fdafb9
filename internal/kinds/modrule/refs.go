package modrule

import (
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/value"
)

// KubeMod's node-reference annotations: a Pod annotated with a Node's name
// sees that Node as syntheticRefs.node; a Pod annotated
// InjectNodeRefAnnotation: "true" gets NodeNameAnnotation when it is
// bound (the operator's pods/binding webhook, asked by NodeAnnotations).
const (
	NodeNameAnnotation      = "ref.kubemod.io/nodename"
	NodeAnnotation          = "ref.kubemod.io/node" // also accepted
	InjectNodeRefAnnotation = "ref.kubemod.io/inject-node-ref"
)

// NodeAnnotations asks the operator to record the node of the Pods that
// ask for it (kinds.NodeRecorded).
func (*KindAdapter) NodeAnnotations() kinds.NodeAnnotations {
	return kinds.NodeAnnotations{Ask: InjectNodeRefAnnotation, Record: NodeNameAnnotation}
}

var _ kinds.NodeRecorded = (*KindAdapter)(nil)

// refsInput is the rule's engine.Input: KubeMod's syntheticRefs, the
// related objects a ModRule reads beside the object (the Namespace, the
// Node of a Pod annotated with NodeNameAnnotation) and, a modwright
// extension, the object's edges in the relationship graph. Every ModRule
// declares it, so that no ModRule changes syntheticRefs; it is built only
// when a candidate reads it.
type refsInput struct {
	// reads: the rule reads syntheticRefs; edges: syntheticRefs.edges.
	reads, edges bool
}

// The three inputs a ModRule may declare, shared by the rules (the kernel
// tells inputs apart with ==: a snapshot of many rules has at most three).
// Immutable.
var (
	refsNone  = []engine.Input{&refsInput{}}
	refsRead  = []engine.Input{&refsInput{reads: true}}
	refsEdges = []engine.Input{&refsInput{reads: true, edges: true}}
)

// refsFor is the input of a rule that reads syntheticRefs (reads) and
// its edges (edges).
func refsFor(reads, edges bool) []engine.Input {
	switch {
	case edges:
		return refsEdges
	case reads:
		return refsRead
	}
	return refsNone
}

var _ engine.Input = (*refsInput)(nil)

func (*refsInput) Member() string { return SyntheticRefs }

// Build reads the related objects the candidates read (nil when none
// does): an object that cannot be read is recorded against
// syntheticRefs.<key> and left out.
func (*refsInput) Build(ir *engine.InputRequest) any {
	var reads, edges bool
	ir.Each(func(in engine.Input) {
		if r, ok := in.(*refsInput); ok {
			reads, edges = reads || r.reads, edges || r.edges
		}
	})
	if !reads {
		return nil
	}
	refs := map[string]any{}
	if objects := ir.Objects(); objects != nil {
		req := ir.Request()
		if ns := req.Namespace; ns != "" {
			addRef(ir, objects, refs, "namespace", engine.ObjectRef{Kind: "Namespace", Name: ns})
		}
		if ir.Kind() == "Pod" {
			node, _ := lookupString(ir.Object(), "metadata", "annotations", NodeNameAnnotation)
			if node == "" {
				node, _ = lookupString(ir.Object(), "metadata", "annotations", NodeAnnotation)
			}
			if node != "" {
				addRef(ir, objects, refs, "node", engine.ObjectRef{Kind: "Node", Name: node})
			}
		}
	}
	if edges {
		addEdges(ir, refs)
	}
	return refs
}

// ViewKey: a rule reading the edges sees those of its namespace (a rule
// with no namespace, or of the cluster-rules namespace, every edge).
func (in *refsInput) ViewKey(r engine.Rule) (string, bool) {
	if !in.edges {
		return "", false
	}
	if mr, ok := r.(*Rule); ok && mr.Namespace != "" && mr.Namespace != mr.clusterNS {
		return mr.Namespace, true
	}
	return "", true
}

// View is refs with the edges confined to ns.
func (*refsInput) View(built any, ns string) any {
	refs, _ := built.(map[string]any)
	all, ok := refs["edges"].(map[string]any)
	if !ok {
		return built
	}
	keep := func(es any) []any {
		out := []any{}
		list, _ := es.([]any)
		for _, e := range list {
			if engine.EdgeWithin(e, ns) {
				out = append(out, e)
			}
		}
		return out
	}
	view := make(map[string]any, len(refs))
	for k, v := range refs {
		view[k] = v
	}
	view["edges"] = map[string]any{"incoming": keep(all["incoming"]), "outgoing": keep(all["outgoing"])}
	return view
}

// addRef reads one related object into refs[key]; an error is recorded
// against syntheticRefs.<key> and leaves it out.
func addRef(ir *engine.InputRequest, objects engine.ObjectReader, refs map[string]any, key string, ref engine.ObjectRef) {
	obj, err := objects.Get(ir.Context(), ref)
	if err != nil {
		ir.Fail(SyntheticRefs+"."+key, err)
	} else if obj != nil {
		refs[key] = cleanRef(obj)
	}
}

// addEdges reads the object's edges into refs["edges"] ({incoming,
// outgoing}); an error is recorded against syntheticRefs.edges, and the
// edges read despite it are still given.
func addEdges(ir *engine.InputRequest, refs map[string]any) {
	g := ir.Graph()
	if g == nil {
		return
	}
	req, obj := ir.Request(), ir.Object()
	name := req.Name
	if name == "" {
		name, _ = lookupString(obj, "metadata", "name")
	}
	in, out, err := g.Edges(ir.Context(), engine.ObjectRef{Group: req.Kind.Group, Kind: ir.Kind(), Namespace: req.Namespace, Name: name}, obj)
	if err != nil {
		ir.Fail(SyntheticRefs+".edges", err)
		if in == nil && out == nil {
			return
		}
	}
	if in == nil {
		in = []any{}
	}
	if out == nil {
		out = []any{}
	}
	refs["edges"] = map[string]any{"incoming": in, "outgoing": out}
}

// cleanRef copies a related object without managedFields and the
// last-applied-configuration annotation.
func cleanRef(obj map[string]any) map[string]any {
	c := value.DeepCopy(obj).(map[string]any)
	if md, ok := c["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, engine.LastAppliedAnnotation)
		}
	}
	return c
}

// lookupString is the string at path in obj.
func lookupString(obj map[string]any, path ...string) (string, bool) {
	v, ok := value.Lookup(obj, path...)
	s, isString := v.(string)
	return s, ok && isString
}
