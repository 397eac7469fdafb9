package translate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sigs.k8s.io/yaml"
)

// TestKyverno: a ValidatingPolicy translates with its autogen policies and
// bindings; what the API server's CEL would read otherwise is skipped
// with the reason.
func TestKyverno(t *testing.T) {
	rule := func(kind, spec string) Rule {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte("apiVersion: policies.kyverno.io/v1\nkind: "+kind+"\nmetadata: {name: p, namespace: team}\nspec:\n"+spec), &obj); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(kind, "Namespaced") {
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
		{"namespaced", "NamespacedValidatingPolicy", pods + "  autogen: {podControllers: {controllers: []}}\n  validations: [{expression: \"true\"}]\n",
			[]string{"ValidatingAdmissionPolicy/kyverno-nvpol-team.p", "ValidatingAdmissionPolicyBinding/kyverno-nvpol-team.p"}, ""},
		{"namespaced, cluster-scoped rules", "NamespacedValidatingPolicy", strings.Replace(pods, "resources: [pods]", "resources: [pods], scope: Cluster", 1) + "  validations: [{expression: \"true\"}]\n",
			nil, "names cluster-scoped objects"},
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

// TestKyvernoNamespaced: a namespaced policy's admission policy matches
// only the namespaced objects of its namespace, as Kyverno's namespaced
// policies apply: every resource rule namespaced in scope, the policy's
// own namespace selector ANDed with the namespace's name.
func TestKyvernoNamespaced(t *testing.T) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(`apiVersion: policies.kyverno.io/v1
kind: NamespacedMutatingPolicy
metadata: {name: labels, namespace: team}
spec:
  autogen: {podControllers: {controllers: []}}
  matchConstraints:
    namespaceSelector: {matchLabels: {env: prod}}
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps], scope: "*"}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 'b'}}]"}
`), &obj); err != nil {
		t.Fatal(err)
	}
	res := Kyverno([]Rule{{Kind: "NamespacedMutatingPolicy", Origin: "test.yaml:1", Object: obj}})
	if len(res.Skipped) > 0 || len(res.Translated) != 1 {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	p := res.Translated[0].Objects[0]
	if p["kind"] != "MutatingAdmissionPolicy" || p["metadata"].(map[string]any)["name"] != "kyverno-nmpol-team.labels" {
		t.Fatalf("first object %v", p["metadata"])
	}
	mc := p["spec"].(map[string]any)["matchConstraints"]
	want := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"env": "prod"},
			"matchExpressions": []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{"team"}}}},
		"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}, "scope": "Namespaced"}},
	}
	if d := cmp.Diff(want, mc); d != "" {
		t.Errorf("matchConstraints (-want +got):\n%s", d)
	}
}

// TestExceptionRefs: the rules a CEL PolicyException names, as the
// webhook honours it (a namespaced policy from the exception's namespace
// only); the exception kinds of the kinds compiled.
func TestExceptionRefs(t *testing.T) {
	ex := map[string]any{"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
		"metadata": map[string]any{"name": "legacy", "namespace": "team"},
		"spec": map[string]any{"policyRefs": []any{
			map[string]any{"name": "a", "kind": "ValidatingPolicy"},
			map[string]any{"name": "b", "kind": "NamespacedMutatingPolicy"}}}}
	kinds := ExceptionKinds(KyvernoKinds())
	if len(kinds) != 1 || kinds[0].Kind != "PolicyException" {
		t.Fatalf("exception kinds %v", kinds)
	}
	want := []RuleRef{{Kind: "ValidatingPolicy", Key: "a"}, {Kind: "NamespacedMutatingPolicy", Key: "team/b"}}
	if diff := cmp.Diff(want, ExceptionRefs(kinds[0], ex)); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	if got := ExceptionKinds(Kinds()); got != nil {
		t.Errorf("the exception kinds of modwright's own kinds: %v", got)
	}
}
