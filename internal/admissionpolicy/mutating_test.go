package admissionpolicy_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/admissionpolicy"
)

func loadFile(t testing.TB, path string) *admissionpolicy.Set {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	set := admissionpolicy.NewSet()
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if err := set.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	return set
}

func TestMutate(t *testing.T) {
	set := loadFile(t, "../../testdata/native/mutating.yaml")
	var objects []map[string]any
	for _, p := range []string{"team-label", "strict-mode", "defaults", "proxy-env", "reinvoke", "broken", "broken-lenient"} {
		objects = append(objects, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": p, "labels": map[string]any{"mutate": p}}})
	}
	objects = append(objects, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "defaults", "namespace": "params"},
		"data": map[string]any{"region": "eu", "tier": "gold"}})
	obj := func(kind, ns, name string, rest string) map[string]any {
		m := map[string]any{}
		if rest != "" {
			if err := yaml.Unmarshal([]byte(rest), &m); err != nil {
				t.Fatal(err)
			}
		}
		m["apiVersion"], m["kind"] = "v1", kind
		if kind == "Deployment" {
			m["apiVersion"] = "apps/v1"
		}
		md, _ := m["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
		}
		md["name"], md["namespace"] = name, ns
		m["metadata"] = md
		return m
	}
	deployment := `
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec:
      containers:
      - {name: app, image: app:1, env: [{name: A, value: "1"}]}
      - {name: side, image: side:1}
`
	for _, c := range []struct {
		name    string
		in      map[string]any
		between func(map[string]any) (map[string]any, error)
		want    map[string]any // nil: unchanged
		err     string
	}{
		{name: "JSONPatch without labels", in: obj("ConfigMap", "team-label", "a", ""),
			want: obj("ConfigMap", "team-label", "a", `metadata: {labels: {team: platform}}`)},
		{name: "JSONPatch with labels", in: obj("ConfigMap", "team-label", "a", `metadata: {labels: {x: z}}`),
			want: obj("ConfigMap", "team-label", "a", `metadata: {labels: {x: z, team: platform}}`)},
		{name: "not in a bound namespace", in: obj("ConfigMap", "elsewhere", "a", "")},
		{name: "match condition and variable", in: obj("Secret", "strict-mode", "x-a", `type: Opaque`),
			want: obj("Secret", "strict-mode", "x-a", `{type: Opaque, metadata: {annotations: {mode: sealed}}}`)},
		{name: "match condition false", in: obj("ConfigMap", "strict-mode", "a", "")},
		{name: "params", in: obj("ConfigMap", "defaults", "a", `data: {region: us, own: "1"}`),
			want: obj("ConfigMap", "defaults", "a", `data: {region: eu, tier: gold, own: "1"}`)},
		{name: "list merged by key", in: obj("Deployment", "proxy-env", "d", deployment),
			want: obj("Deployment", "proxy-env", "d", strings.ReplaceAll(strings.ReplaceAll(deployment,
				`env: [{name: A, value: "1"}]`, `env: [{name: A, value: "1"}, {name: HTTP_PROXY, value: "http://proxy:3128"}]`),
				`image: side:1}`, `image: side:1, env: [{name: HTTP_PROXY, value: "http://proxy:3128"}]}`))},
		{name: "reinvoked after a later policy", in: obj("ConfigMap", "reinvoke", "a", ""),
			want: obj("ConfigMap", "reinvoke", "a", `metadata: {labels: {b: "yes"}, annotations: {seen: "yes"}}`)},
		{name: "reinvoked after the rules", in: obj("ConfigMap", "reinvoke", "a", ""),
			between: func(m map[string]any) (map[string]any, error) {
				m["metadata"].(map[string]any)["labels"].(map[string]any)["b"] = "rule"
				return m, nil
			},
			want: obj("ConfigMap", "reinvoke", "a", `metadata: {labels: {b: rule}, annotations: {seen: rule}}`)},
		{name: "an error, failurePolicy Fail", in: obj("ConfigMap", "broken", "a", `data: {count: many}`),
			err: `policy 'broken' with binding 'broken' denied request: expression '[JSONPatch{op: "replace", path: "/data/count", value: string(int(object.data.count) * 2)}]' resulted in error: type conversion error from 'string' to 'int'`},
		{name: "an error, failurePolicy Ignore", in: obj("ConfigMap", "broken-lenient", "a", `data: {count: many}`)},
		{name: "no error", in: obj("ConfigMap", "broken", "a", `data: {count: "2"}`),
			want: obj("ConfigMap", "broken", "a", `data: {count: "4"}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := policyCopy(c.in)
			got, err := set.Mutate(context.Background(), admissionpolicy.Request{Operation: "CREATE", Object: c.in, Namespace: c.in["metadata"].(map[string]any)["namespace"].(string), Objects: objects}, c.between)
			if diff := cmp.Diff(in, c.in); diff != "" {
				t.Errorf("the input was changed (-before +after):\n%s", diff)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error with %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if want == nil {
				want = c.in
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func policyCopy(m map[string]any) map[string]any {
	b, _ := yaml.Marshal(m)
	var out map[string]any
	_ = yaml.Unmarshal(b, &out)
	return out
}

// TestAddRefusesInvalidExpressions: a policy whose expressions do not
// compile is refused as the API server refuses to store it, every field
// named.
func TestAddRefusesInvalidExpressions(t *testing.T) {
	data, err := os.ReadFile("../../testdata/native/invalid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"bad-validating": {
			`ValidatingAdmissionPolicy "bad-validating" is invalid: [`,
			`spec.validations[0].expression: Invalid value: "variables.nm.size()": must evaluate to bool`,
			`spec.validations[0].messageExpression: Invalid value: "1": must evaluate to string`,
			`spec.validations[1].expression: Invalid value: "object.metadata.name.startsWith(": compilation failed: ERROR: <input>:1:33: Syntax error`,
			`spec.auditAnnotations[0].valueExpression: Invalid value: "params.x": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'`,
		},
		"bad-mutating": {
			`MutatingAdmissionPolicy "bad-mutating" is invalid: [`,
			`spec.matchConditions[0].expression: Invalid value: "'x'": must evaluate to bool but got string`,
			`spec.mutations[0].jsonPatch.expression: Invalid value: "Object{}": must evaluate to list(JSONPatch) but got Object`,
			`spec.mutations[1].applyConfiguration.expression: Invalid value: "Object{": compilation failed: ERROR: <input>:1:8: Syntax error`,
		},
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		name := m["metadata"].(map[string]any)["name"].(string)
		t.Run(name, func(t *testing.T) {
			err := admissionpolicy.NewSet().Add(m)
			if !errors.Is(err, admissionpolicy.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if len(want[name]) == 0 {
				t.Fatal("no expectation")
			}
			for _, w := range want[name] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %s:\n%v", w, err)
				}
			}
		})
	}
}
