package modrule_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
)

// TestCriterionVerdicts checks that the trace says what decided each
// criterion, and which value did.
func TestCriterionVerdicts(t *testing.T) {
	obj := `
kind: Pod
metadata: {name: p, labels: {app: web, empty: ""}}
spec:
  hostNetwork: false
  containers: [{name: a, image: "nginx:1.25"}, {name: b, image: "busybox"}]
  nothing: null
  none: []
`
	tests := []struct {
		name      string
		criterion string
		held      bool
		verdict   modrule.Verdict
		at        int
	}{
		{"boolean decides alone", `{select: '$.spec.hostNetwork', matchValue: "false"}`, false, modrule.VerdictBoolean, 0},
		{"negated boolean", `{select: '$.spec.hostNetwork', negate: true}`, true, modrule.VerdictBoolean, 0},
		{"null", `{select: '$.spec.nothing'}`, false, modrule.VerdictNull, -1},
		{"nothing selected", `{select: '$.spec.missing'}`, false, modrule.VerdictNothing, -1},
		{"empty array", `{select: '$.spec.none'}`, false, modrule.VerdictNothing, -1},
		{"exists", `{select: '$.metadata.labels.app'}`, true, modrule.VerdictExists, -1},
		{"any: second value", `{select: '$.spec.containers[*].image', matchValue: busybox}`, true, modrule.VerdictAny, 1},
		{"none", `{select: '$.spec.containers[*].image', matchRegex: '^redis'}`, false, modrule.VerdictNone, -1},
		{"all", `{select: '$.spec.containers[*].name', matchFor: All, matchRegex: '^[ab]$'}`, true, modrule.VerdictAll, -1},
		{"not all: first failing", `{select: '$.spec.containers[*].image', matchFor: All, matchRegex: '^nginx'}`, false, modrule.VerdictNotAll, 1},
		{"error", `{select: '$.metadata.name && true'}`, false, modrule.VerdictError, -1},
	}
	eng := engine.New(engine.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r}
spec:
  type: Reject
  match:
    - `+tt.criterion)
			d := evaluate(t, eng, snap, engine.Request{Operation: rules.Create, Namespace: "ns", Object: object(t, obj)})
			if len(d.Trace) != 1 || modrule.TraceOf(&d.Trace[0]) == nil || len(modrule.TraceOf(&d.Trace[0]).Criteria) != 1 {
				t.Fatalf("trace: %+v", d.Trace)
			}
			c := modrule.TraceOf(&d.Trace[0]).Criteria[0]
			got := struct {
				Held    bool
				Verdict modrule.Verdict
				At      int
			}{c.Held, c.Verdict, c.At}
			want := got
			want.Held, want.Verdict, want.At = tt.held, tt.verdict, tt.at
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("criterion (-want +got):\n%s", diff)
			}
			if c.Verdict.String() == "unknown" {
				t.Errorf("verdict %d has no text", c.Verdict)
			}
		})
	}
}

// TestOpSources checks that each operation in the trace names its patch
// item and the keys its select captured, removals included (which the
// engine reorders).
func TestOpSources(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - op: add
      path: /metadata/labels/x
      value: label
    - op: remove
      select: '$.spec.containers[? @.image == "busybox"]'
      path: /spec/containers/#0
`)
	obj := object(t, `
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: a, image: busybox}, {name: b, image: nginx}, {name: c, image: busybox}]
`)
	d := evaluate(t, engine.New(engine.Options{}), snap, engine.Request{Operation: rules.Create, Namespace: "ns", Object: obj})
	tr := d.Trace[0]
	var paths []string
	for _, op := range tr.Ops {
		paths = append(paths, op.Path.String())
	}
	if diff := cmp.Diff([]string{"/metadata/labels/x", "/spec/containers/2", "/spec/containers/0"}, paths); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	want := []modrule.OpSource{
		{Field: "spec.patch[0]"},
		{Field: "spec.patch[1]", Keys: []any{2}},
		{Field: "spec.patch[1]", Keys: []any{0}},
	}
	if diff := cmp.Diff(want, modrule.TraceOf(&tr).OpSources); diff != "" {
		t.Errorf("op sources (-want +got):\n%s", diff)
	}
}
