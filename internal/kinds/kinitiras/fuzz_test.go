package kinitiras_test

import (
	"context"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// FuzzPolicy compiles arbitrary kinitiras manifests and applies them to a
// Deployment: nothing may panic, and every evaluation ends.
func FuzzPolicy(f *testing.F) {
	for _, s := range []string{
		`{"kind": "ClusterOverridePolicy", "metadata": {"name": "a"}, "spec": {"overrideRules": [{"overriders": {"plaintext": [{"op": "add", "path": "/metadata/labels/x", "value": "y"}]}}]}}`,
		`{"kind": "OverridePolicy", "metadata": {"name": "b", "namespace": "default"}, "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "fieldSelector": {"matchExpressions": [{"field": "metadata.annotations.a.b/c", "operator": "Exists"}]}}], "overrideRules": [{"targetOperations": ["*"], "overriders": {"cue": "object: _ @tag(object)\npatches: [{op: \"add\", path: \"/metadata/labels/n\", value: object.metadata.name}]"}}]}}`,
		`{"kind": "ClusterValidatePolicy", "metadata": {"name": "c"}, "spec": {"validateRules": [{"cue": "object: _ @tag(object)\nvalidate: valid: object.spec.replicas < 3"}]}}`,
	} {
		f.Add(s)
	}
	obj := `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}}, "spec": {"replicas": 3}}`
	f.Fuzz(func(t *testing.T, manifest string) {
		v, err := value.Decode([]byte(manifest))
		if err != nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		p, err := kinitiras.Compile(m)
		if p == nil || err != nil {
			return
		}
		o, _ := value.Decode([]byte(obj))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _, _, _ = kinitiras.ApplyOverrides(ctx, nil, []*kinitiras.Policy{p}, o.(map[string]any), nil, rules.Create)
		_, _, _ = kinitiras.Validate(ctx, nil, []*kinitiras.Policy{p}, o.(map[string]any), nil, rules.Delete)
	})
}
