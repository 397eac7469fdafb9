package policy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
