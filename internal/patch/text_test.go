package patch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/value"
)

// textStep applies op to t and to d, a Doc of the same tree, and checks
// Text's promise: applied, the Doc applies it too and t is the text of the
// Doc's tree; refused, t is unchanged. It returns whether t applied op;
// when it did not, t goes on from the Doc's tree (as the engine does, when
// its text is canonical) and reset reports whether it could.
func textStep(t *testing.T, tx *Text, d *Doc, op Operation) (applied, reset bool) {
	t.Helper()
	before := tx.String()
	applied = tx.Apply(op)
	err := d.Apply(op)
	want, encErr := value.AppendJSON(nil, d.Root())
	switch {
	case !applied && tx.String() != before:
		t.Fatalf("refused %v changed %s into %s", op, before, tx.String())
	case applied && err != nil:
		t.Fatalf("%v on %s: Text applied it, Doc: %v", op, before, err)
	case applied && (encErr != nil || tx.String() != string(want)):
		t.Fatalf("%v on %s: Text %s, Doc %s (%v)", op, before, tx.String(), want, encErr)
	}
	if applied {
		return true, true
	}
	return false, encErr == nil && tx.Reset(string(want))
}

var textKeys = []string{"metadata", "labels", "annotations", "a", "b", "zz", "0", "-", "é", `q"`, "x~y"}

// textOp is an operation of the kinds Text does, mostly: set, replace or
// remove a member along existing objects, or below a missing one.
func textOp(r *rand.Rand, doc any) Operation {
	if r.IntN(3) == 0 {
		return randOp(r, doc)
	}
	var p Pointer
	cur := doc
	for r.IntN(4) != 0 {
		if a, ok := cur.([]any); ok && len(a) > 0 {
			i := r.IntN(len(a))
			tok := strconv.Itoa(i)
			if r.IntN(3) == 0 {
				tok = strconv.Itoa(i - len(a)) // from the end
			}
			p, cur = append(p, tok), a[i]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok || len(m) == 0 {
			break
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		k := keys[r.IntN(len(keys))]
		p, cur = append(p, k), m[k]
	}
	if _, ok := cur.([]any); ok && r.IntN(2) == 0 {
		p = append(p, oddTokens[r.IntN(len(oddTokens))])
	}
	for n := r.IntN(3) - 1; n >= 0 || len(p) == 0; n-- {
		p = append(p, textKeys[r.IntN(len(textKeys))])
	}
	op := Operation{Op: []OpType{Add, Add, Add, Replace, Remove}[r.IntN(5)], Path: p}
	if op.Op != Remove {
		switch r.IntN(8) {
		case 0:
			op.Value = []float64{1.5, 1e21, -0.0, 3}[r.IntN(4)]
		case 1:
			op.Value = int64(r.IntN(100) - 50)
		default:
			op.Value = randValue(r, 2)
		}
	}
	return op
}

// TestText holds Text to a Doc of the same tree (the text AppendJSON writes
// for it) over random objects and operations, singly and in groups rolled
// back, and checks that it does most of them itself.
func TestText(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	var tx Text
	docs, ops, applied := 0, 0, map[OpType]int{}
	for it := 0; it < 3000; it++ {
		doc, text, ok := randObjectText(t, r)
		if !ok {
			continue
		}
		_, lazy := value.DecodeLazy(string(text) + "\n")
		if tx.Reset(string(text)+"\n") != lazy {
			t.Fatalf("Reset(%s) disagrees with DecodeLazy (%v)", text, lazy)
		}
		if !lazy {
			continue
		}
		docs++
		d := NewOwnedDoc(value.DeepCopy(doc))
		for k := 0; k < 8; k++ {
			// A group of operations, rolled back now and then as a
			// rule's are when one fails.
			tx.Mark()
			mark, before := d.Mark(), tx.String()
			done := true
			for n := 1 + r.IntN(3); n > 0 && done; n-- {
				op := textOp(r, d.Root())
				ops++
				ok, reset := textStep(t, &tx, d, op)
				if ok {
					applied[op.Op]++
				} else if !reset {
					done = false
				}
			}
			if !done {
				break
			}
			if r.IntN(4) == 0 {
				tx.Rollback()
				d.Rollback(mark)
				if tx.String() != before {
					// Rollback after a reset: the text is the Doc's again.
					want, _ := value.AppendJSON(nil, d.Root())
					if !tx.Reset(string(want)) {
						break
					}
				}
				if want, _ := value.AppendJSON(nil, d.Root()); tx.String() != string(want) {
					t.Fatalf("after Rollback: text %s, Doc %s", tx.String(), want)
				}
			}
		}
	}
	total := applied[Add] + applied[Replace] + applied[Remove]
	t.Logf("%d documents, %d operations, %d done as text (%v)", docs, ops, total, applied)
	if docs < 1000 || total < ops/3 || applied[Add] < 1000 || applied[Replace] < 300 || applied[Remove] < 500 {
		t.Fatalf("too few operations done as text: %d of %d on %d documents (%v)", total, ops, docs, applied)
	}
}

// TestTextCases: the edits of a last-applied configuration, one by one.
func TestTextCases(t *testing.T) {
	const la = `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"},"spec":{"containers":[{"image":"x"}]}}` + "\n"
	for _, tc := range []struct {
		name string
		op   Operation
		want string // "" when refused
	}{
		{"label added after", Operation{Op: Add, Path: Pointer{"metadata", "labels", "b"}, Value: "v"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a","b":"v"},"name":"p"},"spec":{"containers":[{"image":"x"}]}}`},
		{"label added before", Operation{Op: Add, Path: Pointer{"metadata", "labels", "a"}, Value: "v"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"a":"v","app":"a"},"name":"p"},"spec":{"containers":[{"image":"x"}]}}`},
		{"label replaced", Operation{Op: Replace, Path: Pointer{"metadata", "labels", "app"}, Value: map[string]any{"z": 1.5, "b": nil}},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":{"b":null,"z":1.5}},"name":"p"},"spec":{"containers":[{"image":"x"}]}}`},
		{"only label removed", Operation{Op: Remove, Path: Pointer{"metadata", "labels", "app"}},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{},"name":"p"},"spec":{"containers":[{"image":"x"}]}}`},
		{"last member removed", Operation{Op: Remove, Path: Pointer{"spec"}},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"}}`},
		{"first member removed", Operation{Op: Remove, Path: Pointer{"apiVersion"}},
			`{"kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"},"spec":{"containers":[{"image":"x"}]}}`},
		{"parents made", Operation{Op: Add, Path: Pointer{"metadata", "annotations", "a", "b"}, Value: "v"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"a":{"b":"v"}},"labels":{"app":"a"},"name":"p"},"spec":{"containers":[{"image":"x"}]}}`},
		{"remove below a scalar", Operation{Op: Remove, Path: Pointer{"kind", "x"}}, la[:len(la)-1]},
		{"remove below a missing member", Operation{Op: Remove, Path: Pointer{"status", "x"}}, la[:len(la)-1]},
		{"an array on the way", Operation{Op: Add, Path: Pointer{"spec", "containers", "-1", "name"}, Value: "c"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"},"spec":{"containers":[{"image":"x","name":"c"}]}}`},
		{"an element replaced", Operation{Op: Replace, Path: Pointer{"spec", "containers", "0"}, Value: "c"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"},"spec":{"containers":["c"]}}`},
		{"an element inserted first", Operation{Op: Add, Path: Pointer{"spec", "containers", "0"}, Value: "c"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"},"spec":{"containers":["c",{"image":"x"}]}}`},
		{"an element appended", Operation{Op: Add, Path: Pointer{"spec", "containers", "-"}, Value: "c"},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"},"spec":{"containers":[{"image":"x"},"c"]}}`},
		{"the only element removed", Operation{Op: Remove, Path: Pointer{"spec", "containers", "-1"}},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"a"},"name":"p"},"spec":{"containers":[]}}`},
		{"remove below a missing element", Operation{Op: Remove, Path: Pointer{"spec", "containers", "1", "image"}}, la[:len(la)-1]},
		{"an index out of range", Operation{Op: Replace, Path: Pointer{"spec", "containers", "1"}, Value: "c"}, ""},
		{"an index that is no number", Operation{Op: Remove, Path: Pointer{"spec", "containers", "x"}}, ""},
		{"a parent that would be an array", Operation{Op: Add, Path: Pointer{"metadata", "finalizers", "-"}, Value: "f"}, ""},
		{"replace of a missing member", Operation{Op: Replace, Path: Pointer{"metadata", "namespace"}, Value: "n"}, ""},
		{"a key AppendJSON escapes", Operation{Op: Add, Path: Pointer{"metadata", "labels", "é"}, Value: "v"}, ""},
		{"add below a scalar", Operation{Op: Add, Path: Pointer{"kind", "x"}, Value: "v"}, ""},
		{"the whole document", Operation{Op: Add, Path: Pointer{}, Value: map[string]any{}}, ""},
		{"test", Operation{Op: "test", Path: Pointer{"kind"}, Value: "Pod"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tx Text
			if tx.Apply(tc.op) || tx.Reset(`{"a": 1}`) || tx.Apply(tc.op) {
				t.Fatal("a Text without a text applied an operation")
			}
			if !tx.Reset(la) {
				t.Fatal("Reset refused a canonical text")
			}
			if got := tx.Apply(tc.op); got != (tc.want != "") {
				t.Fatalf("Apply = %v", got)
			}
			want := tc.want
			if want == "" {
				want = la[:len(la)-1]
			}
			if tx.String() != want {
				t.Errorf("text %s\nwant %s", tx.String(), want)
			}
			d := NewOwnedDoc(mustDecode(t, la))
			if err := d.Apply(tc.op); tc.want != "" && err != nil {
				t.Fatal(err)
			}
		})
	}
}

// FuzzText holds Text to a Doc on a fuzzed object and operations.
func FuzzText(f *testing.F) {
	f.Add(`{"metadata":{"labels":{"a":"b"}},"spec":[1]}`, `[{"op":"add","path":"/metadata/labels/c","value":{"x":[1,"y"]}},{"op":"remove","path":"/metadata/labels/a"},{"op":"add","path":"/metadata/annotations/x/y","value":1},{"op":"replace","path":"/spec","value":null},{"op":"add","path":"/spec/x","value":2}]`)
	f.Add(`{"a":{}}`, `[{"op":"add","path":"/a/b","value":"\u00e9\""},{"op":"remove","path":"/a/b"},{"op":"remove","path":"/a"},{"op":"add","path":"/a/-/b","value":0}]`)
	// Members written one after another in one object, before, after and
	// in place of the last one written (textPlace.member).
	f.Add(`{"metadata":{"annotations":{"z":1},"labels":{"app":"x","m":"y"}}}`, `[{"op":"add","path":"/metadata/labels/b","value":1},{"op":"add","path":"/metadata/labels/c","value":2},{"op":"add","path":"/metadata/labels/a","value":3},{"op":"remove","path":"/metadata/labels/c"},{"op":"add","path":"/metadata/labels/d","value":4},{"op":"replace","path":"/metadata/labels/b","value":"bb"},{"op":"add","path":"/metadata/annotations/a","value":5},{"op":"add","path":"/metadata/labels/e","value":6},{"op":"remove","path":"/metadata/labels/e"},{"op":"add","path":"/metadata/labels/zz","value":7},{"op":"remove","path":"/metadata/labels/app"},{"op":"add","path":"/metadata/labels/n/x","value":8},{"op":"add","path":"/metadata/labels/n/y","value":9},{"op":"add","path":"/metadata/labels/b","value":{"q":1}},{"op":"add","path":"/metadata/labels/ba","value":10}]`)
	f.Fuzz(func(t *testing.T, docText, opsText string) {
		doc, ops, ok := fuzzInput(docText, opsText)
		if _, isObject := doc.(map[string]any); !ok || !isObject {
			return
		}
		text, err := value.AppendJSON(nil, doc)
		var tx Text
		if err != nil || !tx.Reset(string(text)) {
			return
		}
		d := NewOwnedDoc(doc)
		for _, op := range ops {
			if _, reset := textStep(t, &tx, d, op); !reset {
				return
			}
		}
	})
}

// BenchmarkLastApplied edits the last-applied configuration of the load
// test's Deployment as the load test's ten rules do (a label each, two of
// them a container's port too): as text (Text), and decoded lazily and
// written back (what the kernel does when Text refuses).
func BenchmarkLastApplied(b *testing.B) {
	obj, err := os.ReadFile("../../testdata/bench/objects/deployment.json")
	if err != nil {
		b.Fatal(err)
	}
	la, _ := value.Lookup(mustDecode(b, string(obj)), "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
	var ops []Operation
	for i := range 10 {
		ops = append(ops, Operation{Op: Add, Path: Pointer{"metadata", "labels", fmt.Sprintf("rule-%05d", i)}, Value: "nginx-deployment-1"})
		if i%5 == 0 {
			ops = append(ops, Operation{Op: Replace, Path: Pointer{"spec", "template", "spec", "containers", "0", "ports", "0", "containerPort"}, Value: json.Number("8080")})
		}
	}
	b.Run("text", func(b *testing.B) {
		var t Text
		b.ReportAllocs()
		for b.Loop() {
			if !t.Reset(la.(string)) {
				b.Fatal("not canonical")
			}
			for _, op := range ops {
				if !t.Apply(op) {
					b.Fatalf("refused %v", op)
				}
			}
			_ = t.String()
		}
	})
	b.Run("doc", func(b *testing.B) {
		var d Doc
		b.ReportAllocs()
		for b.Loop() {
			m, ok := value.DecodeLazy(la.(string))
			if !ok {
				b.Fatal("not canonical")
			}
			d.Reset(m, true)
			for _, op := range ops {
				d.Expand(op.Path)
				if err := d.Apply(op); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := value.AppendJSON(nil, d.Root()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestTextPlaces: an operation starts where the last ones went (Text's
// places); what moves the text under them, or renumbers an array on their
// way, is followed.
func TestTextPlaces(t *testing.T) {
	const doc = `{"a":{"b":{"c":1}},"l":[{"x":1},{"x":2},{"x":3}],"m":{"k":{"v":1}}}`
	at := func(s ...string) Pointer { return Pointer(s) }
	for name, ops := range map[string][]Operation{
		"an element removed before":  {{Op: Add, Path: at("l", "1", "y"), Value: 1}, {Op: Remove, Path: at("l", "0")}, {Op: Add, Path: at("l", "1", "z"), Value: 2}},
		"an element inserted before": {{Op: Add, Path: at("l", "1", "y"), Value: 1}, {Op: Add, Path: at("l", "0"), Value: "e"}, {Op: Add, Path: at("l", "1", "z"), Value: 2}},
		"a member added before":      {{Op: Add, Path: at("m", "k", "w"), Value: 1}, {Op: Add, Path: at("a", "aa"), Value: "long value"}, {Op: Add, Path: at("m", "k", "x"), Value: 2}},
		"a member removed before":    {{Op: Add, Path: at("m", "k", "w"), Value: 1}, {Op: Remove, Path: at("a")}, {Op: Add, Path: at("m", "k", "x"), Value: 2}},
		"the place replaced":         {{Op: Add, Path: at("m", "k", "w"), Value: 1}, {Op: Replace, Path: at("m", "k"), Value: map[string]any{"n": 0}}, {Op: Add, Path: at("m", "k", "x"), Value: 2}},
		"the place removed":          {{Op: Add, Path: at("m", "k", "w"), Value: 1}, {Op: Remove, Path: at("m", "k")}, {Op: Add, Path: at("m", "k", "x"), Value: 2}},
	} {
		t.Run(name, func(t *testing.T) {
			var tx Text
			if !tx.Reset(doc) {
				t.Fatal("not canonical")
			}
			d := NewOwnedDoc(mustDecode(t, doc))
			for _, op := range ops {
				if applied, reset := textStep(t, &tx, d, op); !applied && !reset {
					t.Fatalf("%v refused", op)
				}
			}
		})
	}
}

// TestTextWork: operations on a large text are refused once they have read
// textWork bytes (the text then unchanged), so that many of them are a
// Doc's; a Reset starts again.
func TestTextWork(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", 100<<10) + `","m":{}}`
	var tx Text
	if !tx.Reset(big) {
		t.Fatal("not canonical")
	}
	done := 0
	for ; done < 1000; done++ {
		before := tx.String()
		if !tx.Apply(Operation{Op: Add, Path: Pointer{"m", fmt.Sprintf("k%04d", done)}, Value: "v"}) {
			if tx.String() != before {
				t.Fatal("a refused operation changed the text")
			}
			break
		}
	}
	if limit := textWork / len(big); done < limit-2 || done > limit {
		t.Fatalf("%d operations done on a %d-byte text, want about %d", done, len(big), limit)
	}
	if !tx.Reset(big) || !tx.Apply(Operation{Op: Add, Path: Pointer{"m", "k"}, Value: "v"}) {
		t.Fatal("an operation refused after Reset")
	}
}
