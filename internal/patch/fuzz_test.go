package patch

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/value"
)

// FuzzApply applies a JSON array of operations to a JSON document. Applying
// must never panic and must agree with the reference implementation, a
// failed operation must leave the document unchanged and return a
// classified *OpError, rolling back one operation must restore the
// document as it was before it, and rolling back to the initial mark must
// restore the original.
func FuzzApply(f *testing.F) {
	for _, tc := range applyCases {
		op, err := json.Marshal(tc.operation(f))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tc.docText(), "["+string(op)+"]")
	}
	f.Add(`{"a":[1,{"b":[]}]}`, `[{"op":"add","path":"/a/1/b/-","value":1},{"op":"add","path":"/a/-/c/0","value":{}},{"op":"remove","path":"/a/0"},{"op":"replace","path":"/a/-1","value":null},{"op":"add","path":"/a/0/x","value":2}]`)
	f.Add(`null`, `[{"op":"add","path":"/a/-1/b/0/c","value":[1]},{"op":"remove","path":"/a/0/b"},{"op":"add","path":"","value":3}]`)
	// Operations under the objects the last ones went to (Doc's places),
	// after what replaces or moves those objects.
	f.Add(`{"m":{"l":{"a":"1"}},"c":[{"p":[{"n":1}]},{"p":[{"n":2}]}]}`, `[{"op":"add","path":"/m/l/b","value":"2"},{"op":"add","path":"/m/l/c","value":"3"},{"op":"replace","path":"/m","value":{"l":{}}},{"op":"add","path":"/m/l/d","value":"4"},{"op":"replace","path":"/c/-1/p/0/n","value":5},{"op":"add","path":"/c/-","value":{"p":[{"n":3}]}},{"op":"replace","path":"/c/-1/p/0/n","value":6},{"op":"remove","path":"/c/0"},{"op":"replace","path":"/c/0/p/0/n","value":7},{"op":"add","path":"/c/0","value":{"p":[{"n":0}]}},{"op":"replace","path":"/c/0/p/0/n","value":8}]`)
	f.Fuzz(func(t *testing.T, docText, opsText string) {
		orig, ops, ok := fuzzInput(docText, opsText)
		if !ok {
			return
		}
		input := value.DeepCopy(orig)
		d := NewDoc(input)
		start := d.Mark()
		for _, op := range ops {
			before := value.DeepCopy(d.Root())
			mark := d.Mark()
			want, wantErr := refApply(before, op)
			err := d.Apply(op)
			if sentinel(err) != wantErr {
				t.Fatalf("Apply(%v) on %s: error %v, reference %v", op, encode(before), err, wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(want, d.Root()); diff != "" {
					t.Fatalf("Apply(%v) on %s (-reference +got):\n%s", op, encode(before), diff)
				}
			}
			if err != nil {
				if sentinel(err) == nil {
					t.Fatalf("Apply(%v): unclassified error %v", op, err)
				}
				if _, ok := err.(*OpError); !ok {
					t.Fatalf("Apply(%v): error %T is not an *OpError", op, err)
				}
				if diff := cmp.Diff(before, d.Root()); diff != "" {
					t.Fatalf("failed Apply(%v) changed the document:\n%s", op, diff)
				}
				continue
			}
			after := value.DeepCopy(d.Root())
			d.Rollback(mark)
			if diff := cmp.Diff(before, d.Root()); diff != "" {
				t.Fatalf("Rollback after Apply(%v) (-before +got):\n%s", op, diff)
			}
			if err := d.Apply(op); err != nil {
				t.Fatalf("Apply(%v) failed the second time: %v", op, err)
			}
			if diff := cmp.Diff(after, d.Root()); diff != "" {
				t.Fatalf("Apply(%v) differs the second time:\n%s", op, diff)
			}
		}
		// Copy-on-write: the input is never modified, and the diff (which
		// skips shared subtrees) still reproduces the result.
		if diff := cmp.Diff(orig, input); diff != "" {
			t.Fatalf("the Doc modified its input (-orig +now):\n%s", diff)
		}
		result := value.DeepCopy(d.Root())
		p := Diff(input, d.Root())
		got, err := ApplyRFC6902(input, p)
		if err != nil {
			t.Fatalf("the diff %v does not apply: %v", p, err)
		}
		if diff := cmp.Diff(result, got); diff != "" {
			t.Fatalf("the diff does not reproduce the result (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(orig, input); diff != "" {
			t.Fatalf("ApplyRFC6902 modified its input (-orig +now):\n%s", diff)
		}
		d.Rollback(start)
		if diff := cmp.Diff(orig, d.Root()); diff != "" {
			t.Fatalf("Rollback to the start (-orig +got):\n%s", diff)
		}
	})
}

// FuzzDiff diffs two JSON documents: the patch must turn the first into the
// second, and diffing a document with itself must give nothing.
func FuzzDiff(f *testing.F) {
	for _, tc := range diffCases {
		f.Add(tc.a, tc.b)
	}
	f.Add(baseDoc, `{"a":{"b":2},"arr":[1,3],"n":{"x":null},"s":"str","nested":[{"x":1,"y":[]},{"x":2}],"empty":[[]],"obj":{"~":1}}`)
	f.Fuzz(func(t *testing.T, aText, bText string) {
		a, err := value.Decode([]byte(aText))
		if err != nil {
			return
		}
		b, err := value.Decode([]byte(bText))
		if err != nil {
			return
		}
		if ops := Diff(a, a); len(ops) != 0 {
			t.Fatalf("Diff(x, x) = %v", ops)
		}
		checkDiff(t, a, b, Diff(a, b))
	})
}

// FuzzParsePointer checks that a parsed pointer renders back to its text,
// as a JSON string too (appendJSON, as value.AppendString quotes it), and
// that every token survives escaping.
func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a/b", "/a~1b/~0", "/~01", "/~", "/a~2", "a", "/metadata/annotations/bench.modwright.io~1rule-00010", "/abcdefgh~0ijklmnop/qrstuvwx\"yz/\u00e9\x01/abcdefghijklmnop"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePointer(s)
		if err != nil {
			return
		}
		if got := p.String(); got != s {
			t.Fatalf("ParsePointer(%q).String() = %q", s, got)
		}
		// value.AppendString is held to encoding/json (its own fuzz target).
		if got, want := p.appendJSON([]byte("x")), value.AppendString([]byte("x"), s); !bytes.Equal(got, want) {
			t.Fatalf("ParsePointer(%q).appendJSON = %s, value.AppendString = %s", s, got, want)
		}
		for _, tok := range p {
			back, err := ParsePointer("/" + EscapeToken(tok))
			if err != nil || len(back) != 1 || back[0] != tok {
				t.Fatalf("token %q does not survive escaping: %q, %v", tok, back, err)
			}
		}
	})
}

// FuzzDiffPaths applies operations to a frozen Doc (standard semantics)
// and diffs along their paths: DiffPaths must give Diff's operations, in
// Diff's order.
func FuzzDiffPaths(f *testing.F) {
	f.Add(`{"a":[1,{"b":[]}],"c":{"d":1}}`, `[{"op":"add","path":"/a/1/b/-","value":1},{"op":"replace","path":"/c/d","value":{}},{"op":"remove","path":"/a/0"}]`)
	f.Add(`{"s":{"t":{"c":[{"n":"x","p":[{"c":80}]}]}}}`, `[{"op":"replace","path":"/s/t/c/0/p/0/c","value":8080},{"op":"add","path":"/s/u","value":[1]}]`)
	var differ Differ
	f.Fuzz(func(t *testing.T, docText, opsText string) {
		orig, ops, ok := fuzzInput(docText, opsText)
		if !ok {
			return
		}
		doc := NewDoc(orig)
		before := doc.Freeze()
		var paths []Pointer
		for _, op := range ops {
			if doc.ApplyRFC6902(op) != nil {
				return
			}
			if op.Op != Test {
				paths = append(paths, op.Path)
			}
		}
		want, _ := json.Marshal(Diff(before, doc.Root()))
		got, _ := json.Marshal(differ.DiffPaths(before, doc.Root(), paths))
		if string(got) != string(want) {
			t.Fatalf("along %v:\nDiffPaths %s\nDiff      %s", paths, got, want)
		}
	})
}

// FuzzDiffChanges applies standard operations that MemberChanges takes:
// DiffChanges must give Diff's operations (as a set).
func FuzzDiffChanges(f *testing.F) {
	f.Add(`{"s":{"t":{"c":[{"n":"x","p":[{"c":80,"h":1}]},{"w":"q"}]}}}`, `[{"op":"replace","path":"/s/t/c/0/p/0/c","value":8080},{"op":"remove","path":"/s/t/c/0/p/0/h"},{"op":"add","path":"/s/t/c/1/w","value":"long value"}]`)
	f.Add(`{"a":{"b":1},"l":[{"x":{}}]}`, `[{"op":"add","path":"/a/c","value":[1]},{"op":"replace","path":"/l/0/x","value":"y"}]`)
	f.Fuzz(func(t *testing.T, docText, opsText string) {
		orig, ops, ok := fuzzInput(docText, opsText)
		if !ok {
			return
		}
		changes, ok := MemberChanges(orig, ops, nil)
		if !ok {
			return
		}
		doc := NewDoc(orig)
		for _, op := range ops {
			if doc.ApplyRFC6902(op) != nil {
				return
			}
		}
		got, want := renderSorted(DiffChanges(doc.Root(), changes)), renderSorted(Diff(orig, doc.Root()))
		if !slices.Equal(got, want) {
			t.Fatalf("%v:\nDiffChanges %v\nDiff        %v", ops, got, want)
		}
	})
}
