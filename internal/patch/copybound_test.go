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
