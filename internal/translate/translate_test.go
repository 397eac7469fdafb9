package translate

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
		rule(`{apiVersion: modwright.io/v1alpha1, kind: ModwrightPolicy, metadata: {name: p, namespace: team},
  spec: {match: {resources: [{kinds: [Deployment]}]}, validations: [{cel: "object.spec.replicas <= 3", message: few}]}}`),
		rule(`{apiVersion: modwright.io/v1alpha1, kind: ClusterModwrightPolicy, metadata: {name: c},
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
	if diff := cmp.Diff([]string{"ValidatingAdmissionPolicy modwright.modwrightpolicy.team.p", "ValidatingAdmissionPolicyBinding modwright.modwrightpolicy.team.p"}, kinds); diff != "" {
		t.Error(diff)
	}
	b, _ := yaml.Marshal(objs[0]["spec"])
	for _, want := range []string{`kubernetes.io/metadata.name`, `request.kind.kind in ["Deployment"]`, `expression: object.spec.replicas <= 3`, `scope: Namespaced`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the policy lacks %s:\n%s", want, b)
		}
	}
}

// TestModRuleReasons: what a ModRule cannot be translated for is said.
func TestModRuleReasons(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{`{type: Reject, match: [{select: "$.spec.containers[1:2]"}]}`, "slices, unions and recursive descent are not translated"},
		{`{type: Reject, match: [{select: "$.spec.containers[?(@.ports[*].containerPort == 80)]"}]}`, "a path selecting several values in a condition"},
		{`{type: Reject, match: [{select: "$.spec.containers[?(@.port + 1 > 80)]"}]}`, "arithmetic in a condition (it may fail)"},
		{`{type: Reject, match: [{select: "$.spec.containers[?(length(@.ports) > 1)]"}]}`, "the value of length() in a condition (it may fail)"},
		{`{type: Reject, match: [{select: "$.spec.replicas + 1"}]}`, `the operator "+" in a condition`},
		{`{type: Reject, match: [{select: "$.spec.x", matchRegex: "a"}]}`, "may match the JSON text of an object or a list"},
		{`{type: Reject, match: [{select: "$.kind"}], rejectMessage: "{{ .Target.kind }}"}`, "spec.rejectMessage is a Go template"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: add, path: /metadata/labels/a, value: "{{ .Namespace }}"}]}`, "spec.patch[0].value: a Go template"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: add, path: /spec/containers/0/image, value: x}]}`, "array positions are not translated"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: replace, path: /spec/tolerations/-, value: x}]}`, "replace at /-"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: remove, select: "$.spec.containers[?(@.port + 1 > 2)]", path: /spec/containers/#0}]}`, "arithmetic in a condition"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: add, path: /spec/tolerations/01, value: x}]}`, "array positions are not translated"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: add, select: "$.spec.containers[*].ports", path: /spec/containers/#0/ports/x, value: x}]}`, "unless the select ends with its only wildcard or filter"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: add, select: "$.spec.containers[*]", path: /spec/initContainers/#0/x, value: x}]}`, "does not name the selected member as #0"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: add, select: "$.spec.containers[*]", path: /spec/containers/#0, value: x}]}`, "adding the selected member itself"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: add, select: "$.spec.containers[*]", path: /spec/containers/#0/x, value: "{{ .Namespace }}"}]}`, "a Go template"},
		{`{type: Patch, match: [{select: "$.kind"}], patch: [{op: remove, select: "$.spec.containers[*]", path: /spec/containers/#0}, {op: add, path: /spec/containers/0/x, value: z}]}`, "array positions"},
		{`{type: Patch, match: [{select: "$.metadata.managedFields"}], patch: [{op: remove, path: /metadata/labels/a}]}`, "rules do not see metadata.managedFields"},
	} {
		var spec map[string]any
		if err := yaml.Unmarshal([]byte(c.spec), &spec); err != nil {
			t.Fatal(err)
		}
		r := Rule{Kind: "ModRule", Origin: "test", Object: map[string]any{"apiVersion": "api.kubemod.io/v1beta1", "kind": "ModRule",
			"metadata": map[string]any{"name": "r", "namespace": "default"}, "spec": spec}}
		res := Compile([]Rule{r}, Options{})
		if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, c.want) {
			t.Errorf("%s: got %+v, want a reason with %q", c.spec, res.Skipped, c.want)
		}
	}
}

// TestConflict: mutating rules commute when neither writes what the other
// reads or writes.
func TestConflict(t *testing.T) {
	fp := func(reads, writes []string) footprint {
		f := footprint{mutating: true}
		for _, r := range reads {
			f.reads = append(f.reads, strings.Split(r, "."))
		}
		for _, w := range writes {
			f.writes = append(f.writes, strings.Split(w, "."))
		}
		return f
	}
	for _, c := range []struct {
		a, b footprint
		want bool
	}{
		{fp([]string{"kind"}, []string{"metadata.labels.a"}), fp([]string{"kind"}, []string{"metadata.labels.b"}), false},
		{fp([]string{"metadata.labels"}, []string{"metadata.annotations.x"}), fp([]string{"kind"}, []string{"metadata.labels.b"}), true},
		{fp([]string{"kind"}, []string{"spec"}), fp([]string{"kind"}, []string{"spec.replicas"}), true},
		{fp([]string{"kind"}, []string{"a"}), footprint{mutating: true, readsAll: true, writesAll: true}, true},
	} {
		if got := conflict(c.a, c.b) != ""; got != c.want {
			t.Errorf("conflict(%+v, %+v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := conflict(c.b, c.a) != ""; got != c.want {
			t.Errorf("conflict(%+v, %+v) = %v, want %v (reversed)", c.b, c.a, got, c.want)
		}
	}
}

func TestCannotStartJSON(t *testing.T) {
	for re, want := range map[string]bool{
		"^nginx": true, "^[a-z0-9./-]+:latest$": true, "^(a|b)c": true, "(?i)^x": true,
		"nginx": false, "^.*x": false, "^[^a]": false, "^(a|{)": false, "^a?b": false, "^\\[": false,
	} {
		if got := cannotStartJSON(re); got != want {
			t.Errorf("cannotStartJSON(%q) = %v, want %v", re, got, want)
		}
	}
}

// TestScopedValidationReasons: a Policy's scoped validation translates on
// built-in kinds, and what it cannot be translated for is said.
func TestScopedValidationReasons(t *testing.T) {
	deployments := "match: {resources: [{apiGroups: [apps], kinds: [Deployment]}]}\n"
	for _, c := range []struct{ spec, want string }{
		{deployments + `validations: [{scope: "$.spec.template.spec.containers[*]", cel: "self.image != ''"}]`, ""},
		{deployments + `validations: [{scope: "$.spec.template.spec.containers[?(@.name == 'a')]", cel: "has(self.ports)", messageExpression: "self.name"}]`, ""},
		{`validations: [{scope: "$.spec.template.spec.containers[*]", cel: "self.image != ''"}]`, "scope on custom resources"},
		{"match: {resources: [{kinds: [Widget]}]}\n" + `validations: [{scope: "$.spec", cel: "has(self.x__dash__mode)"}]`, "scope on custom resources"},
		{deployments + `validations: [{scope: "$.spec.template.spec.containers[*]", cel: "oldSelf == null || self.image == oldSelf.image"}]`, ""},
		{deployments + `validations: [{scope: "$.spec.replicas", cel: "oldSelf == null || self >= oldSelf", messageExpression: "'was ' + string(oldSelf)"}]`, ""},
		{deployments + "validationActions: [Warn]\n" + `validations: [{scope: "$.spec.template.spec.containers[*]", cel: "self.image != ''"}]`, "with Warn or Audit"},
		{deployments + `validations: [{scope: "$..image", cel: "self != ''"}]`, "slices, unions and recursive descent"},
	} {
		var spec map[string]any
		if err := yaml.Unmarshal([]byte(c.spec), &spec); err != nil {
			t.Fatal(err)
		}
		r := Rule{Kind: "Policy", Origin: "test", Object: map[string]any{"apiVersion": "modwright.io/v1alpha1", "kind": "ModwrightPolicy",
			"metadata": map[string]any{"name": "p", "namespace": "default"}, "spec": spec}}
		res := Compile([]Rule{r}, Options{})
		switch {
		case c.want == "" && len(res.Skipped) > 0:
			t.Errorf("%s: not translated: %s", c.spec, res.Skipped[0].Reason)
		case c.want != "" && (len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, c.want)):
			t.Errorf("%s: got %+v, want a reason with %q", c.spec, res.Skipped, c.want)
		}
	}
}

// TestFootprintReads: what a ModRule's selects read, computed conditions
// and filters included ('@' in a filter is under the path it is on).
func TestFootprintReads(t *testing.T) {
	for _, c := range []struct {
		sel  string
		want [][]string
	}{
		{`$.metadata.labels.app`, [][]string{{"metadata", "labels", "app"}}},
		{`$.spec.replicas > 3 && isDefined($.metadata.annotations)`, [][]string{{"spec", "replicas"}, {"metadata", "annotations"}}},
		{`$.spec.containers[?(@.image == $.metadata.annotations.image)].name`, [][]string{{"metadata", "annotations", "image"}, {"spec", "containers"}}},
		{`$.spec.containers[0].image`, [][]string{{"spec", "containers"}}},
	} {
		mr := map[string]any{"apiVersion": "api.kubemod.io/v1beta1", "kind": "ModRule", "metadata": map[string]any{"name": "r", "namespace": "default"},
			"spec": map[string]any{"type": "Patch", "match": []any{map[string]any{"select": c.sel}},
				"patch": []any{map[string]any{"op": "add", "path": "/metadata/labels/x", "value": "y"}}}}
		f := footprintOf(Rule{Kind: "ModRule", Object: mr}, Options{})
		if f.readsAll || !cmp.Equal(f.reads, c.want) {
			t.Errorf("%s: reads %v (all %v), want %v", c.sel, f.reads, f.readsAll, c.want)
		}
	}
}
