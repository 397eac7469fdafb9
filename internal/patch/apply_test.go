package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/value"
)

const baseDoc = `{"a":{"b":1},"arr":[1,2,3],"n":null,"s":"str","num":5,"nested":[{"x":1},{"x":2}],"empty":[],"obj":{}}`

// applyCase is one Doc.Apply expectation. want is the whole resulting
// document; when err is set the document must be unchanged. doc defaults to
// baseDoc.
type applyCase struct {
	name  string
	doc   string
	op    OpType
	path  string
	value string // JSON; "" for no value (remove)
	want  string // resulting document when err is nil
	err   error
}

// base returns baseDoc with the given top-level members replaced (a value of
// "-" deletes the member), as JSON.
func base(members ...string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(baseDoc), &m); err != nil {
		panic(err)
	}
	for i := 0; i < len(members); i += 2 {
		if members[i+1] == "-" {
			delete(m, members[i])
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(members[i+1]), &v); err != nil {
			panic(fmt.Sprintf("%s: %v", members[i+1], err))
		}
		m[members[i]] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var applyCases = []applyCase{
	// add on objects
	{name: "add new member", op: Add, path: "/a/c", value: `2`, want: base("a", `{"b":1,"c":2}`)},
	{name: "add replaces existing member", op: Add, path: "/a/b", value: `{"z":true}`, want: base("a", `{"b":{"z":true}}`)},
	{name: "add top-level member", op: Add, path: "/new", value: `"v"`, want: base("new", `"v"`)},
	{name: "add null value", op: Add, path: "/a/c", value: `null`, want: base("a", `{"b":1,"c":null}`)},
	{name: "add empty key", op: Add, path: "/obj/", value: `1`, want: base("obj", `{"":1}`)},
	{name: "add escaped key", op: Add, path: "/obj/example.com~1name~0x", value: `1`, want: base("obj", `{"example.com/name~x":1}`)},
	{name: "add numeric key on object", op: Add, path: "/obj/0", value: `1`, want: base("obj", `{"0":1}`)},
	{name: "add dash key on object", op: Add, path: "/obj/-", value: `1`, want: base("obj", `{"-":1}`)},
	{name: "add replaces null member", op: Add, path: "/n", value: `1`, want: base("n", `1`)},

	// add on arrays
	{name: "add insert at 0", op: Add, path: "/arr/0", value: `0`, want: base("arr", `[0,1,2,3]`)},
	{name: "add insert in the middle", op: Add, path: "/arr/1", value: `9`, want: base("arr", `[1,9,2,3]`)},
	{name: "add insert at len appends", op: Add, path: "/arr/3", value: `9`, want: base("arr", `[1,2,3,9]`)},
	{name: "add past len", op: Add, path: "/arr/4", value: `9`, err: ErrInvalidIndex},
	{name: "add dash appends", op: Add, path: "/arr/-", value: `9`, want: base("arr", `[1,2,3,9]`)},
	{name: "add -1 appends", op: Add, path: "/arr/-1", value: `9`, want: base("arr", `[1,2,3,9]`)},
	{name: "add -2 inserts before last", op: Add, path: "/arr/-2", value: `9`, want: base("arr", `[1,2,9,3]`)},
	{name: "add -3", op: Add, path: "/arr/-3", value: `9`, want: base("arr", `[1,9,2,3]`)},
	{name: "add -4 inserts at 0", op: Add, path: "/arr/-4", value: `9`, want: base("arr", `[9,1,2,3]`)},
	{name: "add -5 is out of range", op: Add, path: "/arr/-5", value: `9`, err: ErrInvalidIndex},
	{name: "add to empty array at 0", op: Add, path: "/empty/0", value: `9`, want: base("empty", `[9]`)},
	{name: "add to empty array -1", op: Add, path: "/empty/-1", value: `9`, want: base("empty", `[9]`)},
	{name: "add to empty array at 1", op: Add, path: "/empty/1", value: `9`, err: ErrInvalidIndex},
	{name: "add to empty array -2", op: Add, path: "/empty/-2", value: `9`, err: ErrInvalidIndex},
	{name: "add leading zero index", op: Add, path: "/arr/01", value: `9`, err: ErrInvalidIndex},
	{name: "add plus index", op: Add, path: "/arr/+1", value: `9`, err: ErrInvalidIndex},
	{name: "add fractional index", op: Add, path: "/arr/1.0", value: `9`, err: ErrInvalidIndex},
	{name: "add minus zero index", op: Add, path: "/arr/-0", value: `9`, err: ErrInvalidIndex},
	{name: "add name on array", op: Add, path: "/arr/x", value: `9`, err: ErrInvalidIndex},
	{name: "add huge index", op: Add, path: "/arr/99999999999999999999", value: `9`, err: ErrInvalidIndex},
	{name: "add array value", op: Add, path: "/arr/1", value: `[7,8]`, want: base("arr", `[1,[7,8],2,3]`)},

	// add creating missing parents
	{name: "add creates objects", op: Add, path: "/p/q/r", value: `"v"`, want: base("p", `{"q":{"r":"v"}}`)},
	{name: "add creates object in existing object", op: Add, path: "/a/c/d", value: `1`, want: base("a", `{"b":1,"c":{"d":1}}`)},
	{name: "add creates array for 0", op: Add, path: "/p/0", value: `1`, want: base("p", `[1]`)},
	{name: "add creates array for dash", op: Add, path: "/p/-", value: `1`, want: base("p", `[1]`)},
	{name: "add creates array for -1", op: Add, path: "/p/-1", value: `1`, want: base("p", `[1]`)},
	{name: "add creates array of objects", op: Add, path: "/p/0/q", value: `1`, want: base("p", `[{"q":1}]`)},
	{name: "add creates array of objects via dash", op: Add, path: "/p/-/q", value: `1`, want: base("p", `[{"q":1}]`)},
	{name: "add creates array of objects via -1", op: Add, path: "/p/-1/q", value: `1`, want: base("p", `[{"q":1}]`)},
	{name: "add creates nested arrays", op: Add, path: "/p/-/0/-1", value: `1`, want: base("p", `[[[1]]]`)},
	{name: "add new array at 1", op: Add, path: "/p/1", value: `1`, err: ErrInvalidIndex},
	{name: "add new array at 2 deep", op: Add, path: "/p/2/q", value: `1`, err: ErrInvalidIndex},
	{name: "add new array index error deeper", op: Add, path: "/p/q/3", value: `1`, err: ErrInvalidIndex},
	// KubeMod: "Unable to ensure path for negative index other than -1"
	// (issue 13: /spec/containers/0/args/-2 made args an object).
	{name: "add new array at -2", op: Add, path: "/p/-2", value: `1`, err: ErrInvalidIndex},
	{name: "add new array at -2 deep", op: Add, path: "/p/-2/q", value: `1`, err: ErrInvalidIndex},
	{name: "add new array index -3 deeper", op: Add, path: "/p/q/-3", value: `1`, err: ErrInvalidIndex},
	{name: "add through null member new array at -2", op: Add, path: "/n/-2", value: `1`, err: ErrInvalidIndex},
	{name: "add 01 key creates object", op: Add, path: "/p/01", value: `1`, want: base("p", `{"01":1}`)},
	{name: "add through null member", op: Add, path: "/n/x", value: `1`, want: base("n", `{"x":1}`)},
	{name: "add through null member creates array", op: Add, path: "/n/-", value: `1`, want: base("n", `[1]`)},
	{name: "add through null member new array at 1", op: Add, path: "/n/1", value: `1`, err: ErrInvalidIndex},
	{name: "add through null element", doc: `{"l":[null,2]}`, op: Add, path: "/l/0/k", value: `1`, want: `{"l":[{"k":1},2]}`},

	// add through existing arrays
	{name: "add into element", op: Add, path: "/nested/1/y", value: `5`, want: base("nested", `[{"x":1},{"x":2,"y":5}]`)},
	{name: "add into element -1", op: Add, path: "/nested/-1/y", value: `5`, want: base("nested", `[{"x":1},{"x":2,"y":5}]`)},
	{name: "add into element -2", op: Add, path: "/nested/-2/y", value: `5`, want: base("nested", `[{"x":1,"y":5},{"x":2}]`)},
	{name: "add into element -3", op: Add, path: "/nested/-3/y", value: `5`, err: ErrInvalidIndex},
	{name: "add new element at len", op: Add, path: "/nested/2/y", value: `5`, want: base("nested", `[{"x":1},{"x":2},{"y":5}]`)},
	{name: "add new element via dash", op: Add, path: "/nested/-/y", value: `5`, want: base("nested", `[{"x":1},{"x":2},{"y":5}]`)},
	{name: "add new element via dash creates array", op: Add, path: "/nested/-/0", value: `5`, want: base("nested", `[{"x":1},{"x":2},[5]]`)},
	{name: "add new element past len", op: Add, path: "/nested/3/y", value: `5`, err: ErrInvalidIndex},
	{name: "add new element bad index below", op: Add, path: "/nested/-/4", value: `5`, err: ErrInvalidIndex},
	{name: "add name through array", op: Add, path: "/nested/x/y", value: `5`, err: ErrInvalidIndex},
	{name: "add into empty array element 0", op: Add, path: "/empty/0/y", value: `5`, want: base("empty", `[{"y":5}]`)},
	{name: "add into empty array element -1", op: Add, path: "/empty/-1/y", value: `5`, err: ErrInvalidIndex},

	// add through scalars
	{name: "add through string", op: Add, path: "/s/x", value: `1`, err: ErrNotContainer},
	{name: "add through number deep", op: Add, path: "/num/x/y", value: `1`, err: ErrNotContainer},
	{name: "add through nested number", op: Add, path: "/a/b/c", value: `1`, err: ErrNotContainer},
	{name: "add through array element", op: Add, path: "/arr/0/x", value: `1`, err: ErrNotContainer},
	{name: "add through bool", doc: `{"t":true}`, op: Add, path: "/t/0", value: `1`, err: ErrNotContainer},

	// add at the root
	{name: "add root", op: Add, path: "", value: `[1]`, want: `[1]`},
	{name: "add root null", op: Add, path: "", value: `null`, want: `null`},
	{name: "add to null root", doc: `null`, op: Add, path: "/a", value: `1`, want: `{"a":1}`},
	{name: "add to null root array", doc: `null`, op: Add, path: "/-", value: `1`, want: `[1]`},
	{name: "add to scalar root", doc: `"x"`, op: Add, path: "/a", value: `1`, err: ErrNotContainer},
	{name: "add to array root", doc: `[1]`, op: Add, path: "/0", value: `0`, want: `[0,1]`},

	// replace
	{name: "replace member", op: Replace, path: "/a/b", value: `7`, want: base("a", `{"b":7}`)},
	{name: "replace with object", op: Replace, path: "/s", value: `{"k":[1]}`, want: base("s", `{"k":[1]}`)},
	{name: "replace null member", op: Replace, path: "/n", value: `1`, want: base("n", `1`)},
	{name: "replace with null", op: Replace, path: "/num", value: `null`, want: base("num", `null`)},
	{name: "replace missing member", op: Replace, path: "/a/c", value: `7`, err: ErrPathNotFound},
	{name: "replace missing parent", op: Replace, path: "/x/y", value: `7`, err: ErrPathNotFound},
	{name: "replace root", op: Replace, path: "", value: `{"z":1}`, want: `{"z":1}`},
	{name: "replace element", op: Replace, path: "/arr/0", value: `9`, want: base("arr", `[9,2,3]`)},
	{name: "replace last element", op: Replace, path: "/arr/2", value: `9`, want: base("arr", `[1,2,9]`)},
	{name: "replace -1", op: Replace, path: "/arr/-1", value: `9`, want: base("arr", `[1,2,9]`)},
	{name: "replace -3", op: Replace, path: "/arr/-3", value: `9`, want: base("arr", `[9,2,3]`)},
	{name: "replace -4", op: Replace, path: "/arr/-4", value: `9`, err: ErrPathNotFound},
	{name: "replace past end", op: Replace, path: "/arr/3", value: `9`, err: ErrPathNotFound},
	{name: "replace dash", op: Replace, path: "/arr/-", value: `9`, err: ErrPathNotFound},
	{name: "replace bad index", op: Replace, path: "/arr/01", value: `9`, err: ErrInvalidIndex},
	{name: "replace name on array", op: Replace, path: "/arr/x", value: `9`, err: ErrInvalidIndex},
	{name: "replace in empty array", op: Replace, path: "/empty/0", value: `9`, err: ErrPathNotFound},
	{name: "replace in element", op: Replace, path: "/nested/-1/x", value: `9`, want: base("nested", `[{"x":1},{"x":9}]`)},
	{name: "replace missing in element", op: Replace, path: "/nested/0/y", value: `9`, err: ErrPathNotFound},
	{name: "replace through string", op: Replace, path: "/s/x", value: `9`, err: ErrNotContainer},
	{name: "replace through null", op: Replace, path: "/n/x", value: `9`, err: ErrNotContainer},
	{name: "replace through number element", op: Replace, path: "/arr/1/x", value: `9`, err: ErrNotContainer},
	{name: "replace in scalar root", doc: `3`, op: Replace, path: "/a", value: `9`, err: ErrNotContainer},
	{name: "replace scalar root", doc: `3`, op: Replace, path: "", value: `9`, want: `9`},

	// remove
	{name: "remove member", op: Remove, path: "/a/b", want: base("a", `{}`)},
	{name: "remove top-level member", op: Remove, path: "/s", want: base("s", "-")},
	{name: "remove null member", op: Remove, path: "/n", want: base("n", "-")},
	{name: "remove missing member", op: Remove, path: "/a/c", want: baseDoc},
	{name: "remove missing parents", op: Remove, path: "/x/y/z", want: baseDoc},
	{name: "remove first element", op: Remove, path: "/arr/0", want: base("arr", `[2,3]`)},
	{name: "remove middle element", op: Remove, path: "/arr/1", want: base("arr", `[1,3]`)},
	{name: "remove -1", op: Remove, path: "/arr/-1", want: base("arr", `[1,2]`)},
	{name: "remove -3", op: Remove, path: "/arr/-3", want: base("arr", `[2,3]`)},
	{name: "remove -4 ignored", op: Remove, path: "/arr/-4", want: baseDoc},
	{name: "remove past end ignored", op: Remove, path: "/arr/3", want: baseDoc},
	{name: "remove huge index ignored", op: Remove, path: "/arr/99999999999999999999", want: baseDoc},
	{name: "remove dash ignored", op: Remove, path: "/arr/-", want: baseDoc},
	{name: "remove from empty array ignored", op: Remove, path: "/empty/0", want: baseDoc},
	{name: "remove bad index", op: Remove, path: "/arr/01", err: ErrInvalidIndex},
	{name: "remove name on array", op: Remove, path: "/nested/x/y", err: ErrInvalidIndex},
	{name: "remove through string ignored", op: Remove, path: "/s/x", want: baseDoc},
	{name: "remove through number ignored", op: Remove, path: "/num/x/y", want: baseDoc},
	{name: "remove through null ignored", op: Remove, path: "/n/x", want: baseDoc},
	{name: "remove in element", op: Remove, path: "/nested/1/x", want: base("nested", `[{"x":1},{}]`)},
	{name: "remove -1 in element", op: Remove, path: "/nested/-1/x", want: base("nested", `[{"x":1},{}]`)},
	{name: "remove in missing element ignored", op: Remove, path: "/nested/5/x", want: baseDoc},
	{name: "remove array", op: Remove, path: "/nested", want: base("nested", "-")},
	{name: "remove nested array element", doc: `[[1,2],[3]]`, op: Remove, path: "/0/1", want: `[[1],[3]]`},
	{name: "remove in scalar root ignored", doc: `1`, op: Remove, path: "/a", want: `1`},
	{name: "remove root", op: Remove, path: "", err: ErrInvalidPointer},

	// others
	{name: "move unsupported", op: "move", path: "/a", err: ErrUnsupportedOp},
	{name: "empty op unsupported", op: "", path: "/a", err: ErrUnsupportedOp},
}

func (c applyCase) operation(t testing.TB) Operation {
	op := Operation{Op: c.op, Path: mustPointer(t, c.path)}
	if c.value != "" {
		op.Value = mustDecode(t, c.value)
	}
	return op
}

func (c applyCase) docText() string {
	if c.doc == "" {
		return baseDoc
	}
	return c.doc
}

func TestApply(t *testing.T) {
	for _, tc := range applyCases {
		t.Run(tc.name, func(t *testing.T) {
			orig := mustDecode(t, tc.docText())
			d := NewDoc(value.DeepCopy(orig))
			mark := d.Mark()
			op := tc.operation(t)
			err := d.Apply(op)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Apply(%v) error = %v, want %v", op, err, tc.err)
				}
				var oe *OpError
				if !errors.As(err, &oe) || oe.Op != op.Op || !cmp.Equal(oe.Path, op.Path) {
					t.Errorf("error %#v is not an *OpError for the operation", err)
				}
				if diff := cmp.Diff(orig, d.Root()); diff != "" {
					t.Errorf("document changed by a failed Apply (-orig +got):\n%s", diff)
				}
				if d.Mark() != mark {
					t.Errorf("failed Apply journalled changes")
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply(%v): %v", op, err)
			}
			want := mustDecode(t, tc.want)
			if diff := cmp.Diff(want, d.Root()); diff != "" {
				t.Errorf("Apply(%v) mismatch (-want +got):\n%s", op, diff)
			}
			d.Rollback(mark)
			if diff := cmp.Diff(orig, d.Root()); diff != "" {
				t.Errorf("after Rollback (-orig +got):\n%s", diff)
			}
		})
	}
}

// TestApplyMatchesReference checks the table against the naive reference
// implementation used by the randomized tests, so that the reference itself
// is known to encode the rules.
func TestApplyMatchesReference(t *testing.T) {
	for _, tc := range applyCases {
		got, err := refApply(mustDecode(t, tc.docText()), tc.operation(t))
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: reference error = %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: reference error %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(mustDecode(t, tc.want), got); diff != "" {
			t.Errorf("%s: reference mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestApplyCopiesValue(t *testing.T) {
	d := NewDoc(map[string]any{"l": []any{}})
	v := map[string]any{"k": []any{"x"}}
	for _, p := range []string{"/a", "/b", "/l/-", "/l/-", "/c/d/0"} {
		if err := d.Apply(Operation{Op: Add, Path: mustPointer(t, p), Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Apply(Operation{Op: Replace, Path: mustPointer(t, "/a"), Value: v}); err != nil {
		t.Fatal(err)
	}
	want := mustDecode(t, `{"a":{"k":["x"]},"b":{"k":["x"]},"c":{"d":[{"k":["x"]}]},"l":[{"k":["x"]},{"k":["x"]}]}`)
	// Changing the value must not change the tree, and vice versa.
	v["k"].([]any)[0] = "changed"
	v["new"] = true
	if diff := cmp.Diff(want, d.Root()); diff != "" {
		t.Fatalf("tree aliases the value (-want +got):\n%s", diff)
	}
	root := d.Root().(map[string]any)
	root["a"].(map[string]any)["k"].([]any)[0] = "tree"
	if b := root["b"].(map[string]any)["k"].([]any)[0]; b != "x" {
		t.Errorf("two applications share the value: %v", b)
	}
}

// TestApplyKeepsSlices checks that inserting and removing never write into
// the backing array of a slice of the input tree (only into arrays the Doc
// copied): a slice obtained before the operations still holds its elements
// afterwards.
func TestApplyKeepsSlices(t *testing.T) {
	root := mustDecode(t, `{"l":[1,2,3,4],"m":[[1,2],[3]]}`)
	l := root.(map[string]any)["l"].([]any)
	inner := root.(map[string]any)["m"].([]any)[0].([]any)
	d := NewDoc(root)
	for _, op := range []string{
		`{"op":"remove","path":"/l/0"}`,
		`{"op":"add","path":"/l/1","value":9}`,
		`{"op":"add","path":"/l/-","value":9}`,
		`{"op":"remove","path":"/l/-1"}`,
		`{"op":"remove","path":"/m/0/0"}`,
		`{"op":"add","path":"/m/0/-","value":7}`,
	} {
		var o Operation
		if err := json.Unmarshal([]byte(op), &o); err != nil {
			t.Fatal(err)
		}
		if err := d.Apply(o); err != nil {
			t.Fatal(err)
		}
	}
	d.Rollback(0)
	if diff := cmp.Diff(mustDecode(t, `[1,2,3,4]`), l); diff != "" {
		t.Errorf("old slice changed:\n%s", diff)
	}
	if diff := cmp.Diff(mustDecode(t, `[1,2]`), inner); diff != "" {
		t.Errorf("old inner slice changed:\n%s", diff)
	}
	if diff := cmp.Diff(mustDecode(t, `{"l":[1,2,3,4],"m":[[1,2],[3]]}`), d.Root()); diff != "" {
		t.Errorf("rollback:\n%s", diff)
	}
}

func TestApplyRFC6902(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ops  string
		want string
		err  error
	}{
		{name: "add member", doc: `{"a":1}`, ops: `[{"op":"add","path":"/b","value":2}]`, want: `{"a":1,"b":2}`},
		{name: "add replaces member", doc: `{"a":1}`, ops: `[{"op":"add","path":"/a","value":2}]`, want: `{"a":2}`},
		{name: "add dash appends", doc: `[1]`, ops: `[{"op":"add","path":"/-","value":2}]`, want: `[1,2]`},
		{name: "add at len", doc: `[1]`, ops: `[{"op":"add","path":"/1","value":2}]`, want: `[1,2]`},
		{name: "add insert", doc: `[1]`, ops: `[{"op":"add","path":"/0","value":2}]`, want: `[2,1]`},
		{name: "add past len", doc: `[1]`, ops: `[{"op":"add","path":"/2","value":2}]`, err: ErrInvalidIndex},
		{name: "add -1", doc: `[1]`, ops: `[{"op":"add","path":"/-1","value":2}]`, err: ErrInvalidIndex},
		{name: "add missing parent", doc: `{}`, ops: `[{"op":"add","path":"/a/b","value":2}]`, err: ErrPathNotFound},
		{name: "add null parent", doc: `{"a":null}`, ops: `[{"op":"add","path":"/a/b","value":2}]`, err: ErrNotContainer},
		{name: "add through dash", doc: `{"a":[]}`, ops: `[{"op":"add","path":"/a/-/b","value":2}]`, err: ErrPathNotFound},
		{name: "add through len", doc: `{"a":[]}`, ops: `[{"op":"add","path":"/a/0/b","value":2}]`, err: ErrPathNotFound},
		{name: "add through negative", doc: `{"a":[{}]}`, ops: `[{"op":"add","path":"/a/-1/b","value":2}]`, err: ErrInvalidIndex},
		{name: "add through element", doc: `{"a":[{}]}`, ops: `[{"op":"add","path":"/a/0/b","value":2}]`, want: `{"a":[{"b":2}]}`},
		{name: "add through scalar", doc: `{"a":1}`, ops: `[{"op":"add","path":"/a/b","value":2}]`, err: ErrNotContainer},
		{name: "add root", doc: `{"a":1}`, ops: `[{"op":"add","path":"","value":2}]`, want: `2`},
		{name: "replace", doc: `{"a":[1,2]}`, ops: `[{"op":"replace","path":"/a/1","value":3}]`, want: `{"a":[1,3]}`},
		{name: "replace -1", doc: `{"a":[1,2]}`, ops: `[{"op":"replace","path":"/a/-1","value":3}]`, err: ErrInvalidIndex},
		{name: "replace missing", doc: `{"a":[1,2]}`, ops: `[{"op":"replace","path":"/b","value":3}]`, err: ErrPathNotFound},
		{name: "replace out of range", doc: `{"a":[1,2]}`, ops: `[{"op":"replace","path":"/a/2","value":3}]`, err: ErrPathNotFound},
		{name: "remove", doc: `{"a":[1,2],"b":1}`, ops: `[{"op":"remove","path":"/a/0"},{"op":"remove","path":"/b"}]`, want: `{"a":[2]}`},
		{name: "remove missing", doc: `{"a":1}`, ops: `[{"op":"remove","path":"/b"}]`, err: ErrPathNotFound},
		{name: "remove missing parent", doc: `{"a":1}`, ops: `[{"op":"remove","path":"/b/c"}]`, err: ErrPathNotFound},
		{name: "remove through scalar", doc: `{"a":1}`, ops: `[{"op":"remove","path":"/a/c"}]`, err: ErrNotContainer},
		{name: "remove out of range", doc: `[1]`, ops: `[{"op":"remove","path":"/1"}]`, err: ErrPathNotFound},
		{name: "remove -1", doc: `[1]`, ops: `[{"op":"remove","path":"/-1"}]`, err: ErrInvalidIndex},
		{name: "remove dash", doc: `[1]`, ops: `[{"op":"remove","path":"/-"}]`, err: ErrPathNotFound},
		{name: "remove root", doc: `[1]`, ops: `[{"op":"remove","path":""}]`, err: ErrInvalidPointer},
		{name: "move", doc: `{"a":1}`, ops: `[{"op":"move","path":"/b"}]`, err: ErrUnsupportedOp},
		{name: "stops at first error", doc: `{"a":1}`, ops: `[{"op":"remove","path":"/a"},{"op":"remove","path":"/a"}]`, err: ErrPathNotFound},
		{name: "sequence", doc: `{"a":[]}`, ops: `[{"op":"add","path":"/a/-","value":{}},{"op":"add","path":"/a/0/x","value":[1]},{"op":"add","path":"/a/0/x/0","value":0}]`, want: `{"a":[{"x":[0,1]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := mustDecode(t, tt.doc)
			ops := opsFromJSON(mustDecode(t, tt.ops))
			got, err := ApplyRFC6902(doc, ops)
			if diff := cmp.Diff(mustDecode(t, tt.doc), doc); diff != "" {
				t.Errorf("input changed:\n%s", diff)
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) || got != nil {
					t.Errorf("ApplyRFC6902 = %v, %v; want error %v", encode(got), err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(mustDecode(t, tt.want), got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDocVersion: every write and every rollback gives a new version, which
// never comes back; reads, a rollback that undoes nothing and Release keep
// it. An owned container is changed in place, so its identity cannot say
// whether it changed: the version can.
func TestDocVersion(t *testing.T) {
	d := NewDoc(map[string]any{"m": map[string]any{"a": "1"}})
	seen := map[uint64]bool{d.Version(): true}
	step := func(what string, change bool, f func()) {
		t.Helper()
		before := d.Version()
		f()
		switch after := d.Version(); {
		case !change && after != before:
			t.Errorf("%s: version %d -> %d, want it kept", what, before, after)
		case change && (after == before || seen[after]):
			t.Errorf("%s: version %d -> %d, want a new one", what, before, after)
		}
		seen[d.Version()] = true
	}
	step("add", true, func() { mustApply(t, d, Operation{Op: Add, Path: Pointer{"m", "b"}, Value: "2"}) })
	m := d.Root().(map[string]any)["m"].(map[string]any)
	mark := d.Mark()
	step("add in place", true, func() { mustApply(t, d, Operation{Op: Add, Path: Pointer{"m", "c"}, Value: "3"}) })
	if m2 := d.Root().(map[string]any)["m"].(map[string]any); fmt.Sprintf("%p", m2) != fmt.Sprintf("%p", m) {
		t.Fatal("the owned map was copied again: the in-place case is not tested")
	}
	step("read", false, func() { _ = d.Root() })
	step("rollback", true, func() { d.Rollback(mark) })
	step("rollback of nothing", false, func() { d.Rollback(d.Mark()) })
	step("release", false, func() { d.Release() })
	step("add after the rollback", true, func() { mustApply(t, d, Operation{Op: Add, Path: Pointer{"m", "c"}, Value: "4"}) })
}

func mustApply(t *testing.T, d *Doc, op Operation) {
	t.Helper()
	if err := d.Apply(op); err != nil {
		t.Fatal(err)
	}
}

// TestIdentity checks identity's reading of a map's pointer against
// reflection's, and that a copy of a map is another identity.
func TestIdentity(t *testing.T) {
	for _, m := range []map[string]any{{}, {"a": 1}, make(map[string]any, 100)} {
		if got, want := identity(m), reflect.ValueOf(m).UnsafePointer(); got != want {
			t.Errorf("identity(%v) = %p, reflect gives %p", m, got, want)
		}
		if identity(m) == identity(maps.Clone(m)) {
			t.Errorf("a copy of %v has its identity", m)
		}
	}
	if identity(map[string]any(nil)) != nil {
		t.Error("a nil map has an identity")
	}
}

// TestDocLendCopies edits trees decoded through one value.Storage, one
// after the other, with a Doc lending its copies from it, the Storage
// recycled after each: the results and the diffs are those of a Doc
// without it, the trees decoded stay as they were, and the copies come
// back to the Storage with the tree's maps (and are reused, cleared).
func TestDocLendCopies(t *testing.T) {
	ops := []Operation{
		{Op: Add, Path: mustPointer(t, "/metadata/labels/team"), Value: "a"},
		{Op: Add, Path: mustPointer(t, "/metadata/annotations"), Value: map[string]any{"x": "y"}},
		{Op: Replace, Path: mustPointer(t, "/spec/containers/0/image"), Value: "nginx:2"},
		{Op: Remove, Path: mustPointer(t, "/spec/containers/0/ports/0/name")},
	}
	const doc = `{"metadata":{"name":"p","labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1","ports":[{"name":"http","containerPort":80}]}]}}`
	// Six maps decoded (the root, metadata, labels, spec, the container
	// and its port), the six copied (the arrays are copied as slices),
	// but for the port's copy, a member removed from it: clearing it would
	// keep the room it had, so it is left to its tree (value.Storage.Shrunk).
	const maps = 11
	apply := func(d *Doc) {
		t.Helper()
		for _, op := range ops {
			if err := d.Apply(op); err != nil {
				t.Fatal(err)
			}
		}
	}
	var st value.Storage
	var d Doc
	for round := range 3 {
		ref := NewDoc(mustDecode(t, doc))
		apply(ref)
		tree, _, err := st.DecodeOmitting([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		d.Reset(tree, false)
		d.LendCopies(&st)
		apply(&d)
		if diff := cmp.Diff(ref.Root(), d.Root()); diff != "" {
			t.Fatalf("round %d: result (-without +with lent copies):\n%s", round, diff)
		}
		if diff := cmp.Diff(mustDecode(t, doc), tree); diff != "" {
			t.Fatalf("round %d: the decoded tree changed (-want +got):\n%s", round, diff)
		}
		if got, want := Diff(tree, d.Root()), Diff(mustDecode(t, doc), ref.Root()); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: Diff = %v, want %v", round, got, want)
		}
		if n := st.Free(); round > 0 && n != 0 {
			t.Errorf("round %d: %d maps left free after decoding and copying, want all %d reused", round, n, maps)
		}
		if round == 2 {
			// A rule that adds many members and fails (rolled back)
			// leaves the copy it grew to its tree too.
			mark := d.Mark()
			for i := range 100 {
				if err := d.Apply(Operation{Op: Add, Path: mustPointer(t, fmt.Sprintf("/metadata/labels/k%d", i)), Value: "v"}); err != nil {
					t.Fatal(err)
				}
			}
			d.Rollback(mark)
			if diff := cmp.Diff(ref.Root(), d.Root()); diff != "" {
				t.Fatalf("rolled back (-want +got):\n%s", diff)
			}
			st.Recycle()
			if n := st.Free(); n != maps-1 {
				t.Errorf("after a rollback from 101 labels, Free() = %d, want %d (the labels' copy not taken back)", n, maps-1)
			}
			continue
		}
		st.Recycle()
		if n := st.Free(); n != maps {
			t.Errorf("round %d: Free() = %d after recycling, want %d (the copies with the decoded maps)", round, n, maps)
		}
	}
}
