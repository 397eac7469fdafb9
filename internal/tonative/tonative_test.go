package tonative

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestGlob(t *testing.T) {
	for _, c := range []struct{ pattern, want, err string }{
		{pattern: "web", want: `s == "web"`},
		{pattern: "web-*", want: `s.matches("^web-[^/]*$")`},
		{pattern: "a.b?", want: `s.matches("^a\\.b[^/]$")`},
		{pattern: "[ab]*", err: "character classes"},
	} {
		got, err := glob(c.pattern, "s")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, want an error with %q", c.pattern, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %s, %v; want %s", c.pattern, got, err, c.want)
		}
	}
}

func TestSelector(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "c", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}},
		{Key: "d", Operator: metav1.LabelSelectorOpDoesNotExist},
	}}
	got, err := selector(sel, "l")
	if err != nil {
		t.Fatal(err)
	}
	want := `("a" in l && l["a"] == "1") && ("b" in l && l["b"] == "2") && (!("c" in l) || !(l["c"] in ["x"])) && (!("d" in l))`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

// TestCompile: a translated Policy's objects, a skipped one's reason.
func TestCompile(t *testing.T) {
	rule := func(doc string) Rule {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		return Rule{Kind: m["kind"].(string), Origin: "test", Object: m}
	}
	res := Compile([]Rule{
		rule(`{apiVersion: modwright.io/v1alpha1, kind: Policy, metadata: {name: p, namespace: team},
  spec: {match: {resources: [{kinds: [Deployment]}]}, validations: [{cel: "object.spec.replicas <= 3", message: few}]}}`),
		rule(`{apiVersion: modwright.io/v1alpha1, kind: ClusterPolicy, metadata: {name: c},
  spec: {validations: [{jmespath: "true"}]}}`),
	}, Options{})
	if len(res.Translated) != 1 || len(res.Skipped) != 1 {
		t.Fatalf("got %+v", res)
	}
	if got := res.Skipped[0].Reason; got != "spec.validations[0] is not CEL" {
		t.Errorf("reason %q", got)
	}
	objs := res.Translated[0].Objects
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o["kind"].(string)+" "+o["metadata"].(map[string]any)["name"].(string))
	}
	if diff := cmp.Diff([]string{"ValidatingAdmissionPolicy modwright.policy.team.p", "ValidatingAdmissionPolicyBinding modwright.policy.team.p"}, kinds); diff != "" {
		t.Error(diff)
	}
	b, _ := yaml.Marshal(objs[0]["spec"])
	for _, want := range []string{`kubernetes.io/metadata.name`, `request.kind.kind in ["Deployment"]`, `expression: object.spec.replicas <= 3`, `scope: Namespaced`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the policy lacks %s:\n%s", want, b)
		}
	}
}
