package crdschema_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/testtool"
)

type compileCase struct {
	Name         string          `json:"name"`
	Schema       json.RawMessage `json:"schema"`
	PerCallLimit uint64          `json:"perCallLimit"`
	Rules        []struct {
		Rule          string `json:"rule"`
		Valid         bool   `json:"valid"`
		ExpectedError *struct {
			Type, Detail string
		} `json:"expectedError"`
		MessageExpressionError *struct {
			Type, Detail string
		} `json:"messageExpressionError"`
		UsesOldSelf    bool   `json:"usesOldSelf"`
		MaxCost        uint64 `json:"maxCost"`
		MaxCardinality uint64 `json:"maxCardinality"`
	} `json:"rules"`
}

// compileDeviations: the case Kubernetes compiled with a test-only CEL
// library (fakeLib); without it, its rule is an undeclared reference.
var compileDeviations = map[string]string{
	"TestCelCompilation/unmodified_expression_may_use_CEL_environment_features_planned_to_be_added_in_future_releases": "compiled by the test with a test-only library (fakeLib) that no API server has",
}

// TestConformanceCompile compiles the 462 schemas' rules recorded from
// apiextensions-apiserver's own tests: validity, the error's type and
// text, transition rules, the estimated cost and cardinality.
func TestConformanceCompile(t *testing.T) {
	dir := testtool.ConformanceDir(t, "k8s-cel", "MODWRIGHT_K8S_CEL_DIR", "compile-cases.json")
	b, err := os.ReadFile(filepath.Join(dir, "compile-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []compileCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 462 {
		t.Fatalf("%d cases, want 462", len(file.Cases))
	}
	passed, rules := 0, 0
	for _, c := range file.Cases {
		rules += len(c.Rules)
		why, isDev := compileDeviations[c.Name]
		ok := t.Run(c.Name, func(t *testing.T) {
			if isDev {
				t.Skipf("documented deviation: %s", why)
			}
			ss, err := crdschema.Structural(c.Schema)
			if err != nil {
				t.Fatal(err)
			}
			results, err := crdschema.CompileRules(ss, false, c.PerCallLimit)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != len(c.Rules) {
				t.Fatalf("%d results for %d rules", len(results), len(c.Rules))
			}
			for i, want := range c.Rules {
				got := results[i]
				switch {
				case want.Valid && got.Error != nil:
					t.Errorf("rule %q: %v", want.Rule, got.Error)
				case !want.Valid && want.ExpectedError != nil:
					if got.Error == nil {
						t.Errorf("rule %q compiles; Kubernetes: %s", want.Rule, want.ExpectedError.Detail)
					} else if string(got.Error.Type) != want.ExpectedError.Type || selfType.ReplaceAllString(got.Error.Detail, "selfType") != selfType.ReplaceAllString(want.ExpectedError.Detail, "selfType") {
						t.Errorf("rule %q: %s %q; Kubernetes: %s %q", want.Rule, got.Error.Type, got.Error.Detail, want.ExpectedError.Type, want.ExpectedError.Detail)
					}
				}
				if want.MessageExpressionError != nil && (got.MessageExpressionError == nil || !strings.Contains(got.MessageExpressionError.Detail, firstLine(want.MessageExpressionError.Detail))) {
					t.Errorf("rule %q: messageExpression error %v; Kubernetes: %s", want.Rule, got.MessageExpressionError, want.MessageExpressionError.Detail)
				}
				if got.UsesOldSelf != want.UsesOldSelf || got.MaxCost != want.MaxCost || got.MaxCardinality != want.MaxCardinality {
					t.Errorf("rule %q: oldSelf %v, cost %d, cardinality %d; Kubernetes: %v, %d, %d", want.Rule,
						got.UsesOldSelf, got.MaxCost, got.MaxCardinality, want.UsesOldSelf, want.MaxCost, want.MaxCardinality)
				}
			}
		})
		if ok && !isDev {
			passed++
		}
	}
	t.Logf("%d of %d compile cases (%d rules) pass as recorded; %d are documented deviations", passed, len(file.Cases), rules, len(compileDeviations))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
