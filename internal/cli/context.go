package cli

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/source"
)

// staticResolver is the engine's ObjectReader offline: it serves the
// objects given with --context, of any kind, by reference (the engine asks
// for Namespaces and Nodes). An object is found under its API group, kind,
// name and the namespace its metadata names (none for the cluster-scoped
// kinds); a later object with the same reference replaces an earlier one.
type staticResolver struct {
	objects map[engine.ObjectRef]map[string]any
	// api holds the recorded apiCall responses; user the requester
	// (context_readers.go).
	api  map[string][]byte
	http map[string]*engine.HTTPResponse
	user *offlineUser
	// anyBody are recorded responses that answer any body (Kyverno's
	// apiCallResponses): by "METHOD target", METHOD "" for any method.
	anyBody map[string]*engine.HTTPResponse
	// images are the image data of Context documents, by reference
	// (context_objects.go).
	images map[string]map[string]any
	// globals are the global context entries, by name: a Kyverno suite's,
	// or the GlobalContextEntry documents of --context, made on first use
	// (context_globals.go); nil: none given.
	globals     map[string]offlineGlobal
	globalsOnce sync.Once
	// graph is the context objects' relationship graph, built on first
	// use.
	graphOnce sync.Once
	graph     *graph.Graph
	// packs derive more edges (--rule-pack); nil: none. buildErrs are
	// their failures on the context objects.
	packs     *packs.Router
	buildErrs []error
}

var _ engine.ObjectReader = (*staticResolver)(nil)

// newStaticResolver also returns warnings for the documents no reference
// can name (no kind or no metadata.name), and an error for a context data
// document (APICallResponse, UserInfo) that is not right.
func newStaticResolver(docs []source.Document) (*staticResolver, []string, error) {
	r := &staticResolver{objects: map[engine.ObjectRef]map[string]any{}}
	var ignored []string
	for _, d := range docs {
		if isContextData(&d) {
			if err := r.addContextData(&d); err != nil {
				return nil, nil, err
			}
			continue
		}
		if d.Kind() == "" || d.Name() == "" {
			ignored = append(ignored, d.Origin+": an object without kind or metadata.name; ignored as context")
			continue
		}
		r.addObject(&d)
	}
	return r, ignored, nil
}

// addObject records a context object (with its kind and name).
func (r *staticResolver) addObject(d *source.Document) {
	ref := engine.ObjectRef{Group: apiGroup(d.APIVersion()), Kind: d.Kind(), Namespace: d.Namespace(), Name: d.Name()}
	if kinds.IsClusterScoped(ref.Kind) {
		ref.Namespace = ""
	}
	r.objects[ref] = d.Object
}

// Get returns the context object ref names, or nil.
func (r *staticResolver) Get(_ context.Context, ref engine.ObjectRef) (map[string]any, error) {
	return r.objects[ref], nil
}

// apiGroup is the group of an apiVersion ("apps/v1": apps; "v1": the core
// group, "").
func apiGroup(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

var _ engine.GraphReader = (*staticResolver)(nil)

// Edges are the object's edges in the graph of the context objects: those
// into it, and those out of it (its own, derived from it, and those of its
// context copy's).
func (r *staticResolver) Edges(ctx context.Context, ref engine.ObjectRef, obj map[string]any) (incoming, outgoing []any, err error) {
	r.graphOnce.Do(func() {
		objs := make([]map[string]any, 0, len(r.objects))
		for _, o := range r.objects {
			objs = append(objs, o)
		}
		r.graph = graph.Build(objs, r.derive(ctx, &r.buildErrs))
	})
	errs := slices.Clone(r.buildErrs)
	self := graph.Ref{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
	obj = graph.Named(obj, self)
	own := graph.Extract(obj)
	if d := r.derive(ctx, &errs); d != nil {
		own = append(own, d(obj)...)
	}
	in, out := r.graph.Of(self, own)
	for _, e := range in {
		incoming = append(incoming, e.Tree())
	}
	for _, e := range out {
		outgoing = append(outgoing, e.Tree())
	}
	return incoming, outgoing, errors.Join(errs...)
}

// derive is the packs' edges of an object, their failures appended to
// errs (the other edges remain); nil without packs.
func (r *staticResolver) derive(ctx context.Context, errs *[]error) graph.Deriver {
	if r.packs == nil {
		return nil
	}
	return func(obj map[string]any) []graph.Edge {
		edges, es := r.packs.Derive(ctx, obj)
		*errs = append(*errs, es...)
		return edges
	}
}
