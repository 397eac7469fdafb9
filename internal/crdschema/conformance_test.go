package crdschema_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/google/go-cmp/cmp"
	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/testtool"
)

// validationCase is one case of ../shared/conformance/k8s-cel's
// validation-cases.json (its README says how to run them).
type validationCase struct {
	Name                string          `json:"name"`
	Schema              json.RawMessage `json:"schema"`
	IsResourceRoot      bool            `json:"isResourceRoot"`
	Object              json.RawMessage `json:"object"`
	OldObject           json.RawMessage `json:"oldObject"`
	Valid               bool            `json:"valid"`
	ExpectedErrors      []string        `json:"expectedErrors"`
	ExpectedErrorsMatch string          `json:"expectedErrorsMatch"`
	RecordedErrors      []struct {
		Type, Field, Detail string
	} `json:"recordedErrors"`
	CostBudget   int64  `json:"costBudget"`
	PerCallLimit uint64 `json:"perCallLimit"`
	RecordedCost int64  `json:"recordedCost"`
	CostAsserted bool   `json:"costAsserted"`
	Ratcheting   bool   `json:"ratcheting"`
	Note         string `json:"note"`
}

// deviation is a case modwright deliberately does not reproduce as
// recorded: why (docs/compatibility.md#kubernetes-cel), and what is checked
// instead (nil: nothing here).
type deviation struct {
	why   string
	check func(t *testing.T, errs field.ErrorList, cost int64)
}

func costIs(want int64) func(*testing.T, field.ErrorList, int64) {
	return func(t *testing.T, errs field.ErrorList, cost int64) {
		if len(errs) > 0 || cost != want {
			t.Errorf("errors %v, cost %d; Kubernetes 1.37 pins %d", errs, cost, want)
		}
	}
}

// validationDeviations: the cases recorded with apiextensions-apiserver
// v0.36.3 that Kubernetes 1.37 (our version) answers otherwise, a
// recording artifact, and the rules a CRD cannot carry.
var validationDeviations = map[string]deviation{
	// v0.37.2's own celcoststability_test.go pins 4 and 3.
	"TestCelCostStability/unicode_strings/!self.val1.startsWith('knight')": {"Kubernetes 1.37 pins the cost at 4 (1.36: 5)", costIs(4)},
	"TestCelCostStability/unicode_strings/self.val1.startsWith('Rook')":    {"Kubernetes 1.37 pins the cost at 3 (1.36: 4)", costIs(3)},
	"TestValidationExpressions/numbers/self.val3_==_340282346638528859811704183484516925440.000000_&&_340282346638528859811704183484516925440.000000_==_self.val3_&&_s": {
		"the recorded JSON writes float64(MaxFloat32) as 3.4028235e+38, another float64 (TestFloat32Max runs the test's value)", nil},
	"TestCELValidationContextCancellation/test_cel_validation_with_context_cancellation#2": {
		"Kubernetes 1.37 adds the context's error to the message; the test's own assertion holds",
		func(t *testing.T, errs field.ErrorList, _ int64) {
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), "operation interrupted") {
				t.Errorf("errors %v, want operation interrupted", errs)
			}
		}},
}

// unreachableNested: the cases whose rules sit in allOf. The test calls the
// package's unexported validator directly; from a CRD they cannot run: the
// API server refuses x-kubernetes-validations under allOf (ValidateStructural:
// "must be empty to be structural") and cel.NewValidator, which it uses,
// runs none that sit only there.
var unreachableNested = []string{
	"TestValidationExpressionsAtSchemaLevels/properties.allOf.additionalProperties.allOf.properties",
	"TestValidationExpressionsAtSchemaLevels/allOf.items.allOf",
	"TestValidationExpressionsAtSchemaLevels/allOf.properties",
	"TestValidationExpressionsAtSchemaLevels/allOf.additionalProperties",
	"TestValidationExpressionsAtSchemaLevels/allOf.items",
	"TestValidationExpressionsAtSchemaLevels/allOf_rule",
}

func init() {
	for _, n := range unreachableNested {
		validationDeviations[n] = deviation{"rules under allOf: a CRD cannot carry them (the API server refuses it) and cel.NewValidator does not run them",
			func(t *testing.T, errs field.ErrorList, _ int64) {
				if len(errs) > 0 {
					t.Errorf("errors %v: the API server's validator runs no rule under allOf", errs)
				}
			}}
	}
}

func decodeJSON(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	// As the API server decodes a request (integers int64, others
	// float64).
	var v any
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestConformanceValidation runs the 1,218 validation cases recorded from
// apiextensions-apiserver's own tests through ValidateRules.
func TestConformanceValidation(t *testing.T) {
	dir := testtool.ConformanceDir(t, "k8s-cel", "MODWRIGHT_K8S_CEL_DIR", "validation-cases.json")
	b, err := os.ReadFile(filepath.Join(dir, "validation-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		FieldPathRoot string           `json:"fieldPathRoot"`
		Cases         []validationCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 1218 {
		t.Fatalf("%d cases, want 1218", len(file.Cases))
	}
	passed, seen := 0, 0
	for i, c := range file.Cases {
		if _, ok := validationDeviations[c.Name]; ok {
			seen++
		}
		dev, isDev := validationDeviations[c.Name]
		ok := t.Run(c.Name, func(t *testing.T) {
			if isDev && dev.check == nil {
				t.Skipf("documented deviation: %s", dev.why)
			}
			ss, err := crdschema.Structural(c.Schema)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			obj := decodeJSON(t, c.Object)
			old := decodeJSON(t, c.OldObject)
			ctx := context.Background()
			if strings.Contains(c.Note, "already-cancelled") && strings.HasSuffix(c.Name, "#2") {
				// As the test: the second call's context is already over.
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				ctx = cctx
			}
			errs, left := crdschema.ValidateRules(ctx, ss, crdschema.RuleCheck{
				IsResourceRoot: c.IsResourceRoot, PerCallLimit: c.PerCallLimit, Budget: c.CostBudget,
				Ratcheting: c.Ratcheting, Path: field.NewPath(file.FieldPathRoot),
			}, obj, old)
			if isDev {
				t.Logf("documented deviation: %s", dev.why)
				dev.check(t, errs, c.CostBudget-left)
				return
			}
			checkErrors(t, c, errs)
			if c.CostAsserted && c.CostBudget-left != c.RecordedCost {
				t.Errorf("runtime cost %d, Kubernetes pins %d", c.CostBudget-left, c.RecordedCost)
			}
		})
		if ok && !isDev {
			passed++
		}
	}
	if seen != len(validationDeviations) {
		t.Errorf("%d documented deviations name no case", len(validationDeviations)-seen)
	}
	t.Logf("%d of %d validation cases pass as recorded; %d are documented deviations", passed, len(file.Cases), len(validationDeviations))
}

func checkErrors(t *testing.T, c validationCase, errs field.ErrorList) {
	t.Helper()
	switch {
	case c.Valid:
		if len(errs) > 0 {
			t.Errorf("want valid, got %v", errs)
		}
	case c.ExpectedErrorsMatch == "every-error-contains":
		if len(errs) == 0 {
			t.Errorf("want errors containing %q, got none", c.ExpectedErrors[0])
		}
		for _, e := range errs {
			if e.Type != field.ErrorTypeInvalid || !strings.Contains(e.Error(), c.ExpectedErrors[0]) {
				t.Errorf("error %q (%s) does not contain %q", e.Error(), e.Type, c.ExpectedErrors[0])
			}
		}
	case c.ExpectedErrorsMatch == "recorded-details":
		if len(errs) != len(c.RecordedErrors) {
			t.Fatalf("%d errors %v, Kubernetes gave %d: %+v", len(errs), errs, len(c.RecordedErrors), c.RecordedErrors)
		}
		// As a multiset: Kubernetes walks properties in map order.
		var got, want []string
		for _, e := range errs {
			got = append(got, string(e.Type)+" "+e.Field+" "+selfType.ReplaceAllString(e.Detail, "selfType"))
		}
		for _, e := range c.RecordedErrors {
			want = append(want, typeName(e.Type)+" "+e.Field+" "+selfType.ReplaceAllString(e.Detail, "selfType"))
		}
		slices.Sort(got)
		slices.Sort(want)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("-Kubernetes +modwright:\n%s", d)
		}
	default:
		t.Fatalf("unknown expectation %q", c.ExpectedErrorsMatch)
	}
}

// selfType is the random part of a schema's CEL type name in messages.
var selfType = regexp.MustCompile(`selfType\d+`)

// typeName maps the recorded Go constant names of field.ErrorType to
// their values.
func typeName(recorded string) string {
	switch recorded {
	case "FieldValueInvalid":
		return string(field.ErrorTypeInvalid)
	case "FieldValueRequired":
		return string(field.ErrorTypeRequired)
	case "FieldValueForbidden":
		return string(field.ErrorTypeForbidden)
	case "FieldValueTypeInvalid":
		return string(field.ErrorTypeTypeInvalid)
	case "InternalError":
		return string(field.ErrorTypeInternal)
	case "FieldValueTooLong":
		return string(field.ErrorTypeTooLong)
	case "FieldValueTooMany":
		return string(field.ErrorTypeTooMany)
	}
	return recorded
}

// TestFloat32Max is the float32 case with the value the Kubernetes test
// used, float64(math.MaxFloat32): the rule holds.
func TestFloat32Max(t *testing.T) {
	ss, err := crdschema.Structural([]byte(`{"type": "object", "properties": {"val3": {"type": "number", "format": "float"}, "val4": {"type": "number", "format": "float"}},
		"x-kubernetes-validations": [{"rule": "self.val3 == 340282346638528859811704183484516925440.000000 && 340282346638528859811704183484516925440.000000 == self.val3 && self.val3 == self.val4"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	v := float64(math.MaxFloat32)
	errs, _ := crdschema.ValidateRules(context.Background(), ss, crdschema.RuleCheck{IsResourceRoot: true, PerCallLimit: 1000000, Budget: 10000000},
		map[string]any{"val3": v, "val4": v}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}
