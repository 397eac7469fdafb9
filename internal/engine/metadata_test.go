package engine

import (
	"context"
	"testing"

	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// TestKernelMetadataNotAnObject: an object whose metadata is not an
// object (a file given to the CLI, a JSON payload), or one a rule made so,
// is evaluated: the kernel has no managedFields to restore there (it
// panicked doing so).
func TestKernelMetadataNotAnObject(t *testing.T) {
	setMetadata := newRule("F", "ns", "set", 0, Mutate)
	setMetadata.apply = func(h *Handle) error {
		return h.Patch([]patch.Operation{{Op: patch.Replace, Path: patch.Pointer{"metadata"}, Value: "text"}})
	}
	for _, tc := range []struct {
		name string
		md   any
		rs   []Rule
	}{
		{"a list", []any{"x"}, nil},
		{"a string", "text", nil},
		{"null", nil, nil},
		{"made a string by a rule, managedFields before", map[string]any{"name": "p", "managedFields": []any{map[string]any{"manager": "m"}}}, []Rule{setMetadata}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": tc.md}
			d, err := New(Options{}).Evaluate(context.Background(), NewSnapshot(tc.rs), Request{Operation: rules.Create, Namespace: "ns", Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			if tc.rs != nil && len(d.Patch) == 0 {
				t.Error("the rule's change is not in the patch")
			}
		})
	}
}
