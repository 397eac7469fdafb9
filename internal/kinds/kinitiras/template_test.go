package kinitiras_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/lang"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/rules"
)

// probes are the objects rendered programs are compared on: with and
// without each part a template reads.
func probes(t *testing.T) map[string]map[string]any {
	t.Helper()
	objs := map[string]string{
		"bare pod": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}}`,
		"full pod": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default",
			"annotations":{"add-by":"x","no-delete":"1","a":"b"},"labels":{"app":"web","kinitiras.kcloudlabs.io/webhook":"enabled"}},
			"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"2","memory":"1Gi","ephemeral-storage":"10Gi"},"requests":{"cpu":"1","memory":"1Gi"}}}],
			"tolerations":[{"key":"k","operator":"Exists"},{"key":"a","operator":"Equal","value":"b","effect":"NoSchedule"}],
			"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"x","operator":"In","values":["y"]}]}]},
				"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchExpressions":[{"key":"x","operator":"In","values":["y"]}]}}]},
				"podAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":3,"podAffinityTerm":{"topologyKey":"zone"}}]},
				"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"host"}]}}}}`,
		"empty lists pod": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{},"labels":{}},
			"spec":{"containers":[{"name":"c","resources":{}}],"tolerations":[],
			"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]},"preferredDuringSchedulingIgnoredDuringExecution":[]},
				"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[],"preferredDuringSchedulingIgnoredDuringExecution":[]},
				"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[],"preferredDuringSchedulingIgnoredDuringExecution":[]}}}}`,
		"deployment": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default","labels":{"app":"d"}},
			"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"500m","memory":"512Mi","ephemeral-storage":"1G"},"requests":{"cpu":"0"}}}]}}}}`,
		"bare deployment": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"c"}]}}}}`,
		"namespace":       `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n","annotations":{"no-delete":"true"}}}`,
	}
	out := map[string]map[string]any{}
	for k, v := range objs {
		out[k] = decodeObj(t, json.RawMessage(v))
	}
	return out
}

// run evaluates a rendered program on an object: its patches (or its
// validate result), or "error".
func run(t *testing.T, p *cuelang.Program, output string, obj map[string]any) string {
	t.Helper()
	data := map[string]any{"object": obj, "oldObject": obj, "extraParams": map[string]any{
		"http":          map[string]any{"body": map[string]any{"name": "from-http"}},
		"otherObject":   map[string]any{"metadata": map[string]any{"name": "other", "labels": map[string]any{"app": "other"}}},
		"otherObject_d": map[string]any{"metadata": map[string]any{"name": "other"}},
	}}
	out, err := p.Run(context.Background(), map[string]any{cuelang.VarData: data}, output)
	if err != nil {
		return "error"
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func compileCUE(t *testing.T, src string) *cuelang.Program {
	t.Helper()
	p, ds := cuelang.Language{}.CompileExpr(&lang.Env{Name: "t"}, src)
	if ds != nil {
		t.Fatalf("%v\n%s", ds, src)
	}
	return p
}

// renderDeviations are the render cases whose programs modwright renders
// differently from kinitiras on purpose (docs/compatibility.md).
var renderDeviations = map[string]string{
	"examples/templates/validate-pab.yaml:OnMutating":   "template type pab (a later kinitiras' podAvailableBadge) is refused: kinitiras v0.4.5 rendered it to nothing, a rule that silently never validates",
	"examples/templates/validate-pab.yaml:OnValidating": "template type pab is refused (see OnMutating)",
}

// TestConformanceRender: kinitiras' policy webhook cases. Each policy's
// templates are rendered by modwright and the program compared with the
// one kinitiras rendered, by what both give on every probe object (the
// text is modwright's own); the webhook's patches go to the same fields.
// A policy kinitiras' webhook refuses is refused.
func TestConformanceRender(t *testing.T) {
	var file struct {
		Cases []struct {
			Name                string            `json:"name"`
			Hook                string            `json:"hook"`
			Policy              json.RawMessage   `json:"policy"`
			Operation           string            `json:"operation"`
			ExpectedPatches     []json.RawMessage `json:"expectedPatches"`
			ExpectedRenderedCue map[string]string `json:"expectedRenderedCue"`
			ExpectedValid       *bool             `json:"expectedValid"`
			ExpectedError       bool              `json:"expectedError"`
		} `json:"cases"`
	}
	readCases(t, "render-cases.json", &file)
	objs := probes(t)
	names := make([]string, 0, len(objs))
	for n := range objs {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(file.Cases) != 41 {
		t.Errorf("%d cases, want 41", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			policy := decodeObj(t, c.Policy)
			if why, ok := renderDeviations[c.Name]; ok {
				if kinitiras.Check(policy) == nil {
					t.Fatalf("deviation %q: modwright accepts the policy", why)
				}
				t.Logf("documented deviation: %s", why)
				return
			}
			switch c.Hook {
			case "OnValidating":
				err := kinitiras.Check(policy)
				if c.Operation == "DELETE" {
					err = nil // kinitiras checks nothing on DELETE
				}
				if got := err != nil; got != c.ExpectedError {
					t.Fatalf("refused %v (%v), want %v", got, err, c.ExpectedError)
				}
				if err != nil && !errors.Is(err, rules.ErrInvalidRule) {
					t.Errorf("error %v is not a compile error", err)
				}
			case "OnMutating":
				var got []kinitiras.PatchOp
				if c.Operation != "DELETE" {
					var err error
					if got, err = kinitiras.Render(policy); err != nil {
						t.Fatal(err)
					}
				}
				var want []kinitiras.PatchOp
				for _, raw := range c.ExpectedPatches {
					var p kinitiras.PatchOp
					if err := json.Unmarshal(raw, &p); err != nil {
						t.Fatal(err)
					}
					want = append(want, p)
				}
				paths := func(ps []kinitiras.PatchOp) (out []string) {
					for _, p := range ps {
						out = append(out, p.Op+" "+p.Path)
					}
					return out
				}
				if d := cmp.Diff(paths(want), paths(got)); d != "" {
					t.Fatalf("patched fields (-kinitiras +modwright):\n%s", d)
				}
				for i, p := range got {
					src, ok := p.Value.(string)
					if !strings.HasSuffix(p.Path, "renderedCue") {
						if d := cmp.Diff(want[i].Value, p.Value); d != "" {
							t.Errorf("%s (-kinitiras +modwright):\n%s", p.Path, d)
						}
						continue
					}
					if !ok {
						t.Fatalf("%s: %T", p.Path, p.Value)
					}
					mine, theirs := compileCUE(t, src), compileCUE(t, c.ExpectedRenderedCue[p.Path])
					output := cuelang.OutputPatches
					if strings.Contains(p.Path, "validateRules") {
						output = cuelang.OutputValidate
					}
					for _, n := range names {
						g, w := run(t, mine, output, objs[n]), run(t, theirs, output, objs[n])
						if output == cuelang.OutputValidate {
							g, w = normValidate(g), normValidate(w)
						}
						if g != w {
							t.Errorf("%s on %s:\nkinitiras %s\nmodwright %s\n--- modwright's program:\n%s", p.Path, n, w, g, src)
						}
					}
				}
			default:
				t.Fatalf("hook %q", c.Hook)
			}
		})
	}
}

// normValidate: a validate result without valid is valid (kinitiras'
// default); {} and {"valid":true} are the same.
func normValidate(s string) string {
	if s == "error" {
		return s
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	valid, ok := v["valid"].(bool)
	if !ok {
		valid = true
	}
	reason, _ := v["reason"].(string)
	return fmt.Sprintf("valid=%v reason=%q", valid, reason)
}
