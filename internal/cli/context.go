package cli

import (
	"context"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
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
		ref := engine.ObjectRef{Group: apiGroup(d.APIVersion()), Kind: d.Kind(), Namespace: d.Namespace(), Name: d.Name()}
		if ref.Kind == "" || ref.Name == "" {
			ignored = append(ignored, d.Origin+": an object without kind or metadata.name; ignored as context")
			continue
		}
		if kinds.IsClusterScoped(ref.Kind) {
			ref.Namespace = ""
		}
		r.objects[ref] = d.Object
	}
	return r, ignored, nil
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
