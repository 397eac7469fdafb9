package kyverno_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
)

// BenchmarkPSS evaluates the Kyverno policy library's Pod Security
// Standards ClusterPolicies (baseline and restricted, from
// ../shared/conformance/kyverno-policies) on the load test's 3.3 KB
// Deployment (testdata/bench/objects/deployment.json), through
// engine.Evaluate without a trace, as the webhook does: the pattern
// policies (pod-security/), their validate.cel twins (pod-security-cel/) and
// their ValidatingPolicy twins (pod-security-vpol/),
// on the Deployment as it is and made compliant. Compare with
// internal/kinds/policy's BenchmarkPSS (the same checks as 16 CEL
// ModwrightPolicies) in the same run (BENCHMARKS.md). The metrics=on
// variants count every result in Kyverno's metrics, as the server does.
func BenchmarkPSS(b *testing.B) {
	dir := testtool.ConformanceDir(b, "kyverno-policies", "MODWRIGHT_KYVERNO_POLICIES_DIR", "library")
	for _, set := range []string{"pod-security", "pod-security-cel", "pod-security-vpol", "pod-security/metrics=on"} {
		set, metrics := strings.CutSuffix(set, "/metrics=on")
		snap, n := pssSnapshot(b, filepath.Join(dir, "library", set), metrics)
		for _, compliant := range []bool{false, true} {
			name := set + "/policies=" + itoa(n) + "/denied"
			if compliant {
				name = set + "/policies=" + itoa(n) + "/compliant"
			}
			if metrics {
				name += "/metrics=on"
			}
			b.Run(name, func(b *testing.B) {
				eng := engine.New(engine.Options{NoTrace: true})
				req := engine.Request{Operation: rules.Create, Namespace: "bench", Name: "nginx-deployment",
					Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: testtool.BenchDeployment(b, compliant)}
				ctx := context.Background()
				d, err := eng.Evaluate(ctx, snap, req)
				if err != nil {
					b.Fatal(err)
				}
				if len(d.Errors) > 0 {
					b.Fatalf("rule errors: %v", d.Errors)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := eng.Evaluate(ctx, snap, req); err != nil {
						b.Fatal(err)
					}
				}
			})
			if set != "pod-security-vpol" || metrics {
				continue
			}
			// As the webhook gets it, and as Kyverno's CEL engine is
			// handed the request: the object as JSON text, decoded per
			// review.
			b.Run(name+"/json", func(b *testing.B) {
				eng := engine.New(engine.Options{NoTrace: true})
				text, err := json.Marshal(testtool.BenchDeployment(b, compliant))
				if err != nil {
					b.Fatal(err)
				}
				req := engine.Request{Operation: rules.Create, Namespace: "bench", Name: "nginx-deployment",
					Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, ObjectJSON: text}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := eng.Evaluate(ctx, snap, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// pssSnapshot loads the baseline and restricted ClusterPolicies of a
// library directory (their suites' files left out), as Enforce.
func pssSnapshot(b *testing.B, dir string, metrics bool) (*engine.Snapshot, int) {
	b.Helper()
	var docs []source.Document
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || strings.Contains(p, "/.") || strings.Contains(p, "subrule") {
			return err
		}
		if !strings.Contains(p, "/baseline/") && !strings.Contains(p, "/restricted/") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		ds, err := source.ParseManifest(p, data)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if d.Kind() == "ClusterPolicy" || d.Kind() == "ValidatingPolicy" {
				docs = append(docs, d)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	ks := kyverno.NewKinds()
	if metrics {
		prometheus.NewRegistry().MustRegister(ks[0].(kinds.Observed).Observer().Collectors()...)
	}
	res := source.LoadRules(docs, kinds.NewRegistry(append(ks, kyverno.NewCELKinds()...)...))
	if len(res.Errors) > 0 {
		b.Fatalf("load: %v", res.Errors)
	}
	return engine.NewSnapshot(res.Rules), len(res.Rules)
}

// BenchmarkMutate evaluates mutate rules on the load test's 3.3 KB
// Deployment (through their autogen rules): a patchStrategicMerge with a
// conditional anchor per container, an add-if-not-present label, a
// patchesJson6902 with a variable, and a foreach over the containers.
func BenchmarkMutate(b *testing.B) {
	for _, tc := range []struct{ name, mutate string }{
		{"smp-anchor", `{patchStrategicMerge: {spec: {containers: [{(image): "*", imagePullPolicy: Always}]}}}`},
		{"smp-add-label", `{patchStrategicMerge: {metadata: {labels: {+(team): platform}}}}`},
		{"json6902", `{patchesJson6902: "- {op: add, path: /metadata/annotations/owner, value: '{{ request.object.metadata.name }}'}"}`}, // Deployments: no autogen with patchesJson6902
		{"foreach", `{foreach: [{list: request.object.spec.containers, patchStrategicMerge: {spec: {containers: [{name: "{{ element.name }}", imagePullPolicy: Always}]}}}]}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			snap := snapshot(b, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: bench}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod`+kindsFor(tc.name)+`]}}]}
    mutate: `+tc.mutate)
			eng := engine.New(engine.Options{NoTrace: true})
			req := engine.Request{Operation: rules.Create, Namespace: "bench", Name: "nginx-deployment",
				Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: testtool.BenchDeployment(b, false)}
			ctx := context.Background()
			d, err := eng.Evaluate(ctx, snap, req)
			if err != nil {
				b.Fatal(err)
			}
			if len(d.Errors) > 0 || len(d.Patch) == 0 {
				b.Fatalf("rule errors %v, patch %v", d.Errors, d.Patch)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := eng.Evaluate(ctx, snap, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// kindsFor: the kinds a benchmark's rule matches besides Pods.
func kindsFor(name string) string {
	if name == "json6902" {
		return ", Deployment"
	}
	return ""
}

// BenchmarkGenerate evaluates a generate rule with variables in its
// target and data (a quota per namespace) and a mutate of existing
// objects picking its targets by selector, per admission of the trigger.
func BenchmarkGenerate(b *testing.B) {
	for _, tc := range []struct{ name, rule string }{
		{"data", `generate: {apiVersion: v1, kind: ResourceQuota, name: "{{ request.object.metadata.name }}-quota", namespace: "{{ request.object.metadata.name }}", synchronize: true,
        data: {metadata: {labels: {team: "{{ request.object.metadata.name }}"}}, spec: {hard: {pods: "10", requests.cpu: "4", limits.memory: 16Gi}}}}`},
		{"mutate-existing", `mutate: {targets: [{apiVersion: v1, kind: ConfigMap, namespace: "{{ request.object.metadata.name }}", selector: {matchLabels: {stamp: "yes"}}}],
        patchStrategicMerge: {metadata: {annotations: {stamped-by: "{{ request.object.metadata.name }}"}}}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			snap := snapshot(b, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: bench}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Namespace]}}]}
    `+tc.rule)
			cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "settings", "namespace": "team", "resourceVersion": "7", "labels": map[string]any{"stamp": "yes"}}}
			eng := engine.New(engine.Options{NoTrace: true, Kinds: benchKinds{cm}})
			req := engine.Request{Operation: rules.Create, Name: "team", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"},
				Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team"}}}
			ctx := context.Background()
			d, err := eng.Evaluate(ctx, snap, req)
			if err != nil || len(d.Generated) != 1 || len(d.Errors) > 0 {
				b.Fatalf("%v %+v %v", err, d.Generated, d.Errors)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := eng.Evaluate(ctx, snap, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchKinds is a KindReader holding one object, listed for any query.
type benchKinds struct{ obj map[string]any }

func (k benchKinds) GetKind(context.Context, string, string, string, string) (map[string]any, error) {
	return k.obj, nil
}

func (k benchKinds) ListKind(context.Context, string, string, string, string, int) ([]map[string]any, error) {
	return []map[string]any{k.obj}, nil
}
