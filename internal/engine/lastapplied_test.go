package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// TestKernelLastAppliedText: a last-applied configuration as kubectl
// writes it is edited as text (patch.Text) while the rules' operations
// allow, then as a Doc; the same configuration spelled otherwise (spaces:
// not canonical) is decoded and edited as a Doc only. Random rules of
// random operations (members set and removed, arrays, missing parents,
// failures, keys that need escaping, several per rule) decide the same:
// the same patch, the configuration included, and the same errors.
func TestKernelLastAppliedText(t *testing.T) {
	const canonical = `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"},"spec":{"containers":[{"image":"x","name":"c"}]}}` + "\n"
	const spaced = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "a"}, "name": "p"}, "spec": {"containers": [{"image": "x", "name": "c"}]}}`
	menu := []patch.Operation{
		{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "b"}, Value: "1"},
		{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "app"}, Value: "2"},
		{Op: patch.Add, Path: patch.Pointer{"metadata", "annotations", "x"}, Value: "3"},
		{Op: patch.Replace, Path: patch.Pointer{"metadata", "name"}, Value: "q"},
		{Op: patch.Replace, Path: patch.Pointer{"metadata", "namespace"}, Value: "ns"}, // missing in the configuration
		{Op: patch.Remove, Path: patch.Pointer{"metadata", "labels", "app"}},
		{Op: patch.Remove, Path: patch.Pointer{"metadata", "labels"}},
		{Op: patch.Add, Path: patch.Pointer{"spec", "containers", "0", "image"}, Value: "y"},
		{Op: patch.Add, Path: patch.Pointer{"spec", "containers", "-"}, Value: map[string]any{"name": "d"}},
		{Op: patch.Add, Path: patch.Pointer{"spec", "a", "b"}, Value: []any{"c", 1.5}},
		{Op: patch.Add, Path: patch.Pointer{"metadata", "finalizers", "-"}, Value: "f"},
		{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "é"}, Value: "4"},
		{Op: patch.Remove, Path: patch.Pointer{"spec"}},
		{Op: patch.Add, Path: patch.Pointer{"spec"}, Value: map[string]any{"z": nil}},
		{Op: patch.Add, Path: patch.Pointer{"status", "phase"}, Value: "Running"}, // not mirrored
	}
	r := rand.New(rand.NewPCG(5, 6))
	textDone := 0
	for it := 0; it < 400; it++ {
		var rs []Rule
		var all [][]patch.Operation
		for n := 1 + r.IntN(4); n > 0; n-- {
			var ops []patch.Operation
			for k := 1 + r.IntN(3); k > 0; k-- {
				ops = append(ops, menu[r.IntN(len(menu))])
			}
			rule := newRule("F", "ns", fmt.Sprintf("r%d", n), n, Mutate)
			rule.apply = func(h *Handle) error { return h.Patch(ops) }
			rs, all = append(rs, rule), append(all, ops)
		}
		snap := NewSnapshot(rs)
		decide := func(la string) *Decision {
			obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"containers": []any{map[string]any{"image": "x", "name": "c"}}},
				"metadata": map[string]any{"name": "p", "namespace": "ns", "labels": map[string]any{"app": "a"}, "annotations": map[string]any{LastAppliedAnnotation: la}}}
			e := New(Options{})
			d, err := e.Evaluate(context.Background(), snap, Request{Operation: rules.Create, Namespace: "ns", Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		want, got := decide(spaced), decide(canonical)
		if diff := cmp.Diff(want.Patch, got.Patch); diff != "" {
			t.Fatalf("rules' operations %v: patch (-as a Doc +as text):\n%s", all, diff)
		}
		if diff := cmp.Diff(fmt.Sprint(want.Errors), fmt.Sprint(got.Errors)); diff != "" {
			t.Fatalf("rules' operations %v: errors (-as a Doc +as text):\n%s", all, diff)
		}
		for _, op := range got.Patch {
			if len(op.Path) == 3 && op.Path[2] == LastAppliedAnnotation {
				textDone++
			}
		}
	}
	if textDone < 200 {
		t.Fatalf("the configuration changed in only %d of 400 evaluations", textDone)
	}
}
