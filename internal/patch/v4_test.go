package patch

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modwright/modwright/internal/value"
)

// TestFastV4 checks that the copy-on-write way and json-patch
// v4 (kinitiras') give the same result or both fail, and which operations
// take the fast way.
func TestFastV4(t *testing.T) {
	obj, err := value.Decode([]byte(`{"metadata": {"name": "web", "labels": {"a": "1"}}, "spec": {"list": [1, 2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ops  string
		fast bool
	}{
		{`[{"op": "add", "path": "/metadata/labels/b", "value": "2"}]`, true},
		{`[{"op": "replace", "path": "/metadata/name", "value": "x"}, {"op": "remove", "path": "/metadata/labels/a"}]`, true},
		{`[{"op": "add", "path": "/spec/list/-", "value": 3}, {"op": "add", "path": "/spec/list/0", "value": 0}]`, true},
		{`[{"op": "add", "path": "/metadata/annotations/x", "value": "y"}]`, false}, // missing parent
		{`[{"op": "remove", "path": "/metadata/nope"}]`, false},                     // missing target
		{`[{"op": "replace", "path": "/spec/list/5", "value": 1}]`, false},
		{`[{"op": "add", "path": "/spec/list/-1", "value": 1}]`, false},
		{`[{"op": "copy", "from": "/metadata/name", "path": "/metadata/labels/n"}]`, false},
	} {
		var ops []any
		if err := json.Unmarshal([]byte(c.ops), &ops); err != nil {
			t.Fatal(err)
		}
		got, fast, ferr := fastV4(ops, obj)
		if fast != c.fast {
			t.Errorf("%s: fast way %v, want %v", c.ops, fast, c.fast)
		}
		want, jerr := applyV4(ops, obj)
		if !fast {
			continue
		}
		if (ferr != nil) != (jerr != nil) {
			t.Errorf("%s: fast error %v, JSON error %v", c.ops, ferr, jerr)
			continue
		}
		if !value.Equal(want, got) {
			t.Errorf("%s: fast %s, v4 %s", c.ops, fmt.Sprint(got), fmt.Sprint(want))
		}
	}
	if v, _ := value.Lookup(obj, "metadata", "name"); v != "web" {
		t.Error("the input was modified")
	}
}
