package cel

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
)

// TestPatchPlan: a JSONPatch expression taken apart (patchPlan) reads the
// same operations, with the same errors and the same cost, as the whole
// expression evaluated and read by gatherJSONPatch, on a built-in kind and
// a custom one; the expressions that are not a list of constructions are
// not taken apart.
func TestPatchPlan(t *testing.T) {
	for _, tc := range []struct {
		src     string
		planned bool
	}{
		{`[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]`, true},
		{`[JSONPatch{op: 'add', path: '/metadata/labels/p', value: object.metadata.name + '-x'}, JSONPatch{op: 'test', path: '/spec/replicas', value: 3}, JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: 8080}]`, true},
		{`[JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('a/b~c'), value: 'seen'}]`, true},
		// A constant among values: a literal of the plan.
		{`[JSONPatch{op: 'add', path: '/metadata/labels/p', value: object.metadata.name + '-1'}, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('bench.modwright.io/p-1'), value: 'seen'}]`, true},
		// A comprehension is not folded: its list and a number make a list
		// the environment refuses.
		{`[JSONPatch{op: 'add', path: '/spec/' + jsonpatch.escapeKey('x/y'), value: object.spec.replicas}, JSONPatch{op: 'add', path: '/spec/z', value: [1, 2].map(x, x * 2)}]`, false},
		{`[JSONPatch{op: 'add', path: '/spec/x', value: string(object.spec.replicas)}, JSONPatch{op: 'add', path: '/spec/y', value: 'a' + string(1)}, JSONPatch{op: 'add', path: '/spec/z', value: {'k': [1, 2]}}]`, true},
		{`[JSONPatch{op: 'remove', path: '/metadata/labels/app'}]`, true},
		{`[JSONPatch{op: 'test', path: '/metadata/labels/app'}]`, true},
		{`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/-', value: {'name': 'c', 'image': 'i'}}]`, true},
		{`[JSONPatch{op: 'add', path: '/metadata/labels/n', value: string(object.spec.template.spec.containers.filter(c, c.name == 'nginx').size())}]`, true},
		{`[JSONPatch{op: 'add', path: '/metadata/labels/x', value: object.metadata.missing}]`, true},
		{`[JSONPatch{op: 'add', path: '/x', value: object.nope1}, JSONPatch{op: 'add', path: '/y', value: object.nope2}]`, true},
		{`[JSONPatch{op: 'add', path: '/metadata/labels/x', value: null}]`, true},
		{`[JSONPatch{op: 'add', path: '/spec/x', value: 0.0 / 0.0}]`, true},
		{`[JSONPatch{op: 'add', path: '/spec/x', value: [1, 2, 3]}, JSONPatch{op: 'add', path: '/spec/y', value: [4]}]`, true},
		{`[JSONPatch{op: 'add', path: '/spec/y', value: b'xy'}]`, true},
		{`[JSONPatch{op: 'add', path: '/spec/z', value: duration('1s')}]`, true},
		{`[JSONPatch{op: 'add', path: '/spec/x', value: [object.spec.replicas, object.spec.replicas]}]`, true},
		{`[JSONPatch{op: 'add', path: '/spec/y', value: {'a': object.metadata.name}}]`, true},
		// Values of different types make a list the environment refuses
		// (its aggregate literals are homogeneous): evaluated whole; but
		// constants are literals of the plan.
		{`[JSONPatch{op: 'add', path: '/spec/x', value: [1, 2, 3]}, JSONPatch{op: 'add', path: '/spec/y', value: {'a': 1}}]`, true},
		{`[JSONPatch{op: 'add', path: '/spec/x', value: [object.spec.replicas]}, JSONPatch{op: 'add', path: '/spec/y', value: {'a': object.spec.replicas}}]`, false},
		{`[JSONPatch{op: 'add', path: '/metadata/labels/x', value: object.metadata.name}, JSONPatch{op: 'add', path: '/metadata/labels/' + string(object.metadata.name), value: 1}]`, false},
		{`[JSONPatch{op: 'add', path: '/spec/' + 'x', value: string(2)}]`, true},
		{`[JSONPatch{op: 'move', from: '/metadata/labels/app', path: '/metadata/labels/moved'}]`, true},
		{`[JSONPatch{op: object.metadata.name == 'web' ? 'add' : 'replace', path: '/metadata/labels/x', value: 'y'}]`, true},
		{`[JSONPatch{op: 'add', path: 'not a pointer', value: 'y'}]`, true},
		// A path of type dyn (string + dyn): evaluated whole.
		{`[JSONPatch{op: 'add', path: '/metadata/labels/x', value: object.metadata.name}, JSONPatch{op: 'add', path: '/metadata/labels/' + object.metadata.name, value: 1}]`, false},
		{`[JSONPatch{op: 'add', path: '/metadata/labels/' + string(object.metadata.name), value: object.metadata.name + '-x'}]`, true},
		{`[JSONPatch{path: '/metadata/labels/x', value: 'y'}]`, true},
		{`[JSONPatch{op: 'add', path: dyn(object.metadata.name), value: 'y'}]`, false},
		{`object.spec.replicas < 3 ? [JSONPatch{op: 'replace', path: '/spec/replicas', value: 3}] : []`, false},
		{`[JSONPatch{op: 'add', path: '/x', value: 1}] + [JSONPatch{op: 'add', path: '/y', value: 2}]`, false},
		{`[JSONPatch{op: 'add', path: '/x', ?value: optional.of(1)}]`, false},
	} {
		for _, obj := range []string{deployment, widget} {
			m, ds := Language{}.CompileMutation(env(), JSONPatch, tc.src)
			if ds != nil {
				t.Fatalf("%s: %v", tc.src, ds)
			}
			if (m.prg.patch != nil) != tc.planned {
				t.Errorf("%s: taken apart %v, want %v", tc.src, m.prg.patch != nil, tc.planned)
			}
			if m.prg.patch == nil {
				continue
			}
			if m.prg.prg != nil {
				t.Errorf("%s: taken apart, and a program kept for the whole expression", tc.src)
			}
			in := &lang.Activation{Object: decode(t, obj).(map[string]any)}
			comparePlan(t, m, compileWhole(t, env(), tc.src), in, tc.src)
		}
	}
}

// compileWhole compiles src as a JSONPatch mutation not taken apart.
func compileWhole(t *testing.T, e *lang.Env, src string) *Mutation {
	t.Helper()
	w, ds := Language{}.compileMutation(e, JSONPatch, src, true)
	if ds != nil || w.prg.patch != nil {
		t.Fatalf("%s, whole: %v (taken apart: %v)", src, ds, w.prg.patch != nil)
	}
	return w
}

// comparePlan compares m's plan with the whole expression w over in.
func comparePlan(t *testing.T, m, w *Mutation, in *lang.Activation, src string) {
	t.Helper()
	ctx := context.Background()
	var whole jsonPatch
	out, wholeCost, wholeErr := w.prg.eval(ctx, in)
	if wholeErr == nil {
		if whole, wholeErr = gatherJSONPatch(out); wholeErr != nil {
			wholeErr = fmt.Errorf("cel: %w", wholeErr)
		}
	}
	planned, plannedCost, plannedErr := m.prg.patch.gather(ctx, in, nil)
	// Gathered into storage a caller keeps (PatchStorage), what earlier
	// patches left there changes nothing.
	st := &PatchStorage{natives: make([]patchOp, 3, 64), fastOps: make([]patch.Operation, 5, 64)}
	for i := range st.natives[:cap(st.natives)] {
		st.natives[:cap(st.natives)][i] = patchOp{op: "remove", path: "/stale", val: "x", hasVal: true}
	}
	for i := range st.fastOps[:cap(st.fastOps)] {
		st.fastOps[:cap(st.fastOps)][i] = patch.Operation{Op: patch.Remove, Path: patch.Pointer{"stale"}}
	}
	kept, _, keptErr := m.prg.patch.gather(ctx, in, st)
	if (keptErr == nil) != (plannedErr == nil) || plannedErr == nil && !reflect.DeepEqual(kept, planned) {
		t.Errorf("%s: gathered into kept storage %+v, %v; want %+v, %v", src, kept, keptErr, planned, plannedErr)
	}
	if plannedErr == nil {
		p := Patched{jp: kept}
		p.Recycle(st)
		if len(st.natives) != 0 || len(st.fastOps) != 0 || st.natives[:cap(st.natives)][0] != (patchOp{}) {
			t.Errorf("%s: Recycle left %+v", src, st)
		}
	}
	if (wholeErr == nil) != (plannedErr == nil) || wholeErr != nil && wholeErr.Error() != plannedErr.Error() {
		t.Errorf("%s: error %v, whole expression %v", src, plannedErr, wholeErr)
		return
	}
	if wholeErr != nil {
		return // the cost where it stopped: see patchPlan.gather
	}
	if plannedCost != wholeCost {
		t.Errorf("%s: cost %d, whole expression %d", src, plannedCost, wholeCost)
	}
	if d := cmp.Diff(whole, planned, cmp.AllowUnexported(jsonPatch{}, patchOp{}), cmpopts.IgnoreFields(jsonPatch{}, "memos")); d != "" {
		t.Errorf("%s: operations (-whole expression +taken apart):\n%s", src, d)
	}
	// The edits the fast path takes, the plan's remembering the Go types
	// (asked twice: the second time they are remembered).
	g := newGoTypes()
	wholeOps, wholeOK := (&Patched{jp: whole, obj: in.Object.(map[string]any), types: g}).Edits()
	for range 2 {
		ops, ok := (&Patched{jp: planned, obj: in.Object.(map[string]any), types: g}).Edits()
		if ok != wholeOK || !cmp.Equal(ops, wholeOps) {
			t.Errorf("%s: edits %v (%v), whole expression %v (%v)", src, ops, ok, wholeOps, wholeOK)
		}
	}
}

// TestPatchPlanBudget: with every budget from too small to enough, the
// values of a plan run out of budget exactly when the whole expression
// does, and cost what it costs.
func TestPatchPlanBudget(t *testing.T) {
	for _, src := range []string{
		// Two values evaluated as one list.
		`[JSONPatch{op: 'add', path: '/metadata/labels/a', value: object.spec.template.spec.containers.map(c, c.name).join(',')}, ` +
			`JSONPatch{op: 'add', path: '/metadata/labels/b', value: string(object.spec.replicas + 1)}]`,
		// A value and a constant, folded.
		`[JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('bench.modwright.io/p-1'), value: 'seen'}, ` +
			`JSONPatch{op: 'add', path: '/metadata/labels/a', value: object.spec.template.spec.containers.map(c, c.name).join(',')}]`,
		// One value evaluated alone.
		`[JSONPatch{op: 'test', path: '/metadata/name', value: 'web'}, ` +
			`JSONPatch{op: 'add', path: '/metadata/labels/a', value: object.spec.template.spec.containers.map(c, c.name).join(',')}]`,
	} {
		in := &lang.Activation{Object: decode(t, deployment).(map[string]any)}
		planned := 0
		for budget := int64(1); budget <= 200; budget++ {
			e := env()
			e.Limits.MaxWork = budget
			m, ds := Language{}.CompileMutation(e, JSONPatch, src)
			if ds != nil || m.prg.patch == nil {
				continue // refused by its estimate, or no room for the values
			}
			planned++
			comparePlan(t, m, compileWhole(t, e, src), in, src)
		}
		if planned < 50 {
			t.Errorf("%s: taken apart under %d budgets, want at least 50", src, planned)
		}
	}
}

// BenchmarkPatchPlan evaluates the load test's Policies' patches
// (test/load.PolicySet): a computed value, and with it a path that reads no
// variable (jsonpatch.escapeKey of a literal).
func BenchmarkPatchPlan(b *testing.B) {
	for _, bc := range []struct{ name, src string }{
		{"value", `[JSONPatch{op: 'add', path: '/metadata/labels/policy-00001', value: object.metadata.name + '-1'}, JSONPatch{op: 'add', path: '/data/policy-00001', value: 'enabled'}]`},
		{"value+constant-path", `[JSONPatch{op: 'add', path: '/metadata/labels/policy-00001', value: object.metadata.name + '-1'}, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('bench.modwright.io/policy-00001'), value: 'seen'}]`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, ds := Language{}.CompileMutation(env(), JSONPatch, bc.src)
			if ds != nil {
				b.Fatal(ds)
			}
			o := decode(b, deployment).(map[string]any)
			in := &lang.Activation{Object: o}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := m.EvalJSONPatch(context.Background(), in, o, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
