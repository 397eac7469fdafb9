package patch

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modwright/modwright/internal/value"
)

var diffCases = []struct {
	name     string
	a, b     string
	want     string // the expected patch as JSON
	anyPatch bool   // only check that the patch works
}{
	{name: "equal", a: `{"a":[1,{"b":null}]}`, b: `{"a":[1,{"b":null}]}`, want: `[]`},
	{name: "equal numbers in other text", a: `{"a":1,"b":[2.50]}`, b: `{"a":1.0,"b":[2.5]}`, want: `[]`},
	{name: "member added", a: `{"a":1}`, b: `{"a":1,"b":{"c":2}}`, want: `[{"op":"add","path":"/b","value":{"c":2}}]`},
	{name: "member removed", a: `{"a":1,"b":2}`, b: `{"a":1}`, want: `[{"op":"remove","path":"/b"}]`},
	{name: "member changed", a: `{"a":1,"b":2}`, b: `{"a":1,"b":3}`, want: `[{"op":"replace","path":"/b","value":3}]`},
	{name: "member changed type", a: `{"a":{"x":1}}`, b: `{"a":[1]}`, want: `[{"op":"replace","path":"/a","value":[1]}]`},
	{name: "member to null", a: `{"a":1}`, b: `{"a":null}`, want: `[{"op":"replace","path":"/a","value":null}]`},
	{name: "nested change", a: `{"m":{"l":{"c":"r"}}}`, b: `{"m":{"l":{"c":"b"}}}`, want: `[{"op":"replace","path":"/m/l/c","value":"b"}]`},
	{name: "sorted members", a: `{"b":1,"d":1,"c":1}`, b: `{"a":1,"c":2,"e":1}`,
		want: `[{"op":"remove","path":"/b"},{"op":"replace","path":"/c","value":2},{"op":"remove","path":"/d"},{"op":"add","path":"/a","value":1},{"op":"add","path":"/e","value":1}]`},
	{name: "escaped keys", a: `{"a/b":1,"c~d":1}`, b: `{"a/b":2}`,
		want: `[{"op":"replace","path":"/a~1b","value":2},{"op":"remove","path":"/c~0d"}]`},
	{name: "array append", a: `{"l":[1,2]}`, b: `{"l":[1,2,3]}`, want: `[{"op":"add","path":"/l/2","value":3}]`},
	{name: "array prepend", a: `{"l":["a","b"]}`, b: `{"l":["z","a","b"]}`, want: `[{"op":"add","path":"/l/0","value":"z"}]`},
	{name: "array element removed from the middle", a: `{"l":["a","b","c"]}`, b: `{"l":["a","c"]}`, want: `[{"op":"remove","path":"/l/1"}]`},
	{name: "array elements removed", a: `{"l":["the first element is quite long","b","c","d","the last element is also long"]}`, b: `{"l":["the first element is quite long","the last element is also long"]}`,
		want: `[{"op":"remove","path":"/l/3"},{"op":"remove","path":"/l/2"},{"op":"remove","path":"/l/1"}]`},
	{name: "array short elements removed is replaced", a: `{"l":["a","b","c","d","e"]}`, b: `{"l":["a","e"]}`,
		want: `[{"op":"replace","path":"/l","value":["a","e"]}]`},
	{name: "array elements added", a: `{"l":["first element","last element"]}`, b: `{"l":["first element","b","c","last element"]}`,
		want: `[{"op":"add","path":"/l/1","value":"b"},{"op":"add","path":"/l/2","value":"c"}]`},
	{name: "array insert in the middle", a: `["a","c"]`, b: `["a","b","c"]`, want: `[{"op":"add","path":"/1","value":"b"}]`},
	{name: "array element changed", a: `{"l":[{"n":"a","v":1},{"n":"b","v":1}]}`, b: `{"l":[{"n":"a","v":1},{"n":"b","v":2}]}`,
		want: `[{"op":"replace","path":"/l/1/v","value":2}]`},
	{name: "array all changed is replaced", a: `{"l":[1,2,3]}`, b: `{"l":[4,5,6]}`, want: `[{"op":"replace","path":"/l","value":[4,5,6]}]`},
	{name: "array emptied", a: `{"l":[1,2,3]}`, b: `{"l":[]}`, want: `[{"op":"replace","path":"/l","value":[]}]`},
	{name: "array filled", a: `{"l":[]}`, b: `{"l":["x","y"]}`, want: `[{"op":"replace","path":"/l","value":["x","y"]}]`},
	{name: "array one element removed", a: `{"l":["x"]}`, b: `{"l":[]}`, want: `[{"op":"remove","path":"/l/0"}]`},
	{name: "array change and growth", a: `{"l":[{"k":1,"big":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}]}`, b: `{"l":[{"k":2,"big":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},3]}`,
		want: `[{"op":"replace","path":"/l/0/k","value":2},{"op":"add","path":"/l/1","value":3}]`},
	{name: "root type change", a: `{"a":1}`, b: `[1]`, want: `[{"op":"replace","path":"","value":[1]}]`},
	{name: "root scalar change", a: `1`, b: `2`, want: `[{"op":"replace","path":"","value":2}]`},
	{name: "root null", a: `{"a":1}`, b: `null`, want: `[{"op":"replace","path":"","value":null}]`},
	{name: "root array", a: `[[1,2],[3]]`, b: `[[1,2,3],[3]]`, want: `[{"op":"add","path":"/0/2","value":3}]`},
	{name: "huge numbers", a: `{"a":1e400,"b":1e400}`, b: `{"a":1e400,"b":2e400}`, want: `[{"op":"replace","path":"/b","value":2e400}]`},
	{name: "big integers", a: `[9007199254740993]`, b: `[9007199254740992]`, want: `[{"op":"replace","path":"/0","value":9007199254740992}]`},
	{name: "empty key", a: `{"":{"":1}}`, b: `{"":{"":2}}`, want: `[{"op":"replace","path":"//","value":2}]`},
	{name: "kubernetes", anyPatch: true,
		a: `{"metadata":{"name":"x","labels":{"app":"x"}},"spec":{"containers":[{"name":"a","image":"a:1","env":[{"name":"A","value":"1"}]},{"name":"b","image":"b:1"}]}}`,
		b: `{"metadata":{"name":"x","labels":{"app":"x","color":"blue"}},"spec":{"containers":[{"name":"a","image":"a:2","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]},{"name":"sidecar","image":"s:1"},{"name":"b","image":"b:1"}]}}`},
}

func TestDiff(t *testing.T) {
	for _, tt := range diffCases {
		t.Run(tt.name, func(t *testing.T) {
			a, b := mustDecode(t, tt.a), mustDecode(t, tt.b)
			ops := Diff(a, b)
			if !tt.anyPatch {
				var want []Operation
				if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, ops, cmpopts.EquateEmpty()); diff != "" {
					got, _ := json.Marshal(ops)
					t.Errorf("Diff = %s\n(-want +got):\n%s", got, diff)
				}
			}
			checkDiff(t, a, b, ops)
		})
	}
}

// checkDiff checks that ops turns a into b and that neither a nor b was
// changed by Diff, nor can be changed through ops.
func checkDiff(t *testing.T, a, b any, ops []Operation) {
	t.Helper()
	aCopy, bCopy := value.DeepCopy(a), value.DeepCopy(b)
	got, err := ApplyRFC6902(a, ops)
	if err != nil {
		t.Fatalf("Diff(%s, %s) = %v: does not apply: %v", encode(a), encode(b), ops, err)
	}
	if !value.Equal(got, b) {
		t.Fatalf("Diff(%s, %s) = %v: gives %s", encode(a), encode(b), ops, encode(got))
	}
	// Through JSON too: what an API server receives.
	text, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	var back []Operation
	if err := json.Unmarshal(text, &back); err != nil {
		t.Fatalf("Unmarshal(%s): %v", text, err)
	}
	if got, err := ApplyRFC6902(a, back); err != nil || !value.Equal(got, b) {
		t.Fatalf("Diff(%s, %s) = %s via JSON: %s, %v", encode(a), encode(b), text, encode(got), err)
	}
	// Scribble over every value of the ops: the inputs must not change.
	for _, op := range ops {
		scribble(op.Value)
	}
	if diff := cmp.Diff(aCopy, a); diff != "" {
		t.Fatalf("original changed:\n%s", diff)
	}
	if diff := cmp.Diff(bCopy, b); diff != "" {
		t.Fatalf("modified changed or aliased by the patch:\n%s", diff)
	}
}

func scribble(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			scribble(e)
			t[k] = "scribbled"
		}
		t["scribbled"] = true
	case []any:
		for i, e := range t {
			scribble(e)
			t[i] = "scribbled"
		}
	}
}

// copyOps copies operations, their paths and values.
func copyOps(ops []Operation) []Operation {
	out := make([]Operation, len(ops))
	for i, op := range ops {
		out[i] = Operation{Op: op.Op, Path: append(Pointer(nil), op.Path...), Value: value.DeepCopy(op.Value)}
	}
	return out
}

// TestDiffRandom diffs random trees against random modifications of them.
func TestDiffRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	iterations := 2000
	if testing.Short() {
		iterations = 200
	}
	total, replaced := 0, 0
	var reused Differ // one Differ for every pair: the same patches as Diff
	var prev, prevCopy []Operation
	var st OpStorage
	for it := 0; it < iterations; it++ {
		a := randDoc(r, 5)
		b := mutate(r, a, 5)
		if r.IntN(20) == 0 {
			b = randValue(r, 5) // unrelated
		}
		if ops := Diff(a, a); len(ops) != 0 {
			t.Fatalf("Diff(x, x) = %v for %s", ops, encode(a))
		}
		ops := Diff(a, b)
		if again := Diff(a, b); !cmp.Equal(ops, again) {
			t.Fatalf("Diff is not deterministic: %v then %v", ops, again)
		}
		again := reused.Diff(a, b)
		if !cmp.Equal(ops, again) {
			t.Fatalf("a reused Differ: %v, Diff: %v", again, ops)
		}
		// The Differ's next patch leaves this one as it is (nothing of
		// its working storage is in the result).
		if it > 0 && !cmp.Equal(prev, prevCopy, cmpopts.EquateEmpty()) {
			t.Fatalf("a reused Differ's patch changed with the next: %v, was %v", prev, prevCopy)
		}
		prev, prevCopy = again, copyOps(again)
		// Into storage reused from pair to pair (DiffTo), cleared or not:
		// the same patch.
		if it%3 == 0 {
			st.Clear()
		}
		if into := reused.DiffTo(&st, a, b); !cmp.Equal(ops, into, cmpopts.EquateEmpty()) {
			t.Fatalf("DiffTo reused storage: %v, Diff: %v", into, ops)
		}
		checkDiff(t, a, b, ops)
		total += len(ops)
		if len(ops) == 1 && len(ops[0].Path) == 0 {
			replaced++
		}
	}
	t.Logf("%d iterations, %d operations, %d whole-document replaces", iterations, total, replaced)
}

// TestDiffSize checks that a diff is never much larger than replacing the
// whole modified document.
func TestDiffSize(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for it := 0; it < 1000; it++ {
		a := randDoc(r, 4)
		b := mutate(r, a, 4)
		ops := Diff(a, b)
		if len(ops) == 0 {
			continue
		}
		text, _ := json.Marshal(ops)
		whole, _ := json.Marshal([]Operation{{Op: Replace, Value: b}})
		// Objects are always diffed member by member, so allow slack for
		// the per-member path overhead.
		if len(text) > 2*len(whole)+200 {
			t.Errorf("Diff(%s, %s) = %s: %d bytes, whole replace %d", encode(a), encode(b), text, len(text), len(whole))
		}
	}
}

// TestEqualSharing: equal, which stops at shared containers, agrees with
// value.Equal on random trees and on what a Doc made of them (sharing the
// subtrees it did not touch).
func TestEqualSharing(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for it := 0; it < 2000; it++ {
		a := randDoc(r, 4)
		d := NewDoc(a)
		for range r.IntN(4) {
			_ = d.Apply(randOp(r, d.Root()))
		}
		for _, b := range []any{d.Root(), value.DeepCopy(a), randDoc(r, 4)} {
			if got, want := equal(a, b), value.Equal(a, b); got != want {
				t.Fatalf("iteration %d: equal(%s, %s) = %v, value.Equal says %v", it, encode(a), encode(b), got, want)
			}
		}
	}
}

// TestDiffPaths: on random trees and random operations applied to a frozen
// Doc (through objects and arrays, the standard semantics and the
// parent-creating one), DiffPaths along the operations' paths gives Diff's
// operations, in Diff's order.
func TestDiffPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	keys := []string{"a", "b", "c", "d"}
	scalars := []any{"x", "y", json.Number("1"), true, nil}
	var tree func(depth int) any
	tree = func(depth int) any {
		switch {
		case depth > 0 && r.IntN(4) == 0:
			l := []any{}
			for range r.IntN(4) {
				l = append(l, tree(depth-1))
			}
			return l
		case depth > 0 && r.IntN(2) == 0:
			m := map[string]any{}
			for _, k := range keys[:1+r.IntN(len(keys))] {
				m[k] = tree(depth - 1)
			}
			return m
		}
		return scalars[r.IntN(len(scalars))]
	}
	tokens := append(slices.Clone(keys), "0", "1", "-")
	var differ Differ
	compared, through := 0, 0
	for it := 0; it < 60000; it++ {
		root, ok := tree(4).(map[string]any)
		if !ok {
			continue
		}
		doc := NewDoc(value.DeepCopy(root))
		before := doc.Freeze()
		apply := doc.ApplyRFC6902
		if r.IntN(2) == 0 {
			apply = doc.Apply
		}
		var paths []Pointer
		applied := true
		for range 1 + r.IntN(4) {
			var p Pointer
			for range r.IntN(5) {
				p = append(p, tokens[r.IntN(len(tokens))])
			}
			op := Operation{Op: []OpType{Add, Add, Replace, Remove, Test}[r.IntN(5)], Path: p}
			if op.Op != Remove {
				op.Value = tree(2)
			}
			if err := apply(op); err != nil {
				applied = false
				break
			}
			if op.Op != Test {
				paths = append(paths, p)
			}
		}
		if !applied {
			continue
		}
		compared++
		for _, p := range paths {
			if slices.ContainsFunc(p, func(tok string) bool { return tok == "0" || tok == "1" || tok == "-" }) {
				through++
				break
			}
		}
		want, _ := json.Marshal(Diff(before, doc.Root()))
		got, _ := json.Marshal(differ.DiffPaths(before, doc.Root(), paths))
		if string(got) != string(want) {
			b, _ := json.Marshal(before)
			a, _ := json.Marshal(doc.Root())
			t.Fatalf("%s -> %s along %v:\nDiffPaths %s\nDiff      %s", b, a, paths, got, want)
		}
	}
	if compared < 3000 || through < 1500 {
		t.Fatalf("only %d patches compared, %d through arrays", compared, through)
	}
}

// BenchmarkDiffPaths: a patch's many operations, and one deep path, diffed
// along their paths (each path is looked at once per level it goes through).
func BenchmarkDiffPaths(b *testing.B) {
	for _, bc := range []struct {
		name  string
		paths int
		depth int
	}{{"paths=2000/depth=3", 2000, 3}, {"paths=1/depth=2000", 1, 2000}} {
		b.Run(bc.name, func(b *testing.B) {
			// The objects on the way are there: the operations add members.
			way := Pointer{"metadata", "labels"}
			for len(way) < bc.depth {
				way = append(way, "n")
			}
			root := map[string]any{}
			at := root
			for _, k := range way {
				m := map[string]any{}
				at[k] = m
				at = m
			}
			doc := NewDoc(root)
			before := doc.Freeze()
			var paths []Pointer
			for i := range bc.paths {
				p := append(slices.Clone(way), "l"+strconv.Itoa(i))
				if err := doc.Apply(Operation{Op: Add, Path: p, Value: "x"}); err != nil {
					b.Fatal(err)
				}
				paths = append(paths, p)
			}
			var d Differ
			b.ReportAllocs()
			for b.Loop() {
				if ops := d.DiffPaths(before, doc.Root(), paths); len(ops) != bc.paths {
					b.Fatalf("%d operations, want %d", len(ops), bc.paths)
				}
			}
		})
	}
}
