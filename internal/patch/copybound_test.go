package patch

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	jsonpatchv4 "gopkg.in/evanphx/json-patch.v4"
)

// TestCopyBound: forty copies of a subtree into itself would double the
// document forty times; ApplyJSONPatchV4 and ApplyV4 stop at MaxCopyBytes.
// Copies within the bound apply as v4 applies them.
func TestCopyBound(t *testing.T) {
	ops := make([]any, 40)
	for i := range ops {
		ops[i] = map[string]any{"op": "copy", "from": "/a", "path": "/a/c" + strconv.Itoa(i)}
	}
	obj := map[string]any{"a": map[string]any{"s": strings.Repeat("x", 1024)}}
	if _, err := ApplyV4(ops, obj); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ApplyV4 of 40 copies into their own subtree: %v, want ErrTooLarge", err)
	}
	p, err := jsonpatchv4.DecodePatch([]byte(`[{"op": "copy", "from": "/a", "path": "/b"}, {"op": "add", "path": "/b/t", "value": 1}]`))
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"a":{"s":"x"}}`)
	want, err := p.Apply(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ApplyJSONPatchV4(p, doc)
	if err != nil || string(got) != string(want) {
		t.Fatalf("ApplyJSONPatchV4 = %s, %v; v4: %s", got, err, want)
	}
}

// FuzzApplyJSONPatchV4: any patch (copy and move among its operations)
// on any document gives v4's answer, or ErrTooLarge with no more than
// MaxCopyBytes of growth allowed before the last operation.
func FuzzApplyJSONPatchV4(f *testing.F) {
	f.Add(`[{"op": "copy", "from": "/a", "path": "/a/b"}, {"op": "copy", "from": "/a", "path": "/a/c"}]`, `{"a": {"s": "xxxxxxxx"}}`)
	f.Add(`[{"op": "move", "from": "/a", "path": "/b"}, {"op": "copy", "from": "/b", "path": "/c"}]`, `{"a": [1, 2]}`)
	f.Add(`[{"op": "add", "path": "/x", "value": 1}, {"op": "test", "path": "/x", "value": 1}]`, `{}`)
	f.Fuzz(func(t *testing.T, ops, doc string) {
		p, err := jsonpatchv4.DecodePatch([]byte(ops))
		if err != nil || len(p) > 64 {
			return
		}
		got, err := ApplyJSONPatchV4(p, []byte(doc))
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrPanic) {
			return
		}
		if len(got) > len(doc)+2*MaxCopyBytes+len(ops) {
			t.Fatalf("grew from %d to %d bytes", len(doc), len(got))
		}
		if err != nil {
			return // v4's own error (some operation does not apply)
		}
		want, werr := p.Apply([]byte(doc))
		if werr != nil || string(want) != string(got) {
			t.Fatalf("ApplyJSONPatchV4 = %s; v4: %s, %v", got, want, werr)
		}
	})
}
