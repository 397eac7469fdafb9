package cli

import "github.com/modwright/modwright/internal/engine"

// contextObjects are the objects of the --context reader (nil without
// one): where Kubernetes' admission policies look up their params and
// namespaces (runner.ChainOptions.Objects).
func contextObjects(resolver engine.ObjectReader) []map[string]any {
	r, ok := resolver.(*staticResolver)
	if !ok || r == nil {
		return nil
	}
	objs := make([]map[string]any, 0, len(r.objects))
	for _, o := range r.objects {
		objs = append(objs, o)
	}
	return objs
}
