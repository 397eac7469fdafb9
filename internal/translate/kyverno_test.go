package translate

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKyverno: a ValidatingPolicy translates with its autogen policies and
// bindings; what the API server's CEL would read otherwise is skipped
// with the reason.
func TestKyverno(t *testing.T) {
	rule := func(kind, spec string) Rule {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte("apiVersion: policies.kyverno.io/v1\nkind: "+kind+"\nmetadata: {name: p, namespace: NS}\nspec:\n"+spec), &obj); err != nil {
			t.Fatal(err)
		}
		if kind != "NamespacedValidatingPolicy" {
			delete(obj["metadata"].(map[string]any), "namespace")
		}
		return Rule{Kind: kind, Origin: "test.yaml:1", Object: obj}
	}
	const pods = `  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
`
	for _, tc := range []struct {
		name, kind, spec string
		objects          []string // kind/name of the objects made
		skip             string
	}{
		{"pods, with autogen", "ValidatingPolicy", pods + "  validations: [{expression: \"object.metadata.?labels.team.orValue('') != ''\"}]\n",
			[]string{"ValidatingAdmissionPolicy/kyverno-vpol-p", "ValidatingAdmissionPolicyBinding/kyverno-vpol-p",
				"ValidatingAdmissionPolicy/kyverno-vpol-p-autogen", "ValidatingAdmissionPolicyBinding/kyverno-vpol-p-autogen",
				"ValidatingAdmissionPolicy/kyverno-vpol-p-autogen-cronjobs", "ValidatingAdmissionPolicyBinding/kyverno-vpol-p-autogen-cronjobs"}, ""},
		{"no autogen", "ValidatingPolicy", pods + "  autogen: {podControllers: {controllers: []}}\n  validations: [{expression: \"has(object.spec)\"}]\n",
			[]string{"ValidatingAdmissionPolicy/kyverno-vpol-p", "ValidatingAdmissionPolicyBinding/kyverno-vpol-p"}, ""},
		{"orValue on a value", "ValidatingPolicy", pods + "  validations: [{expression: \"object.spec.hostNetwork.orValue(false) == false\"}]\n", nil, "orValue on a value that may not be optional"},
		{"orValue on an optional variable", "ValidatingPolicy", pods + "  variables: [{name: h, expression: \"object.spec.?hostNetwork\"}]\n  validations: [{expression: \"variables.h.orValue(false) == false\"}]\n",
			[]string{"ValidatingAdmissionPolicy/kyverno-vpol-p"}, ""},
		{"exceptions", "ValidatingPolicy", pods + "  validations: [{expression: \"exceptions.allowedValues.size() >= 0\"}]\n", nil, "exceptions.allowedImages or allowedValues"},
		{"a library", "ValidatingPolicy", pods + "  validations: [{expression: \"object.spec.containers.all(c, isImage(c.image))\"}]\n", nil, "the API server would refuse the translation"},
		{"off at admission", "ValidatingPolicy", pods + "  evaluation: {admission: {enabled: false}}\n  validations: [{expression: \"true\"}]\n", nil, "off at admission"},
		{"namespaced", "NamespacedValidatingPolicy", pods + "  validations: [{expression: \"true\"}]\n", nil, "not translated to admission policies (yet)"},
		{"a MutatingPolicy", "MutatingPolicy", strings.Replace(pods, "  validationActions: [Deny]\n", "", 1) + "  mutations:\n  - patchType: JSONPatch\n    jsonPatch: {expression: \"[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 'b'}}]\"}\n",
			[]string{"MutatingAdmissionPolicy/kyverno-mpol-p", "MutatingAdmissionPolicyBinding/kyverno-mpol-p", "MutatingAdmissionPolicy/kyverno-mpol-p-autogen-cronjobs"}, ""},
		{"a MutatingPolicy mutating existing objects", "MutatingPolicy", strings.Replace(pods, "  validationActions: [Deny]\n", "", 1) + "  evaluation: {mutateExisting: {enabled: true}}\n  mutations:\n  - patchType: JSONPatch\n    jsonPatch: {expression: \"[]\"}\n", nil, "mutates existing objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Kyverno([]Rule{rule(tc.kind, tc.spec)})
			if tc.skip != "" {
				if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, tc.skip) {
					t.Fatalf("skipped %+v, want a reason saying %q", res.Skipped, tc.skip)
				}
				return
			}
			if len(res.Skipped) > 0 || len(res.Translated) != 1 {
				t.Fatalf("skipped %+v", res.Skipped)
			}
			var got []string
			for _, o := range res.Translated[0].Objects {
				got = append(got, o["kind"].(string)+"/"+o["metadata"].(map[string]any)["name"].(string))
			}
			for _, want := range tc.objects {
				if !strings.Contains(strings.Join(got, " "), want) {
					t.Errorf("objects %v, want %s", got, want)
				}
			}
		})
	}
}
