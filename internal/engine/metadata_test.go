package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
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

// TestKernelManagedFieldsUndecoded: an object given as JSON text is decoded
// without its metadata.managedFields; what rules see, the patch and the
// whole object (DecodeObject) are what the decoded object gives, whatever
// the rules do to metadata and however the text holds them.
func TestKernelManagedFieldsUndecoded(t *testing.T) {
	const mf = `[{"manager":"kubectl","operation":"Update","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}},{"manager":"kcm","subresource":"status","fieldsV1":{}}]`
	objects := []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","managedFields":` + mf + `,"labels":{"app":"a"}},"spec":{"x":[{"managedFields":1}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"managedFields":` + mf + `,"managedFields":[],"name":"p"}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"managedFields":` + mf + `},"metadata":{"name":"q"}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":[{"managedFields":1}]}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":null,"managedFields":` + mf + `}`,
		` { "apiVersion" : "v1", "kind":"Pod", "metadata" : { "managedFields" : [ { "manager" : "m" } ] } } `,
	}
	rule := func(name string, apply func(h *Handle) error) *fakeRule {
		r := newRule("F", "ns", name, 0, Mutate)
		r.apply = apply
		return r
	}
	patchOf := func(op patch.OpType, v any, path ...string) func(h *Handle) error {
		return func(h *Handle) error {
			return h.Patch([]patch.Operation{{Op: op, Path: path, Value: v}})
		}
	}
	var seen []string
	saw := rule("saw", func(h *Handle) error {
		_, has := value.Lookup(h.Object(), "metadata", "managedFields")
		seen = append(seen, fmt.Sprint(has))
		return nil
	})
	ruleSets := map[string][]Rule{
		"none":                  nil,
		"reads":                 {saw},
		"a label":               {rule("l", setLabel("x", "y")), saw},
		"metadata replaced":     {rule("m", patchOf(patch.Replace, map[string]any{"name": "n", "managedFields": []any{"mine"}}, "metadata")), saw},
		"metadata removed":      {rule("m", patchOf(patch.Remove, nil, "metadata"))},
		"metadata a string":     {rule("m", patchOf(patch.Replace, "s", "metadata"))},
		"managedFields written": {rule("m", patchOf(patch.Add, []any{"mine"}, "metadata", "managedFields")), saw},
		"whole object":          {rule("w", patchOf(patch.Replace, map[string]any{"kind": "Pod", "metadata": map[string]any{"managedFields": "mine", "a": "b"}})), saw},
	}
	for _, text := range objects {
		for name, rs := range ruleSets {
			for _, op := range []rules.Operation{rules.Create, rules.Delete} {
				t.Run(fmt.Sprintf("%s/%s/%s", text[:40], name, op), func(t *testing.T) {
					tree, err := value.Decode([]byte(text))
					if err != nil {
						t.Fatal(err)
					}
					fromTree, fromText := Request{Operation: op, Namespace: "ns"}, Request{Operation: op, Namespace: "ns", Kind: GroupVersionKind{Version: "v1", Kind: "Pod"}}
					if op == rules.Delete {
						fromTree.OldObject, fromText.OldObjectJSON = tree, []byte(text)
					} else {
						fromTree.Object, fromText.ObjectJSON = tree, []byte(text)
					}
					snap := NewSnapshot(rs)
					seen = nil
					want, err := New(Options{}).Evaluate(context.Background(), snap, fromTree)
					if err != nil {
						t.Fatal(err)
					}
					wantSeen := seen
					seen = nil
					got, err := New(Options{}).Evaluate(context.Background(), snap, fromText)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(wantSeen, seen); diff != "" {
						t.Errorf("what rules see of managedFields (-decoded +text):\n%s", diff)
					}
					if diff := cmp.Diff(want.Patch, got.Patch); diff != "" {
						t.Errorf("patch (-decoded +text):\n%s", diff)
					}
					wantObj, _ := want.DecodeObject()
					gotObj, err := got.DecodeObject()
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(wantObj, gotObj); diff != "" {
						t.Errorf("object (-decoded +text):\n%s", diff)
					}
				})
			}
		}
	}
}

// An unchecked object's text (Request.ObjectUnchecked) that is not JSON
// is an invalid request whether Evaluate decodes it (a rule can apply) or
// not (none can, a DELETE evaluating the old object, the object given
// decoded too); text that is JSON is evaluated as if checked.
func TestObjectUnchecked(t *testing.T) {
	rule := newRule("F", "ns", "r", 0, Mutate)
	rule.apply = setLabel("x", "y")
	snaps := map[string]*Snapshot{"a rule can apply": NewSnapshot([]Rule{rule}), "no rule": NewSnapshot(nil)}
	good := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`
	for snapName, snap := range snaps {
		for _, op := range []rules.Operation{rules.Create, rules.Delete} {
			for _, decoded := range []bool{false, true} {
				for _, text := range []string{`{"a":tru}`, `{"a":"` + "\x01" + `"}`, `[1 2]`, `{} x`, good} {
					req := Request{Operation: op, Namespace: "ns", Kind: GroupVersionKind{Version: "v1", Kind: "Pod"}, ObjectJSON: []byte(text), ObjectUnchecked: true}
					if op == rules.Delete {
						req.OldObjectJSON = []byte(good)
					}
					if decoded {
						req.Object = map[string]any{"kind": "Pod"}
					}
					_, err := New(Options{}).Evaluate(context.Background(), snap, req)
					name := fmt.Sprintf("%s, %s, decoded %v, %s", snapName, op, decoded, text)
					if text == good {
						if err != nil {
							t.Errorf("%s: %v", name, err)
						}
						continue
					}
					if !errors.Is(err, ErrInvalidRequest) {
						t.Errorf("%s: error %v, want ErrInvalidRequest", name, err)
					}
					// Checked (the webhook's decodeReview did), it is not
					// looked at again where nothing decodes it.
					req.ObjectUnchecked = false
					if _, err := New(Options{}).Evaluate(context.Background(), snap, req); err != nil && (op == rules.Delete || decoded || snap == snaps["no rule"]) {
						t.Errorf("%s, checked: %v", name, err)
					}
				}
			}
		}
	}
}
