package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/rules"
)

func TestFieldDecide(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{
			"labels": map[string]any{"team": "a", "none": nil, "n": int64(3), "long": strings.Repeat("x", maxFieldText+1)},
		},
		"spec": "text",
	}
	labels := func(key string, strict int, vals ...string) Field {
		return Field{Path: []string{"metadata", "labels", key}, Values: vals, Strict: strict}
	}
	for _, tc := range []struct {
		name string
		f    Field
		want fieldVerdict
	}{
		{"a string among the values", labels("team", 0, "b", "a"), fieldPasses},
		{"another string", labels("team", 0, "b"), fieldFails},
		{"the last member missing", labels("gone", 0, "a"), fieldFails},
		{"the last member missing, before Strict", labels("gone", 3, "a"), fieldUndecided},
		{"the last member missing, at Strict", labels("gone", 2, "a"), fieldFails},
		{"a member on the way missing", Field{Path: []string{"status", "phase"}, Values: []string{"a"}}, fieldFails},
		{"a member on the way missing, before Strict", Field{Path: []string{"status", "phase"}, Values: []string{"a"}, Strict: 1}, fieldUndecided},
		{"through a string", Field{Path: []string{"spec", "x"}, Values: []string{"a"}}, fieldUndecided},
		{"null", labels("none", 0, "a"), fieldUndecided},
		{"a number", labels("n", 0, "3"), fieldUndecided},
		{"an object", Field{Path: []string{"metadata", "labels"}, Values: []string{"a"}}, fieldUndecided},
		{"a string over the bound", labels("long", 0, "a"), fieldUndecided},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.decide(tc.f.walk(obj)); got != tc.want {
				t.Errorf("decide = %d, want %d", got, tc.want)
			}
		})
	}
	if FieldsRefuse([]Field{labels("team", 0, "a"), labels("n", 0, "3"), labels("team", 0, "b")}, obj) {
		t.Error("FieldsRefuse decided past an undecided Field")
	}
	if !FieldsRefuse([]Field{labels("team", 0, "a"), labels("team", 0, "b")}, obj) {
		t.Error("FieldsRefuse: a Field fails after one passes, want refused")
	}
	if FieldsRefuse(nil, obj) || FieldsRefuse([]Field{labels("team", 0, "a")}, "not an object") {
		t.Error("FieldsRefuse refused with no Field, or on a root that is not an object")
	}
}

// TestKernelFields: without a trace, the kernel decides a rule's Fields
// on the object as the tiers before it left it, and does not ask Match
// when they fail; with a trace Match is asked. Paths shared by rules are
// looked up once per version of the object.
func TestKernelFields(t *testing.T) {
	team := []string{"metadata", "labels", "team"} // one slice: shared
	var asked []string
	rule := func(name string, tier int, value string) *fakeRule {
		r := newRule("F", "ns", name, tier, Mutate)
		r.info.Index.Fields = []Field{{Path: team, Values: []string{value}}}
		r.match = func(h *Handle) (bool, error) {
			asked = append(asked, name)
			got, _ := h.Object().(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)["team"].(string)
			return got == value, nil
		}
		return r
	}
	set := newRule("F", "ns", "set", 0, Mutate)
	set.apply = setLabel("team", "a")
	rs := []Rule{
		rule("before", -1, "a"), // the label is not there yet
		set,
		rule("after", 1, "a"),  // set by the tier before
		rule("other", 1, "b"),  // another value
		rule("after2", 2, "a"), // the same path, a later version
	}
	for _, trace := range []bool{false, true} {
		asked = nil
		d, err := New(Options{NoTrace: !trace}).Evaluate(context.Background(), NewSnapshot(rs), Request{Operation: rules.Create, Namespace: "ns", Object: podObject()})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"after", "after2"}
		if trace {
			want = []string{"before", "after", "other", "after2"}
		}
		if diff := cmp.Diff(want, asked); diff != "" {
			t.Errorf("trace %v: Match asked of (-want +got):\n%s", trace, diff)
		}
		if diff := cmp.Diff([]RuleRef{{Kind: "F", Key: "ns/set"}}, d.Applied); diff != "" {
			t.Errorf("trace %v: applied (-want +got):\n%s", trace, diff)
		}
		if trace {
			outcomes := map[string]Outcome{}
			for _, tr := range d.Trace {
				outcomes[tr.Rule] = tr.Outcome
			}
			if diff := cmp.Diff(map[string]Outcome{"ns/before": NotMatched, "ns/set": Matched, "ns/after": Matched, "ns/other": NotMatched, "ns/after2": Matched}, outcomes); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
		}
	}
}

// TestRecycled: a scratch keeps a slice emptied and cleared to its
// capacity, and drops one grown past scratchKept.
func TestRecycled(t *testing.T) {
	s := append(make([]any, 0, 8), "a", "b")
	r := recycled(s)
	if len(r) != 0 || cap(r) != 8 || r[:2][0] != nil || r[:2][1] != nil {
		t.Errorf("recycled(%d of %d) = %d of %d, %v", 2, 8, len(r), cap(r), r[:2])
	}
	if big := recycled(make([]any, 1, scratchKept+1)); big != nil {
		t.Errorf("a slice past scratchKept kept: capacity %d", cap(big))
	}
	if kept := recycled(make([]string, 0, scratchKept)); cap(kept) != scratchKept {
		t.Errorf("a slice of scratchKept dropped")
	}
}
