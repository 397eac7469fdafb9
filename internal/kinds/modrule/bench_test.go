package modrule_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
)

func ptr[T any](v T) *T { return &v }

// benchRule is the benchmark rule: 4 criteria and 2 operations, one
// with a filtered select, one with a templated value. kind is the kind the
// rule is pinned to.
func benchRule(i int, kind string) *v1beta1.ModRule {
	return &v1beta1.ModRule{
		ObjectMeta: metav1ObjectMeta(fmt.Sprintf("rule-%04d", i), "default"),
		Spec: v1beta1.ModRuleSpec{
			Type: v1beta1.ModRuleTypePatch,
			Match: []v1beta1.MatchItem{
				{Select: "$.kind", MatchValue: ptr(kind)},
				{Select: "$.metadata.labels.app", MatchValue: ptr("nginx")},
				{Select: "$.spec.template.spec.containers[*].image", MatchRegex: ptr(`nginx:1\.14\..*`)},
				{Select: "$.spec.replicas", MatchValues: []string{"1", "2", "3"}},
			},
			Patch: []v1beta1.PatchOperation{
				{
					Operation: v1beta1.PatchOperationTypeReplace,
					Select:    ptr(`$.spec.template.spec.containers[? @.name == "nginx"]`),
					Path:      "/spec/template/spec/containers/#0/ports/0/containerPort",
					Value:     ptr("8080"),
				},
				{
					Operation: v1beta1.PatchOperationTypeAdd,
					Path:      fmt.Sprintf("/metadata/labels/rule-%04d", i),
					Value:     ptr(fmt.Sprintf("{{ .Target.metadata.name }}-%d", i)),
				},
			},
		},
	}
}

func benchSnapshot(b *testing.B, matching, other int) *engine.Snapshot {
	var rs []*modrule.Rule
	kinds := []string{"StatefulSet", "DaemonSet", "Pod", "Service", "ConfigMap", "Job", "CronJob", "Secret"}
	for i := 0; i < matching+other; i++ {
		kind := "Deployment"
		if i >= matching {
			kind = kinds[i%len(kinds)]
		}
		r, err := modrule.Compile(benchRule(i, kind))
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	return engine.NewSnapshot(asRules(rs))
}

// BenchmarkEvaluate measures one admission of the load test's Deployment
// (testdata/bench/objects/deployment.json: 3.3 KB, with a
// last-applied-configuration annotation), decoded beforehand.
func BenchmarkEvaluate(b *testing.B) {
	for _, bc := range []struct {
		name            string
		matching, other int
		wantLabels      int
	}{
		{"rules=0", 0, 0, 0},
		{"rules=1000/none-apply", 0, 1000, 0},
		{"rules=10/matching=10", 10, 0, 10},
		{"rules=100/matching=100", 100, 0, 100},
		{"rules=1000/matching=100", 100, 900, 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			snap := benchSnapshot(b, bc.matching, bc.other)
			obj := readResourceTB(b, filepath.Join("..", "..", "..", "testdata", "bench", "objects", "deployment.json"))
			eng := engine.New(engine.Options{})
			req := engine.Request{Operation: rules.Create, Namespace: "default", Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: obj}
			ctx := context.Background()
			d, err := eng.Evaluate(ctx, snap, req)
			if err != nil {
				b.Fatal(err)
			}
			if len(d.Errors) > 0 {
				b.Fatalf("rule errors: %v", d.Errors)
			}
			if bc.wantLabels > 0 && len(d.Patch) == 0 {
				b.Fatal("the rules did not patch the object")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := eng.Evaluate(ctx, snap, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompile measures loading one benchmark rule.
func BenchmarkCompile(b *testing.B) {
	mr := benchRule(1, "Deployment")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := modrule.Compile(mr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot10k measures indexing 10,000 compiled rules.
func BenchmarkSnapshot10k(b *testing.B) {
	var rs []*modrule.Rule
	for i := 0; i < 10000; i++ {
		r, err := modrule.Compile(benchRule(i, []string{"Deployment", "Pod", "Service"}[i%3]))
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		engine.NewSnapshot(asRules(rs))
	}
}
