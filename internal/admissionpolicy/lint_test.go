package admissionpolicy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/admissionpolicy"
)

// TestLint: an invalid policy is an error at its field and column; a
// policy no binding names and a binding whose policy is absent are
// warnings; documents of other kinds are ignored.
func TestLint(t *testing.T) {
	policy := func(name, expr string) map[string]any {
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"},
					"operations": []any{"CREATE"}, "resources": []any{"configmaps"}}}},
				"validations": []any{map[string]any{"expression": expr}}}}
	}
	binding := func(name, policy string) map[string]any {
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"policyName": policy, "validationActions": []any{"Deny"}}}
	}
	docs := []admissionpolicy.Doc{
		{Origin: "a.yaml, document 1", Object: policy("bound", "true")},
		{Origin: "a.yaml, document 2", Object: binding("b", "bound")},
		{Origin: "a.yaml, document 3", Object: policy("lonely", "true")},
		{Origin: "a.yaml, document 4", Object: binding("orphan", "missing")},
		{Origin: "a.yaml, document 5", Object: policy("broken", "object.")},
		{Origin: "a.yaml, document 6", Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}},
	}
	var got []string
	for _, f := range admissionpolicy.Lint(docs) {
		got = append(got, f.Code+" "+f.Kind+" "+f.Name+" "+f.Field)
		if f.Code == admissionpolicy.CodeInvalid && f.Pos == 0 {
			t.Errorf("%s: no column", f.Message)
		}
	}
	want := []string{
		"E003 ValidatingAdmissionPolicy broken spec.validations[0].expression",
		"W302 ValidatingAdmissionPolicyBinding orphan spec.policyName",
		"W301 ValidatingAdmissionPolicy lonely ",
		"W301 ValidatingAdmissionPolicy broken ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
