package gatekeeper_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/gatekeeper"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

// pspRules reads Gatekeeper's pod-security-policy templates of the shared
// library with the first sample constraint of each; without CEL, each
// template's K8sNativeValidation code is left out (its Rego runs).
func pspRules(b *testing.B, withCEL bool) []engine.Rule {
	b.Helper()
	dir := filepath.Join(testtool.ConformanceDir(b, "gatekeeper-library", "MODWRIGHT_GATEKEEPER_LIBRARY_DIR", "library"), "library", "pod-security-policy")
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var paths []string
	for _, e := range ents {
		samples, _ := filepath.Glob(filepath.Join(dir, e.Name(), "samples", "*", "constraint.yaml"))
		sort.Strings(samples)
		if len(samples) == 0 {
			continue
		}
		paths = append(paths, filepath.Join(dir, e.Name(), "template.yaml"), samples[0])
	}
	docs, err := source.ReadPaths(paths, nil)
	if err != nil {
		b.Fatal(err)
	}
	if !withCEL {
		for i := range docs {
			if withoutCEL(&docs[i]) != nil {
				b.Fatal("cannot leave out the CEL of ", docs[i].Origin)
			}
		}
	}
	res := source.LoadRules(docs, kinds.NewRegistry(gatekeeper.NewKind()))
	if len(res.Errors) > 0 {
		b.Fatal(errors.Join(res.Errors...))
	}
	return res.Rules
}

// BenchmarkPSP reviews a Pod against Gatekeeper's 14 pod-security-policy
// templates and constraints, as the webhook does (no trace): "admitted",
// a Pod every constraint admits; "violating", one most deny. BENCHMARKS.md
// compares it with Gatekeeper's own client on the same files.
func BenchmarkPSP(b *testing.B) {
	pods := manifestsFile(b, filepath.Join(testtool.RepoRoot(b), "testdata", "bench", "gatekeeper-pods.yaml"))
	for _, mode := range []struct {
		name string
		cel  bool
	}{{"rego", false}, {"cel", true}} {
		rs := pspRules(b, mode.cel)
		snap := engine.NewSnapshot(rs)
		eng := engine.New(engine.Options{NoTrace: true})
		for i, name := range []string{"admitted", "violating"} {
			obj := pods[i].Object
			req := engine.Request{Operation: rules.Create, Namespace: "shop", Object: obj}
			b.Run(fmt.Sprintf("%s/constraints=%d/%s", mode.name, len(rs), name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					d, err := eng.Evaluate(context.Background(), snap, req)
					if err != nil {
						b.Fatal(err)
					}
					if (len(d.Rejections) == 0) != (name == "admitted") {
						b.Fatalf("%s: %d rejections: %s", name, len(d.Rejections), d.DenialMessage())
					}
				}
			})
		}
	}
}

func manifestsFile(b testing.TB, path string) []source.Document {
	b.Helper()
	docs, err := source.ReadPaths([]string{path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return docs
}

// withoutCEL leaves a template's K8sNativeValidation code entries out.
func withoutCEL(d *source.Document) error {
	if d.Kind() != "ConstraintTemplate" {
		return nil
	}
	spec, _ := d.Object["spec"].(map[string]any)
	targets, _ := spec["targets"].([]any)
	for _, tg := range targets {
		t, _ := tg.(map[string]any)
		code, _ := t["code"].([]any)
		kept := code[:0:0]
		for _, c := range code {
			if cm, _ := c.(map[string]any); cm["engine"] != "K8sNativeValidation" {
				kept = append(kept, c)
			}
		}
		if code != nil {
			t["code"] = kept
		}
	}
	b, err := value.AppendJSON(nil, d.Object)
	d.JSON = b
	return err
}

// BenchmarkConstraintsMemory compiles the library's required-labels
// template with constraints of its kind (each its own parameters) and
// reports the heap they hold (heap-bytes/constraint), how many run their
// Rego specialized, and the time to compile them all: "cel", the template
// as written (its K8sNativeValidation code runs), 1,000 constraints;
// "rego", its Rego (the code left out), 1,000 constraints (MaxSpecialized
// of them specialized) and MaxSpecialized (all specialized).
func BenchmarkConstraintsMemory(b *testing.B) {
	dir := filepath.Join(testtool.ConformanceDir(b, "gatekeeper-library", "MODWRIGHT_GATEKEEPER_LIBRARY_DIR", "library"), "library", "general", "requiredlabels")
	for _, bc := range []struct {
		name string
		cel  bool
		n    int
	}{{"cel", true, 1000}, {"rego", false, 1000}, {"rego", false, gatekeeper.MaxSpecialized}} {
		b.Run(fmt.Sprintf("%s/constraints=%d", bc.name, bc.n), func(b *testing.B) {
			docs := manifestsFile(b, filepath.Join(dir, "template.yaml"))
			if !bc.cel && withoutCEL(&docs[0]) != nil {
				b.Fatal("cannot leave out the CEL")
			}
			for i := range bc.n {
				text := fmt.Sprintf(`apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: labels-%d}
spec:
  match:
    kinds: [{apiGroups: [""], kinds: [Namespace]}]
    excludedNamespaces: ["kube-*"]
  parameters:
    message: "namespaces need an owner (%d)"
    labels: [{key: owner, allowedRegex: "^[a-z]+-%d$"}]
`, i, i, i)
				d, err := source.ParseManifest(fmt.Sprintf("c%d.yaml", i), []byte(text))
				if err != nil {
					b.Fatal(err)
				}
				docs = append(docs, d...)
			}
			b.ReportAllocs()
			var perConstraint float64
			specialized := 0
			for b.Loop() {
				before := heapInUse()
				res := source.LoadRules(docs, kinds.NewRegistry(gatekeeper.NewKind()))
				snap := engine.NewSnapshot(res.Rules)
				if len(res.Errors) > 0 || len(res.Rules) != bc.n {
					b.Fatalf("%d rules: %v", len(res.Rules), errors.Join(res.Errors...))
				}
				perConstraint = float64(heapInUse()-before) / float64(bc.n)
				specialized = 0
				for _, r := range res.Rules {
					if r.(*gatekeeper.Constraint).Specialized() {
						specialized++
					}
				}
				runtime.KeepAlive(snap)
			}
			b.ReportMetric(perConstraint, "heap-bytes/constraint")
			b.ReportMetric(float64(specialized), "specialized")
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkPSPEach reviews the admitted Pod against each of the 14
// pod-security-policy templates alone (with its first sample constraint,
// the templates as written): where a review's time goes, template by
// template. BENCHMARKS.md compares it with Gatekeeper's client
// (BenchmarkGatekeeperPSPEach, hack/gatekeeper-bench).
func BenchmarkPSPEach(b *testing.B) {
	pods := manifestsFile(b, filepath.Join(testtool.RepoRoot(b), "testdata", "bench", "gatekeeper-pods.yaml"))
	eng := engine.New(engine.Options{NoTrace: true})
	req := engine.Request{Operation: rules.Create, Namespace: "shop", Object: pods[0].Object}
	for _, r := range pspRules(b, true) {
		snap := engine.NewSnapshot([]engine.Rule{r})
		b.Run(r.Info().Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := eng.Evaluate(context.Background(), snap, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
