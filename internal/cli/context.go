package cli

import (
	"context"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source"
)

// staticResolver serves syntheticRefs from objects given with --context.
type staticResolver struct {
	namespaces map[string]map[string]any
	nodes      map[string]map[string]any
}

var _ engine.Resolver = (*staticResolver)(nil)

func newStaticResolver(docs []source.Document) (*staticResolver, []string) {
	r := &staticResolver{namespaces: map[string]map[string]any{}, nodes: map[string]map[string]any{}}
	var ignored []string
	for _, d := range docs {
		switch d.Kind() {
		case "Namespace":
			r.namespaces[d.Name()] = d.Object
		case "Node":
			r.nodes[d.Name()] = d.Object
		default:
			ignored = append(ignored, d.Origin+": "+d.Kind()+" is not a Namespace or Node; ignored as context")
		}
	}
	return r, ignored
}

func (r *staticResolver) Namespace(_ context.Context, name string) (map[string]any, error) {
	return r.namespaces[name], nil
}

func (r *staticResolver) Node(_ context.Context, name string) (map[string]any, error) {
	return r.nodes[name], nil
}
