package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// The kernel's own tests use rules of made-up kinds (fakeRule): what they
// check holds for every kind.

func setLabel(key, val string) func(h *Handle) error {
	return func(h *Handle) error {
		return h.Patch([]patch.Operation{{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", key}, Value: val}})
	}
}

func newRule(kind, ns, name string, tier int, phase Phase) *fakeRule {
	key := name
	if ns != "" {
		key = ns + "/" + name
	}
	return &fakeRule{info: RuleInfo{Kind: kind, Key: key, Namespace: ns, Name: name, Tier: tier, Phase: phase,
		Index: IndexKeys{AnyNamespace: true, Operations: OpSetOf(rules.Create, rules.Update, rules.Delete)}}}
}

func podObject() map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns", "labels": map[string]any{}}}
}

func evaluate(t *testing.T, rs []Rule, op rules.Operation) *Decision {
	t.Helper()
	d, err := New(Options{}).Evaluate(context.Background(), NewSnapshot(rs), Request{Operation: op, Namespace: "ns", Object: podObject()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestKernelOrder: tiers from the lowest up, inside a tier by kind then
// namespace/name; mutations of every kind before any validation, which sees
// the final object.
func TestKernelOrder(t *testing.T) {
	var order []string
	rec := func(r *fakeRule) *fakeRule {
		next := r.apply
		r.apply = func(h *Handle) error {
			order = append(order, r.info.Kind+":"+r.info.Key)
			if next != nil {
				return next(h)
			}
			return nil
		}
		return r
	}
	b := rec(newRule("B", "ns", "b", 0, Mutate))
	b.apply = setLabel("b", "1")
	b = rec(b)
	v := rec(newRule("A", "ns", "v", -10, Validate))
	sawB := false
	v.match = func(h *Handle) (bool, error) {
		_, sawB = h.Object().(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)["b"]
		return true, nil
	}
	rs := []Rule{
		v,
		b,
		rec(newRule("A", "ns", "z", 0, Mutate)),
		rec(newRule("A", "", "a", 0, Mutate)),
		rec(newRule("A", "ns", "early", -1, Mutate)),
	}
	d := evaluate(t, rs, rules.Create)
	want := []string{"A:ns/early", "A:a", "A:ns/z", "B:ns/b", "A:ns/v"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if !sawB {
		t.Error("the validation did not see the mutation of a later tier")
	}
	if diff := cmp.Diff([]RuleRef{{Kind: "B", Key: "ns/b"}}, d.Applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
}

// TestKernelAtomicAndDenial: a mutation that fails leaves nothing behind;
// the denial lists every rejecting rule of every kind.
func TestKernelAtomicAndDenial(t *testing.T) {
	bad := newRule("A", "ns", "bad", 0, Mutate)
	bad.apply = func(h *Handle) error {
		err := h.Patch([]patch.Operation{
			{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "x"}, Value: "1"},
			{Op: patch.Replace, Path: patch.Pointer{"spec", "missing"}, Value: "2"},
		})
		var pe *PatchError
		if !errors.As(err, &pe) || pe.Index != 1 {
			t.Errorf("Patch error = %v, want the second operation's", err)
		}
		h.Fail("spec.ops[1]", pe.Err)
		return nil
	}
	rejA := newRule("A", "ns", "no", 0, Validate)
	rejA.apply = func(h *Handle) error { h.Reject("not this", nil); return nil }
	rejB := newRule("B", "ns", "never", 0, Validate)
	rejB.apply = func(h *Handle) error { h.Reject("", nil); h.Warn("careful"); return nil }
	d := evaluate(t, []Rule{bad, rejA, rejB}, rules.Create)
	if d.Changed() {
		t.Errorf("a failed rule changed the object: %v", d.Patch)
	}
	if len(d.Errors) != 1 || d.Errors[0].Rule != "ns/bad" || d.Errors[0].Field != "spec.ops[1]" {
		t.Errorf("errors: %v", d.Errors)
	}
	want := `operation rejected by the following A(s): ns/no: "not this"; operation rejected by the following B(s): ns/never`
	if got := d.DenialMessage(); got != want {
		t.Errorf("DenialMessage() = %q, want %q", got, want)
	}
	if len(d.Warnings) != 1 || d.Warnings[0] != (Warning{Kind: "B", Rule: "ns/never", Message: "careful"}) {
		t.Errorf("warnings: %v", d.Warnings)
	}
}

// TestKernelUndecided: a validation that cannot be decided fails the
// evaluation (ErrUndecided), naming the rule and field; a mutation that
// cannot be matched fails alone; on DELETE mutations do not run.
func TestKernelUndecided(t *testing.T) {
	bound := errors.New("a bound")
	m := newRule("A", "ns", "m", 0, Mutate)
	m.match = func(*Handle) (bool, error) { return false, InField("spec.x", bound) }
	d := evaluate(t, []Rule{m}, rules.Create)
	if len(d.Errors) != 1 || d.Errors[0].Field != "spec.x" || !errors.Is(d.Errors[0], bound) {
		t.Errorf("errors: %v", d.Errors)
	}
	v := newRule("A", "ns", "v", 0, Validate)
	v.match = m.match
	_, err := New(Options{}).Evaluate(context.Background(), NewSnapshot([]Rule{v}), Request{Operation: rules.Create, Namespace: "ns", Object: podObject()})
	var re RuleError
	if !errors.Is(err, ErrUndecided) || !errors.As(err, &re) || re.Rule != "ns/v" || re.Field != "spec.x" {
		t.Errorf("err = %v, want ErrUndecided for ns/v spec.x", err)
	}
	ran := false
	del := newRule("A", "ns", "d", 0, Mutate)
	del.match = func(*Handle) (bool, error) { ran = true; return true, nil }
	d, err = New(Options{}).Evaluate(context.Background(), NewSnapshot([]Rule{del}), Request{Operation: rules.Delete, Namespace: "ns", OldObject: podObject()})
	if err != nil || ran || d.Trace[0].Outcome != Skipped {
		t.Errorf("a mutation ran on DELETE (err %v, trace %+v)", err, d.Trace)
	}
}

// TestSnapshotIndexKeys: the index keys and InScope decide the candidates.
func TestSnapshotIndexKeys(t *testing.T) {
	ns := newRule("A", "team", "local", 0, Mutate)
	ns.info.Index = IndexKeys{Namespace: "team", Operations: OpSetOf(rules.Create)}
	cl := newRule("A", "", "cluster", 0, Mutate)
	cl.info.Index = IndexKeys{Namespace: "", Operations: OpSetOf(rules.Create)}
	pinned := newRule("A", "", "pods", 0, Mutate)
	pinned.info.Index = IndexKeys{AnyNamespace: true, Operations: OpSetOf(rules.Create), Kinds: []string{"Pod"}}
	filt := newRule("B", "", "filtered", 0, Mutate)
	filt.info.Index = IndexKeys{AnyNamespace: true, Filtered: true, Operations: OpSetOf(rules.Create, rules.Update)}
	filt.scope = func(ns string) bool { return ns == "team" }
	broken := newRule("A", "", "broken", 0, Mutate)
	broken.info.Err = errors.New("does not compile")
	snap := NewSnapshot([]Rule{ns, cl, pinned, filt, broken})
	keys := func(rs []Rule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Info().Key)
		}
		return out
	}
	for _, tt := range []struct {
		ns, kind string
		op       rules.Operation
		want     []string
	}{
		{"team", "Pod", rules.Create, []string{"pods", "team/local", "filtered"}},
		{"team", "Job", rules.Update, []string{"filtered"}},
		{"other", "Pod", rules.Create, []string{"pods"}},
		{"", "Node", rules.Create, []string{"cluster"}},
		{"team", "Pod", rules.Delete, nil},
	} {
		if diff := cmp.Diff(tt.want, keys(snap.Candidates(tt.ns, tt.op, tt.kind, nil))); diff != "" {
			t.Errorf("%s %s in %q (-want +got):\n%s", tt.op, tt.kind, tt.ns, diff)
		}
	}
	if len(snap.Broken()) != 1 || snap.Len() != 5 {
		t.Errorf("broken %d, len %d", len(snap.Broken()), snap.Len())
	}
}
