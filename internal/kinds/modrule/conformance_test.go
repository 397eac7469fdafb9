package modrule_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

// conformanceDir finds KubeMod's conformance data: $MODWRIGHT_CONFORMANCE_DIR,
// or shared/conformance/kubemod beside the repository. Absent, the tests
// skip, or fail under MODWRIGHT_REQUIRE_CONFORMANCE=1 (.ci/run).
func conformanceDir(t testing.TB) string {
	t.Helper()
	return testtool.ConformanceDir(t, "kubemod", "MODWRIGHT_CONFORMANCE_DIR", "patch-cases.json")
}

type patchCase struct {
	Name                    string          `json:"name"`
	ModRules                []string        `json:"modRules"`
	Resource                string          `json:"resource"`
	Namespace               string          `json:"namespace"`
	Operation               string          `json:"operation"`
	DefaultModRuleNamespace string          `json:"defaultModRuleNamespace"`
	ExpectedResource        json.RawMessage `json:"expectedResource"`
}

type rejectCase struct {
	Name                   string   `json:"name"`
	ModRules               []string `json:"modRules"`
	Resource               string   `json:"resource"`
	Namespace              string   `json:"namespace"`
	Operation              string   `json:"operation"`
	ForcedModRuleNamespace string   `json:"forcedModRuleNamespace"`
	ExpectedRejections     *string  `json:"expectedRejections"`
	ExpectedLoadError      *string  `json:"expectedLoadError"`
}

// deviations lists the cases where modwright deliberately differs from
// KubeMod, each with the reason (see docs/compatibility.md). A deviation is
// still checked: against modwright's own expectation.
var deviations = map[string]struct {
	reason string
	check  func(t *testing.T, d *engine.Decision)
}{}

func loadCaseRules(t *testing.T, dir string, files []string, ns string, force bool) (*engine.Snapshot, error) {
	t.Helper()
	var compiled []*modrule.Rule
	for _, f := range files {
		docs, err := source.ReadPaths([]string{filepath.Join(dir, f)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range docs {
			mr, err := modrule.Decode(&docs[i])
			if err != nil {
				t.Fatal(err)
			}
			if force || mr.Namespace == "" {
				mr.Namespace = ns
			}
			r, err := modrule.Compile(mr)
			if err != nil {
				return nil, err
			}
			compiled = append(compiled, r)
		}
	}
	return engine.NewSnapshot(asRules(compiled)), nil
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func TestKubeModConformancePatch(t *testing.T) {
	dir := conformanceDir(t)
	var cases []patchCase
	readJSON(t, filepath.Join(dir, "patch-cases.json"), &cases)
	if len(cases) != 33 {
		t.Fatalf("expected 33 patch cases, found %d", len(cases))
	}
	for i, c := range cases {
		t.Run(caseName(i, c.Name), func(t *testing.T) {
			snap, err := loadCaseRules(t, dir, c.ModRules, c.DefaultModRuleNamespace, false)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			obj := readResourceTB(t, filepath.Join(dir, c.Resource))
			orig := value.DeepCopy(obj)
			res := runBoth(t, snap, rules.Operation(c.Operation), c.Namespace, obj)
			if !value.Equal(obj, orig) {
				t.Fatal("the engine modified its input")
			}
			d := res.Decision
			for _, e := range d.Errors {
				t.Logf("rule error: %v", e)
			}
			if dev, ok := deviations[c.Name]; ok {
				t.Logf("documented deviation from KubeMod: %s", dev.reason)
				dev.check(t, d)
				return
			}
			want, err := value.Decode(c.ExpectedResource)
			if err != nil {
				t.Fatal(err)
			}
			if !value.Equal(d.Object, want) {
				t.Errorf("result differs from KubeMod's (-kubemod +modwright):\n%s", cmp.Diff(want, d.Object))
			}
			patched, err := patch.ApplyRFC6902(orig, d.Patch)
			if err != nil {
				t.Fatalf("the patch does not apply to the original: %v", err)
			}
			if !value.Equal(patched, d.Object) {
				t.Errorf("applying the patch to the original does not give the result:\n%s", cmp.Diff(d.Object, patched))
			}
		})
	}
}

func TestKubeModConformanceReject(t *testing.T) {
	dir := conformanceDir(t)
	var cases []rejectCase
	readJSON(t, filepath.Join(dir, "reject-cases.json"), &cases)
	if len(cases) != 9 {
		t.Fatalf("expected 9 reject cases, found %d", len(cases))
	}
	for i, c := range cases {
		t.Run(caseName(i, c.Name), func(t *testing.T) {
			snap, err := loadCaseRules(t, dir, c.ModRules, c.ForcedModRuleNamespace, true)
			if c.ExpectedLoadError != nil {
				if err == nil {
					t.Fatalf("loading succeeded; KubeMod failed with %q", *c.ExpectedLoadError)
				}
				if !strings.Contains(err.Error(), c.ForcedModRuleNamespace+"/") {
					t.Errorf("load error %q does not name the rule", err)
				}
				t.Logf("load error: %v (KubeMod: %s)", err, *c.ExpectedLoadError)
				return
			}
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			obj := readResourceTB(t, filepath.Join(dir, c.Resource))
			d := runBoth(t, snap, rules.Operation(c.Operation), c.Namespace, obj).Decision
			if got := d.DenialText(); c.ExpectedRejections == nil || got != *c.ExpectedRejections {
				t.Errorf("rejections = %q, want %q", got, deref(c.ExpectedRejections))
			}
		})
	}
}

// runBoth runs one object through both runner drivers, the engine and the
// dragnet webhook handler, requires identical results, and returns the
// engine's (with its Decision).
func runBoth(t *testing.T, snap *engine.Snapshot, op rules.Operation, ns string, obj any) *runner.Result {
	t.Helper()
	m, ok := obj.(map[string]any)
	if !ok {
		t.Fatalf("the resource is a %T, not an object", obj)
	}
	req := runner.Request{Operation: op, Namespace: ns, Object: m}
	ctx := context.Background()
	er, err := runner.NewEngine(snap, nil).Run(ctx, req)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	wr, err := runner.NewWebhook(snap, nil).Run(ctx, req)
	if err != nil {
		t.Fatalf("webhook: %v", err)
	}
	if diff := runner.Diff(er, wr); diff != "" {
		t.Errorf("the engine and the webhook disagree (engine != webhook): %s", diff)
	}
	return er
}

func caseName(i int, name string) string {
	return strings.ReplaceAll(name, " ", "_") + "#" + string(rune('a'+i/26)) + string(rune('a'+i%26))
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
