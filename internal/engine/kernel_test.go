package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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

	// Standalone rejections (Gatekeeper's) are given as they are, joined
	// by newlines, in the place of the first (in evaluation order).
	gk1 := newRule("K8sA", "", "c1", 0, Validate)
	gk1.apply = func(h *Handle) error { h.RejectStandalone("[c1] one"); h.RejectStandalone("[c1] two"); return nil }
	gk2 := newRule("K8sB", "", "c2", 0, Validate)
	gk2.apply = func(h *Handle) error { h.RejectStandalone("[c2] three"); return nil }
	d = evaluate(t, []Rule{gk1, rejA, gk2}, rules.Create)
	want = "operation rejected by the following A(s): ns/no: \"not this\"; [c1] one\n[c1] two\n[c2] three"
	if got := d.DenialMessage(); got != want {
		t.Errorf("DenialMessage() = %q, want %q", got, want)
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

// TestKernelBothPhases: a rule of both phases mutates in its tier and
// validates the final object, with a trace entry per phase.
func TestKernelBothPhases(t *testing.T) {
	both := newRule("P", "ns", "both", 0, Mutate|Validate)
	var phases []Phase
	both.apply = func(h *Handle) error {
		phases = append(phases, h.Phase())
		if h.Phase() == Mutate {
			return setLabel("m", "1")(h)
		}
		if _, ok := h.Object().(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)["late"]; !ok {
			t.Error("the validate phase did not see a later tier's mutation")
		}
		h.Deny("no", "Invalid", 422)
		return nil
	}
	late := newRule("A", "ns", "late", 5, Mutate)
	late.apply = setLabel("late", "1")
	d := evaluate(t, []Rule{both, late}, rules.Create)
	if diff := cmp.Diff([]Phase{Mutate, Validate}, phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	var got []string
	for _, tr := range d.Trace {
		got = append(got, tr.Rule+" "+tr.Phase.String()+" "+string(tr.Outcome))
	}
	want := []string{"ns/both mutate matched", "ns/late mutate matched", "ns/both validate matched"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
	if len(d.Rejections) != 1 || d.Rejections[0].Code != 422 || d.Rejections[0].Reason != "Invalid" {
		t.Errorf("rejections: %+v", d.Rejections)
	}
}

// TestKernelFailurePolicy: FailureFail turns any failure into
// ErrRuleFailed; FailureIgnore reports it and goes on, in either phase.
func TestKernelFailurePolicy(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		phase Phase
		fp    FailurePolicy
		how   string // match, apply, fail (Handle.Fail), matchfail (Handle.Fail in Match)
		want  error  // nil: reported in Decision.Errors
	}{
		{"mutate match fail", Mutate, FailureFail, "match", ErrRuleFailed},
		{"mutate apply fail", Mutate, FailureFail, "apply", ErrRuleFailed},
		{"mutate Handle.Fail fail", Mutate, FailureFail, "fail", ErrRuleFailed},
		{"mutate Handle.Fail in match fail", Mutate, FailureFail, "matchfail", ErrRuleFailed},
		{"mutate Handle.Fail in match default", Mutate, FailureDefault, "matchfail", nil},
		{"mutate apply ignore", Mutate, FailureIgnore, "apply", nil},
		{"mutate default", Mutate, FailureDefault, "apply", nil},
		{"validate match fail", Validate, FailureFail, "match", ErrRuleFailed},
		{"validate apply fail", Validate, FailureFail, "apply", ErrRuleFailed},
		{"validate Handle.Fail fail", Validate, FailureFail, "fail", ErrRuleFailed},
		{"validate Handle.Fail in match fail", Validate, FailureFail, "matchfail", ErrRuleFailed},
		{"validate Handle.Fail in match ignore", Validate, FailureIgnore, "matchfail", nil},
		{"validate apply ignore", Validate, FailureIgnore, "apply", nil},
		{"validate default", Validate, FailureDefault, "apply", ErrUndecided},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRule("P", "ns", "r", 0, tc.phase)
			r.info.FailurePolicy = tc.fp
			switch tc.how {
			case "match":
				r.match = func(*Handle) (bool, error) { return false, InField("spec.c", boom) }
			case "apply":
				r.apply = func(*Handle) error { return InField("spec.c", boom) }
			case "fail":
				r.apply = func(h *Handle) error { h.Fail("spec.c", boom); return nil }
			case "matchfail":
				r.match = func(h *Handle) (bool, error) { h.Fail("spec.c", boom); return true, nil }
			}
			after := newRule("P", "ns", "z-after", 0, tc.phase)
			ran := false
			after.apply = func(*Handle) error { ran = true; return nil }
			d, err := New(Options{}).Evaluate(context.Background(), NewSnapshot([]Rule{r, after}), Request{Operation: rules.Create, Namespace: "ns", Object: podObject()})
			if tc.want != nil {
				var re RuleError
				if !errors.Is(err, tc.want) || !errors.Is(err, boom) || !errors.As(err, &re) || re.Field != "spec.c" || re.Rule != "ns/r" {
					t.Fatalf("err = %v, want %v naming ns/r spec.c", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Errors) != 1 || !errors.Is(d.Errors[0], boom) || !ran {
				t.Errorf("errors %v, later rule ran %v", d.Errors, ran)
			}
		})
	}
}

// TestKernelAnnotate: audit annotations are collected in order.
func TestKernelAnnotate(t *testing.T) {
	r := newRule("P", "ns", "a", 0, Validate)
	r.apply = func(h *Handle) error { h.Annotate("k", "v"); h.Annotate("k2", "v2"); return nil }
	d := evaluate(t, []Rule{r}, rules.Create)
	want := []AuditAnnotation{{Kind: "P", Rule: "ns/a", Key: "k", Value: "v"}, {Kind: "P", Rule: "ns/a", Key: "k2", Value: "v2"}}
	if diff := cmp.Diff(want, d.AuditAnnotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// TestKernelBackground: in a background scan no failure ends the
// evaluation, whatever the rule's failure policy: each is recorded, and
// the rules after it still run.
func TestKernelBackground(t *testing.T) {
	bound := errors.New("a bound")
	undecided := newRule("A", "ns", "undecided", 0, Validate)
	undecided.match = func(*Handle) (bool, error) { return false, InField("spec.x", bound) }
	failing := newRule("A", "ns", "failing", 0, Validate)
	failing.info.FailurePolicy = FailureFail
	failing.apply = func(h *Handle) error { h.Fail("spec.y", bound); return nil }
	after := newRule("A", "ns", "after", 0, Validate)
	after.apply = func(h *Handle) error { h.Reject("no", nil); return nil }
	rs := []Rule{undecided, failing, after}
	if _, err := New(Options{}).Evaluate(context.Background(), NewSnapshot(rs), Request{Operation: rules.Create, Namespace: "ns", Object: podObject()}); !errors.Is(err, ErrRuleFailed) {
		t.Fatalf("at admission: err = %v, want ErrRuleFailed", err)
	}
	d, err := New(Options{}).Evaluate(context.Background(), NewSnapshot(rs), Request{Operation: rules.Create, Namespace: "ns", Object: podObject(), Background: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range d.Trace {
		got = append(got, tr.Rule+"="+string(tr.Outcome))
	}
	if diff := cmp.Diff([]string{"ns/after=matched", "ns/failing=failed", "ns/undecided=failed"}, got); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
	if len(d.Errors) != 2 || len(d.Rejections) != 1 {
		t.Errorf("errors %v, rejections %v: want 2 and 1", d.Errors, d.Rejections)
	}
}

// TestKernelConverge: Converge rules are applied again, in order, each
// matched against the object as it is, until a pass changes nothing; when
// they still change it after one more pass than they are, the last fails
// with ErrNotConverging. Other rules run once.
func TestKernelConverge(t *testing.T) {
	labels := func(h *Handle) map[string]any {
		obj, _ := h.Object().(map[string]any)
		md, _ := obj["metadata"].(map[string]any)
		l, _ := md["labels"].(map[string]any)
		return l
	}
	// a sets a once b is there; b sets b: a converges in the second pass.
	a := newRule("G", "", "a", 0, Mutate)
	a.info.Converge = true
	a.match = func(h *Handle) (bool, error) { _, ok := labels(h)["b"]; return ok, nil }
	a.apply = func(h *Handle) error {
		if _, ok := labels(h)["a"]; ok {
			return nil
		}
		return setLabel("a", "1")(h)
	}
	b := newRule("G", "", "b", 0, Mutate)
	b.info.Converge = true
	b.apply = func(h *Handle) error {
		if _, ok := labels(h)["b"]; ok {
			return nil
		}
		return setLabel("b", "1")(h)
	}
	once := 0
	other := newRule("H", "", "other", 0, Mutate)
	other.apply = func(h *Handle) error { once++; return nil }
	d := evaluate(t, []Rule{a, b, other}, rules.Create)
	got := d.Object.(map[string]any)["metadata"].(map[string]any)["labels"]
	if diff := cmp.Diff(map[string]any{"a": "1", "b": "1"}, got); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if once != 1 || len(d.Errors) != 0 {
		t.Errorf("the other rule ran %d times; errors %v", once, d.Errors)
	}
	if diff := cmp.Diff([]RuleRef{{Kind: "G", Key: "b"}, {Kind: "G", Key: "a"}}, d.Applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}

	// Each is matched when its turn comes, against the object as the ones
	// before it left it: y sees x's label in the first pass, and the
	// second pass changes nothing.
	x := newRule("G", "", "x", 0, Mutate)
	x.info.Converge = true
	x.apply = func(h *Handle) error {
		if _, ok := labels(h)["x"]; ok {
			return nil
		}
		return setLabel("x", "1")(h)
	}
	yMatches := 0
	y := newRule("G", "", "y", 0, Mutate)
	y.info.Converge = true
	y.match = func(h *Handle) (bool, error) { yMatches++; _, ok := labels(h)["x"]; return ok, nil }
	y.apply = func(h *Handle) error {
		if _, ok := labels(h)["y"]; ok {
			return nil
		}
		return setLabel("y", "1")(h)
	}
	d = evaluate(t, []Rule{x, y}, rules.Create)
	got = d.Object.(map[string]any)["metadata"].(map[string]any)["labels"]
	if diff := cmp.Diff(map[string]any{"x": "1", "y": "1"}, got); diff != "" || yMatches != 2 {
		t.Errorf("y matched %d times, want 2 (two passes); labels (-want +got):\n%s", yMatches, diff)
	}

	// A rule that changes the object on every pass: 2 passes for 1 rule.
	n := 0
	c := newRule("G", "", "c", 0, Mutate)
	c.info.Converge = true
	c.apply = func(h *Handle) error { n++; return setLabel("n", string(rune('0'+n)))(h) }
	d = evaluate(t, []Rule{c}, rules.Create)
	if n != 2 || len(d.Errors) != 1 || !errors.Is(d.Errors[0].Err, ErrNotConverging) || d.Errors[0].Rule != "c" {
		t.Errorf("applied %d times; errors %v", n, d.Errors)
	}
}

// TestKernelPayloads: a JSON payload reaches the rules of payloads
// (IndexKeys.Payloads) alone, whatever its members say (a "kind" member
// is no kind), and those rules never see a Kubernetes object; a payload
// with an object's attributes is an invalid request.
func TestKernelPayloads(t *testing.T) {
	var seen []string
	rec := func(r *fakeRule) *fakeRule {
		r.apply = func(h *Handle) error {
			seen = append(seen, r.info.Key)
			if h.Request().Payload != (r.info.Index.Payloads) {
				t.Errorf("%s saw Payload %v", r.info.Key, h.Request().Payload)
			}
			return nil
		}
		return r
	}
	anyKind := rec(newRule("A", "", "any-kind", 0, Validate))
	payload := rec(newRule("A", "", "payload", 0, Validate))
	payload.info.Index = IndexKeys{Payloads: true}
	second := rec(newRule("B", "", "payload-2", 0, Validate))
	second.info.Index = IndexKeys{Payloads: true}
	snap := NewSnapshot([]Rule{anyKind, payload, second})
	eng := New(Options{})
	doc := map[string]any{"kind": "Pod", "jobs": map[string]any{}}
	if _, err := eng.Evaluate(context.Background(), snap, Request{Operation: rules.Create, Object: doc, Payload: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"payload", "payload-2"}, seen); diff != "" {
		t.Errorf("a payload (-want +got):\n%s", diff)
	}
	seen = nil
	if _, err := eng.Evaluate(context.Background(), snap, Request{Operation: rules.Create, Namespace: "ns", Object: podObject()}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"any-kind"}, seen); diff != "" {
		t.Errorf("an object (-want +got):\n%s", diff)
	}
	for _, bad := range []Request{
		{Operation: rules.Update, Object: doc, Payload: true},
		{Operation: rules.Create, Namespace: "ns", Object: doc, Payload: true},
		{Operation: rules.Create, Kind: GroupVersionKind{Kind: "Pod"}, Object: doc, Payload: true},
	} {
		if _, err := eng.Evaluate(context.Background(), snap, bad); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: err %v, want ErrInvalidRequest", bad, err)
		}
	}
}

// TestKernelPatchRFC6902: PatchRFC6902 applies RFC 6902's semantics (an
// add under a missing parent fails, and the operations before it are
// undone) where Patch applies KubeMod's (the parent is made); a
// successful one is a rule's change like any other.
func TestKernelPatchRFC6902(t *testing.T) {
	ops := []patch.Operation{
		{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "x"}, Value: "1"},
		{Op: patch.Add, Path: patch.Pointer{"spec", "missing", "deeper"}, Value: "2"},
	}
	strict := newRule("A", "ns", "strict", 0, Mutate)
	strict.apply = func(h *Handle) error {
		var pe *PatchError
		if err := h.PatchRFC6902(ops); !errors.As(err, &pe) || pe.Index != 1 || !errors.Is(err, patch.ErrPathNotFound) {
			t.Errorf("PatchRFC6902 error = %v, want the second operation's missing path", err)
		}
		return h.PatchRFC6902(ops[:1])
	}
	d := evaluate(t, []Rule{strict}, rules.Create)
	want := []patch.Operation{{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "x"}, Value: "1"}}
	if diff := cmp.Diff(want, d.Patch); diff != "" || len(d.Errors) != 0 {
		t.Errorf("patch (-want +got):\n%s\nerrors: %v", diff, d.Errors)
	}
	lenient := newRule("A", "ns", "lenient", 0, Mutate)
	lenient.apply = func(h *Handle) error { return h.Patch(ops) }
	if d := evaluate(t, []Rule{lenient}, rules.Create); len(d.Patch) != 2 || len(d.Errors) != 0 {
		t.Errorf("Patch (KubeMod's): %v, errors %v; want both operations applied", d.Patch, d.Errors)
	}
}

// TestKernelPatchRFC6902LastApplied: the last-applied configuration is
// given the difference a standard JSON Patch made, not its operations (a
// replace with the value already there changes nothing in it), also when an
// earlier rule's write left the containers the patch changes owned by the
// document (changed in place: the difference needs them as they were).
func TestKernelPatchRFC6902LastApplied(t *testing.T) {
	obj := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "labels": map[string]any{"a": "1"},
			"annotations": map[string]any{LastAppliedAnnotation: `{"metadata":{"labels":{"a":"1"}},"spec":{"replicas":3}}`}},
		"spec": map[string]any{"replicas": int64(5)}}
	first := newRule("A", "ns", "first", 0, Mutate)
	first.apply = setLabel("b", "2")
	second := newRule("A", "ns", "second", 1, Mutate)
	second.apply = func(h *Handle) error {
		return h.PatchRFC6902([]patch.Operation{
			{Op: patch.Replace, Path: patch.Pointer{"spec", "replicas"}, Value: int64(5)},
			{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "c"}, Value: "3"},
			{Op: patch.Replace, Path: patch.Pointer{"metadata", "labels", "b"}, Value: "4"},
		})
	}
	d, err := New(Options{}).Evaluate(context.Background(), NewSnapshot([]Rule{first, second}), Request{Operation: rules.Create, Namespace: "ns", Object: obj})
	if err != nil || len(d.Errors) != 0 {
		t.Fatalf("Evaluate: %v, %v", err, d.Errors)
	}
	got, _ := lookupString(d.Object.(map[string]any), lastAppliedPath...)
	if want := `{"metadata":{"labels":{"a":"1","b":"4","c":"3"}},"spec":{"replicas":3}}`; got != want {
		t.Errorf("last-applied configuration %s, want %s", got, want)
	}
}

// TestKernelRecyclesDocs: an engine recycles its Docs between evaluations
// (patch.Doc.Reset); a decision's object is never changed by the
// evaluations after it, with or without a last-applied configuration.
func TestKernelRecyclesDocs(t *testing.T) {
	e := New(Options{NoTrace: true})
	r := newRule("A", "ns", "label", 0, Mutate)
	n := 0
	r.apply = func(h *Handle) error {
		n++
		return h.Patch([]patch.Operation{
			{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "run"}, Value: fmt.Sprint(n)},
			{Op: patch.Add, Path: patch.Pointer{"spec", "list", "-"}, Value: fmt.Sprint(n)},
		})
	}
	snap := NewSnapshot([]Rule{r})
	var decisions []*Decision
	var want []string
	for i := range 6 {
		obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns"}, "spec": map[string]any{"list": []any{"a"}}}
		if i%2 == 1 {
			obj["metadata"].(map[string]any)["annotations"] = map[string]any{LastAppliedAnnotation: `{"metadata":{"name":"p"},"spec":{"list":["a"]}}`}
		}
		d, err := e.Evaluate(context.Background(), snap, Request{Operation: rules.Create, Namespace: "ns", Object: obj})
		if err != nil || len(d.Errors) != 0 {
			t.Fatalf("evaluation %d: %v, %v", i, err, d.Errors)
		}
		b, _ := json.Marshal(d.Object)
		decisions, want = append(decisions, d), append(want, string(b))
	}
	for i, d := range decisions {
		if b, _ := json.Marshal(d.Object); string(b) != want[i] {
			t.Errorf("decision %d's object changed after it: %s, was %s", i, b, want[i])
		}
		if !strings.Contains(want[i], fmt.Sprintf(`"run":"%d"`, i+1)) || i%2 == 1 && !strings.Contains(want[i], fmt.Sprintf(`\"run\":\"%d\"`, i+1)) {
			t.Errorf("decision %d: %s", i, want[i])
		}
	}
}

// resetState is a kind state that resets itself (StateResetter): it
// counts the evaluations it served, and refuses to be kept once it saw
// three.
type resetState struct {
	seen   []string // the objects' names, of this evaluation only
	served int
}

func (s *resetState) ResetState() bool {
	clear(s.seen)
	s.seen = s.seen[:0]
	return s.served < 3
}

// TestRecycleStates: the states that reset themselves and agree are kept,
// in order, the others dropped and their slots cleared.
func TestRecycleStates(t *testing.T) {
	a, b, c := &resetState{seen: []string{"x"}}, &resetState{served: 3}, &resetState{served: 1}
	states := []kindState{{"a", a}, {"b", b}, {"plain", true}, {"c", c}}
	kept := recycleStates(states)
	if len(kept) != 2 || kept[0].state != a || kept[1].state != c || len(a.seen) != 0 {
		t.Errorf("kept %v (a's seen %v), want a and c, a reset", kept, a.seen)
	}
	if full := states[:cap(states)]; full[2].state != nil || full[3].state != nil {
		t.Errorf("dropped states still referenced: %v", full)
	}
}

// TestKernelRecyclesStates: through Evaluate, a state the engine hands to
// a later evaluation is reset, is not kept once it refuses, and a state
// that does not reset itself is never handed on.
func TestKernelRecyclesStates(t *testing.T) {
	e := New(Options{NoTrace: true})
	r := newRule("A", "ns", "label", 0, Validate)
	var served []int
	r.apply = func(h *Handle) error {
		slot := h.KindState()
		s, _ := (*slot).(*resetState)
		if s == nil {
			s = &resetState{}
			*slot = s
		}
		if len(s.seen) != 0 {
			t.Errorf("a recycled state kept %v", s.seen)
		}
		s.served++
		s.seen = append(s.seen, "p")
		served = append(served, s.served)
		if other := h.State("other"); *other != nil {
			t.Errorf("a state that does not reset itself was handed on: %v", *other)
		} else {
			*other = true
		}
		return nil
	}
	snap := NewSnapshot([]Rule{r})
	for range 20 {
		obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns"}}
		if _, err := e.Evaluate(context.Background(), snap, Request{Operation: rules.Create, Namespace: "ns", Object: obj}); err != nil {
			t.Fatal(err)
		}
	}
	if slices.Max(served) > 3 {
		t.Errorf("evaluations served by one state: %v, never more than 3 (it refuses then)", served)
	}
}

// TestObjectUnchanged: what a rule computed from some paths of the object
// holds while later patches write elsewhere; a write on, above or below a
// path, an array element added before it, a whole object, a rollback and
// an unknown version all say no.
func TestObjectUnchanged(t *testing.T) {
	var v0, v1, v2 uint64
	step := func(name string, do func(h *Handle) error) Rule {
		r := newRule("A", "ns", name, 0, Mutate)
		r.apply = do
		return r
	}
	add := func(path ...string) []patch.Operation {
		return []patch.Operation{{Op: patch.Add, Path: path, Value: "x"}}
	}
	type check struct {
		since *uint64
		reads [][]string
		want  bool
	}
	var checks []check
	var got []bool
	rs := []Rule{
		step("1", func(h *Handle) error {
			h.TrackWrites()
			v0 = h.ObjectVersion()
			return h.Patch(add("metadata", "labels", "x"))
		}),
		step("2", func(h *Handle) error {
			v1 = h.ObjectVersion()
			return h.PatchRFC6902(add("spec", "list", "0"))
		}),
		step("3", func(h *Handle) error {
			v2 = h.ObjectVersion()
			// The first operation applies, the second fails: both are
			// rolled back, a change no patch is recorded for.
			ops := append(add("metadata", "labels", "z"), add("nothere", "x")...)
			if err := h.PatchRFC6902(ops); err == nil {
				t.Error("a patch into a missing parent applied")
			}
			return nil
		}),
		step("4", func(h *Handle) error {
			for _, c := range checks {
				got = append(got, h.ObjectUnchanged(*c.since, c.reads))
			}
			return nil
		}),
	}
	var unknown uint64 = 1 << 40
	checks = []check{
		{&v0, nil, false},                           // the rollback since
		{&v1, [][]string{{"metadata"}}, false},      // as above
		{&v2, [][]string{{"metadata"}}, false},      //
		{&unknown, [][]string{{"metadata"}}, false}, //
	}
	obj := podObject()
	obj["spec"] = map[string]any{"list": []any{"a", "b"}}
	_, err := New(Options{}).Evaluate(context.Background(), NewSnapshot(rs), Request{Operation: rules.Create, Namespace: "ns", Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []bool{false, false, false, false}) {
		t.Errorf("after a rollback: %v, want all false", got)
	}

	// Without the rollback: the patches of rules 1 and 2 only.
	rs = []Rule{rs[0], rs[1], rs[3]}
	got = nil
	checks = []check{
		{&v0, nil, true},
		{&v0, [][]string{{"metadata", "labels", "y"}}, true},       // a sibling
		{&v0, [][]string{{"metadata", "name"}, {"kind"}}, true},    //
		{&v0, [][]string{{"metadata", "labels", "x"}}, false},      // on it
		{&v0, [][]string{{"metadata"}}, false},                     // above it
		{&v0, [][]string{{"metadata", "labels", "x", "y"}}, false}, // below it
		{&v0, [][]string{{}}, false},                               // the whole object
		{&v1, [][]string{{"metadata", "labels", "x"}}, true},       // written before v1
		{&v1, [][]string{{"spec", "list", "1"}}, false},            // element 0 added before element 1
		{&v1, [][]string{{"spec", "other"}}, true},                 //
		{&unknown, nil, false},                                     //
	}
	obj = podObject()
	obj["spec"] = map[string]any{"list": []any{"a", "b"}}
	if _, err := New(Options{}).Evaluate(context.Background(), NewSnapshot(rs), Request{Operation: rules.Create, Namespace: "ns", Object: obj}); err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, true, false, false, false, false, true, false, true, false}
	if !slices.Equal(got, want) {
		t.Errorf("ObjectUnchanged: %v, want %v", got, want)
	}

	// Without TrackWrites, nothing is known of the changes.
	rs[0] = step("1", func(h *Handle) error {
		v0 = h.ObjectVersion()
		return h.Patch(add("metadata", "labels", "x"))
	})
	got, checks = nil, []check{{&v0, nil, false}}
	if _, err := New(Options{}).Evaluate(context.Background(), NewSnapshot(rs), Request{Operation: rules.Create, Namespace: "ns", Object: podObject()}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []bool{false}) {
		t.Errorf("without TrackWrites: %v, want false", got)
	}
}
