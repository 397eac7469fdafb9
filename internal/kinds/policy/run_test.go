package policy_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/policy"
	"github.com/modwright/modwright/internal/rules"
)

// TestRunReuse checks what the run reused from one policy to the next
// must keep apart: each policy's variables (same names, other values),
// variables read from a scoped validation (with self and oldSelf), and a
// variable whose value has no JSON form (a quantity) read as it is, shown
// as text in the trace.
func TestRunReuse(t *testing.T) {
	const policies = `
apiVersion: modwright.io/v1alpha1
kind: ModwrightPolicy
metadata: {name: a, namespace: team-a}
spec:
  variables:
  - name: limit
    cel: "3"
  - name: twice
    cel: "variables.limit * 2"
  validations:
  - cel: "object.spec.replicas <= variables.limit"
    messageExpression: "'a: ' + string(object.spec.replicas) + ' > ' + string(variables.limit)"
  - scope: "$.spec.template.spec.containers[*]"
    cel: "self.name.size() <= variables.twice"
    messageExpression: "'a: ' + self.name + ' is longer than ' + string(variables.twice)"
---
apiVersion: modwright.io/v1alpha1
kind: ModwrightPolicy
metadata: {name: b, namespace: team-a}
spec:
  variables:
  - name: limit
    cel: "10"
  - name: size
    cel: "quantity('1Gi')"
  validations:
  - cel: "object.spec.replicas <= variables.limit"
    message: "b: too many"
  - cel: "variables.size.isGreaterThan(quantity('1Mi'))"
    message: "b: the quantity"
`
	snap := load(t, policies)
	got, dec, err := run(t, snap, rules.Create, decode(t, deployment), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Errors) > 0 {
		t.Fatalf("rule errors: %v", dec.Errors)
	}
	want := outcome{Rejections: []string{"a: 5 > 3|Invalid|422", "a: sidecar is longer than 6|Invalid|422"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	var shown []any
	for _, tr := range dec.Trace {
		if d, ok := tr.Detail.(*policy.Trace); ok && tr.Rule == "team-a/b" {
			for _, s := range d.Variables {
				shown = append(shown, s.Value)
			}
		}
	}
	if len(shown) != 2 || shown[1] == nil {
		t.Fatalf("policy b's variables in the trace: %#v", shown)
	}
	if _, ok := shown[1].(string); !ok {
		t.Errorf("the quantity variable is shown as %T %#v, want its text", shown[1], shown[1])
	}
}

// TestVariableMemo: a variable every Policy defines alike is evaluated
// once per version of the object and its value shared, never between
// variables of the same text over different definitions; a Policy's trace
// and cost are the same whether it runs alone or after a Policy that
// evaluated its variables (the variables they read are read again).
func TestVariableMemo(t *testing.T) {
	const vars = `  variables:
  - name: spec
    cel: "object.spec.template.spec"
  - name: containers
    cel: "variables.spec.containers + (has(variables.spec.initContainers) ? variables.spec.initContainers : [])"
`
	pol := func(name, vars, check string) string {
		return "---\napiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata: {name: " + name + ", namespace: team-a}\nspec:\n" +
			vars + "  validations:\n  - cel: \"" + check + "\"\n    message: " + name + "\n"
	}
	// a reads spec, then containers; b only containers (which reads
	// spec); c's containers has a's text over another spec.
	a := pol("a", vars, "variables.spec.containers.size() == 2 && variables.containers.all(c, c.name.size() < 20)")
	b := pol("b", vars, "variables.containers.size() == 2")
	c := pol("c", strings.Replace(vars, `"object.spec.template.spec"`, `"{'containers': [object.spec.template.spec.containers[0]]}"`, 1),
		"variables.containers.size() == 1")
	traceOf := func(dec *engine.Decision, rule string) *policy.Trace {
		for _, tr := range dec.Trace {
			if d, ok := tr.Detail.(*policy.Trace); ok && tr.Rule == rule && tr.Phase == engine.Validate {
				return d
			}
		}
		t.Fatalf("no trace of %s", rule)
		return nil
	}
	decide := func(yaml string) *engine.Decision {
		got, dec, err := run(t, load(t, yaml), rules.Create, decode(t, deployment), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(dec.Errors) > 0 || len(got.Rejections) > 0 {
			t.Fatalf("errors %v, rejections %v", dec.Errors, got.Rejections)
		}
		return dec
	}
	all := decide(a + b + c)
	for _, name := range []string{"b", "c"} {
		alone := decide(map[string]string{"b": b, "c": c}[name])
		want, got := traceOf(alone, "team-a/"+name), traceOf(all, "team-a/"+name)
		if want.Cost == 0 {
			t.Fatalf("%s alone: no cost in the trace", name)
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y error) bool { return x == nil && y == nil })); diff != "" {
			t.Errorf("%s's trace after a (-alone +after a):\n%s", name, diff)
		}
	}
	// One engine, one object then another: nothing remembered of the
	// first (the engine hands the Policies' state on, reset).
	eng := engine.New(engine.Options{})
	snap := load(t, a+b+c)
	for i, want := range [][]string{nil, {"a", "b"}, nil} {
		obj := decode(t, deployment)
		if i == 1 {
			spec := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			spec["initContainers"] = []any{map[string]any{"name": "a-name-of-more-than-twenty", "image": "busybox"}}
		}
		dec, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team-a", Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range dec.Rejections {
			got = append(got, r.Message)
		}
		if !slices.Equal(got, want) {
			t.Errorf("evaluation %d: rejections %v, want %v", i, got, want)
		}
	}
}

// TestConditionMemo: a match condition many Policies share is evaluated
// again once a patch wrote what it reads, and only then: the validating
// Policies match after the mutating ones patched.
func TestConditionMemo(t *testing.T) {
	header := func(name, cond string) string {
		return "---\napiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata: {name: " + name + ", namespace: team-a}\nspec:\n" +
			"  matchConditions:\n  - name: c\n    cel: \"" + cond + "\"\n"
	}
	mutating := func(name, cond, label string) string {
		return header(name, cond) + "  mutations:\n  - jsonPatch: \"[JSONPatch{op: 'add', path: '/metadata/labels/" + label + "', value: 'x'}]\"\n"
	}
	validating := func(name, cond string) string {
		return header(name, cond) + "  validations:\n  - cel: \"false\"\n    message: " + name + "\n"
	}
	const team = "object.metadata.?labels.?team.orValue('') == 'x'"
	const replicas = "object.spec.replicas == 5"
	yaml := mutating("a", team, "seen-a") + // false: no team yet
		mutating("b", replicas, "team") + // sets it
		validating("v-team", team) + // true now
		validating("v-replicas", replicas) + // true, as for b: nothing wrote spec.replicas
		validating("v-labels", "object.metadata.labels.size() == 2") // app and team
	got, dec, err := run(t, load(t, yaml), rules.Create, decode(t, deployment), nil, nil)
	if err != nil || len(dec.Errors) > 0 {
		t.Fatalf("%v, %v", err, dec.Errors)
	}
	if !strings.Contains(got.Patch, "labels/team") || strings.Contains(got.Patch, "seen-a") {
		t.Errorf("patch %s, want the team label only", got.Patch)
	}
	want := []string{"v-labels|Invalid|422", "v-replicas|Invalid|422", "v-team|Invalid|422"}
	slices.Sort(got.Rejections)
	if !slices.Equal(got.Rejections, want) {
		t.Errorf("rejections %v, want %v", got.Rejections, want)
	}
}
