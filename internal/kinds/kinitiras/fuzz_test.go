package kinitiras_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/lang"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
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

// FuzzRender renders arbitrary templates: nothing may panic, a template
// that renders gives a program that compiles, and one that runs natively
// gives what its program gives on a Deployment.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`{"type": "annotations", "operation": "add", "path": "a/b", "value": {"string": "x\"y"}}`,
		`{"type": "labels", "operation": "replace", "path": "k", "valueRef": {"from": "current", "path": "metadata.labels.app"}}`,
		`{"type": "resourcesOversell", "operation": "replace", "resourcesOversell": {"cpuFactor": "0.5", "memoryFactor": "0.2"}}`,
		`{"type": "tolerations", "operation": "remove", "tolerations": [{"key": "k", "operator": "Equal", "value": "v"}]}`,
		`{"type": "affinity", "operation": "add", "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "z"}}]}}}`,
	} {
		f.Add(s)
	}
	obj := `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}}, "spec": {"replicas": 3}}`
	f.Fuzz(func(t *testing.T, tmpl string) {
		var ot kinitiras.OverrideTemplate
		if json.Unmarshal([]byte(tmpl), &ot) != nil {
			return
		}
		src, errs := kinitiras.RenderOverride(&ot, "t")
		if errs != nil {
			return
		}
		p, ds := cuelang.Language{}.CompileExpr(&lang.Env{Name: "t"}, src)
		if ds != nil {
			t.Fatalf("a rendered program does not compile: %v\n%s", ds, src)
		}
		o, _ := value.Decode([]byte(obj))
		ops, ok := kinitiras.DirectOverride(&ot, o, o, nil)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		want, err := p.Run(ctx, map[string]any{cuelang.VarData: map[string]any{"object": o, "oldObject": o, "extraParams": map[string]any{}}}, cuelang.OutputPatches)
		if l, isList := want.([]any); isList && len(l) == 0 {
			want = []any(nil)
		}
		if err == nil && !value.Equal(want, ops) {
			t.Fatalf("native %v, CUE %v", ops, want)
		}
	})
}
