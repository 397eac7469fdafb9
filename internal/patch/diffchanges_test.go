package patch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDiffChangesNested: changes in two elements of an array, two of them
// in an array inside the first: Diff replaces the inner array, then weighs
// that replace with the other change against the outer array (which it
// replaces when its text is smaller); DiffChanges must weigh them alike.
func TestDiffChangesNested(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	replaced := 0
	for it := 0; it < 20000; it++ {
		// {"k": [ {"m": [ {"v": x} ...] , ...} ...]}
		k := []string{"k", "kk", "kkkkkkkk"}[r.IntN(3)]
		m := []string{"m", "mm", "mmmmmmmmmmmm"}[r.IntN(3)]
		inner := []any{}
		for range 1 + r.IntN(2) {
			inner = append(inner, map[string]any{"v": "x", "u": "x"})
		}
		el := map[string]any{m: inner}
		if r.IntN(2) == 0 {
			el["o"] = "y"
		}
		outer := []any{el, map[string]any{"w": "q"}}
		root := map[string]any{k: outer}
		val := fmt.Sprint(r.IntN(1000000)) + "aaaaaaaa"[:r.IntN(8)]
		val2 := "q" + "bbbbbbbbbbbbbbbbbbbb"[:r.IntN(20)]
		ops := []Operation{
			{Op: Replace, Path: Pointer{k, "0", m, "0", "v"}, Value: val},
			{Op: Replace, Path: Pointer{k, "1", "w"}, Value: val2},
			{Op: Replace, Path: Pointer{k, "0", m, "0", "u"}, Value: val},
		}
		changes, ok := MemberChanges(root, ops, nil)
		if !ok {
			t.Fatalf("%v not taken", ops)
		}
		doc := NewDoc(root)
		for _, op := range ops {
			if err := doc.ApplyRFC6902(op); err != nil {
				t.Fatal(err)
			}
		}
		got := renderSorted(DiffChanges(doc.Root(), changes))
		want := renderSorted(Diff(root, doc.Root()))
		if len(want) == 1 {
			replaced++ // the outer array replaced
		}
		if !slices.Equal(got, want) {
			b, _ := json.Marshal(root)
			t.Fatalf("%s %v:\n%v\n%v", b, ops, got, want)
		}
	}
	if replaced < 1000 {
		t.Fatalf("the outer array replaced %d times only", replaced)
	}
}

// TestMemberChanges: where MemberChanges takes a standard JSON Patch, the
// operations DiffChanges gives once it applied are Diff's (as a set), on
// random objects and patches, through objects and arrays; and
// MemberChanges refuses what cannot be read off the operations.
func TestMemberChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := []string{"a", "b", "c", "d"}
	scalars := []any{"x", "y", json.Number("1"), json.Number("1.0"), true, nil, int64(1)}
	var randTree func(depth int) map[string]any
	randList := func(depth int) []any {
		l := []any{}
		for range r.IntN(4) {
			if depth > 0 && r.IntN(4) > 0 {
				l = append(l, randTree(depth-1))
			} else {
				l = append(l, scalars[r.IntN(len(scalars))])
			}
		}
		return l
	}
	randTree = func(depth int) map[string]any {
		m := map[string]any{}
		for _, k := range keys[:1+r.IntN(len(keys))] {
			switch {
			case depth > 0 && r.IntN(3) == 0:
				m[k] = randTree(depth - 1)
			case depth > 0 && r.IntN(4) == 0:
				m[k] = randList(depth - 1)
			case r.IntN(8) == 0:
				m[k] = []any{"l", map[string]any{"a": "x"}}
			default:
				m[k] = scalars[r.IntN(len(scalars))]
			}
		}
		return m
	}
	tokens := append(slices.Clone(keys), "0", "1", "2", "01", "-")
	taken, through, replaced := 0, 0, 0
	var reused []Operation // DiffChangesTo's storage, from patch to patch
	for it := 0; it < 100000; it++ {
		root := randTree(4)
		var ops []Operation
		for range 1 + r.IntN(4) {
			var p Pointer
			if r.IntN(4) == 0 {
				for depth := 0; depth < 1+r.IntN(6); depth++ {
					p = append(p, tokens[r.IntN(len(tokens))])
				}
			} else {
				// Down the tree, then a member.
				var at any = root
			walk:
				for r.IntN(8) > 0 {
					switch t := at.(type) {
					case map[string]any:
						// A container if there is one, most often.
						var in []string
						for _, k := range keys {
							switch t[k].(type) {
							case map[string]any, []any:
								in = append(in, k)
							}
						}
						k := keys[r.IntN(len(keys))]
						if len(in) > 0 && r.IntN(5) > 0 {
							k = in[r.IntN(len(in))]
						}
						p, at = append(p, k), t[k]
					case []any:
						var objects []int // elements that are objects
						for n, e := range t {
							if _, ok := e.(map[string]any); ok {
								objects = append(objects, n)
							}
						}
						if len(objects) == 0 {
							break walk
						}
						n := objects[r.IntN(len(objects))]
						p, at = append(p, strconv.Itoa(n)), t[n]
					default:
						break walk
					}
				}
				p = append(p, keys[r.IntN(len(keys))])
			}
			op := Operation{Op: []OpType{Add, Add, Replace, Remove}[r.IntN(4)], Path: p}
			if op.Op != Remove {
				op.Value = scalars[r.IntN(len(scalars))]
				switch r.IntN(10) {
				case 0:
					op.Value = map[string]any{"z": "x", "l": []any{"x"}}
				case 1:
					op.Value = []any{"x", map[string]any{"a": "x"}}
				case 2, 3, 4:
					op.Value = strings.Repeat("long", r.IntN(20)) // a replace of the array around it weighs less
				}
			}
			ops = append(ops, op)
		}
		before, _ := json.Marshal(root)
		changes, ok := MemberChanges(root, ops, nil)
		doc := NewDoc(root)
		applied := true
		for _, op := range ops {
			if err := doc.ApplyRFC6902(op); err != nil {
				applied = false
				break
			}
		}
		if after, _ := json.Marshal(root); string(after) != string(before) {
			t.Fatalf("the object given changed: %s -> %s", before, after)
		}
		if !ok || !applied {
			continue
		}
		taken++
		got, want := DiffChanges(doc.Root(), changes), Diff(root, doc.Root())
		if !slices.Equal(renderSorted(got), renderSorted(want)) {
			t.Fatalf("%s with %v:\ndirect %v\nDiff   %v", before, ops, renderSorted(got), renderSorted(want))
		}
		// In storage reused from the last patch (DiffChangesTo), the same.
		reused = DiffChangesTo(reused, doc.Root(), changes)
		if !slices.Equal(renderSorted(reused), renderSorted(got)) {
			t.Fatalf("%s with %v: DiffChangesTo into reused storage %v, DiffChanges %v", before, ops, renderSorted(reused), renderSorted(got))
		}
		if slices.ContainsFunc(ops, func(op Operation) bool {
			return slices.ContainsFunc(op.Path, func(tok string) bool { return tok == "0" || tok == "1" || tok == "2" })
		}) {
			through++
			if slices.ContainsFunc(want, func(op Operation) bool { _, ok := op.Value.([]any); return ok && op.Op == Replace }) {
				replaced++
			}
		}
	}
	t.Logf("%d patches taken directly, %d through arrays, %d of them an array replaced", taken, through, replaced)
	if taken < 2000 || through < 300 || replaced < 30 {
		t.Fatalf("only %d patches taken directly, %d through arrays, %d of them an array replaced", taken, through, replaced)
	}
	// Refused: an array's element itself, an index not Diff's, nested
	// paths, an object or array in place of one, the whole object.
	root := map[string]any{"a": []any{map[string]any{"b": "x"}}, "c": map[string]any{"d": "y"}}
	for _, ops := range [][]Operation{
		{{Op: Replace, Path: Pointer{"a", "0"}, Value: "z"}},
		{{Op: Add, Path: Pointer{"a", "-", "b"}, Value: "z"}},
		{{Op: Add, Path: Pointer{"a", "00", "b"}, Value: "z"}},
		{{Op: Add, Path: Pointer{"a", "1", "b"}, Value: "z"}},
		{{Op: Add, Path: Pointer{"c", "e"}, Value: "z"}, {Op: Remove, Path: Pointer{"c"}}},
		{{Op: Replace, Path: Pointer{"c"}, Value: map[string]any{}}},
		{{Op: Add, Path: Pointer{"a"}, Value: []any{}}},
		{{Op: Add, Path: Pointer{}, Value: "z"}},
	} {
		if _, ok := MemberChanges(root, ops, nil); ok {
			t.Errorf("%v taken directly", ops)
		}
	}
	// A path deeper than maxChangeDepth, through objects that are there.
	deep, way := map[string]any{}, Pointer{}
	for at := deep; len(way) < maxChangeDepth; {
		m := map[string]any{}
		at["n"], at, way = m, m, append(way, "n")
	}
	if _, ok := MemberChanges(deep, []Operation{{Op: Add, Path: append(slices.Clone(way[:maxChangeDepth-1]), "x"), Value: "z"}}, nil); !ok {
		t.Error("a path of maxChangeDepth tokens not taken directly")
	}
	if _, ok := MemberChanges(deep, []Operation{{Op: Add, Path: append(slices.Clone(way), "x"), Value: "z"}}, nil); ok {
		t.Error("a path deeper than maxChangeDepth taken directly")
	}
	if _, ok := MemberChanges(root, []Operation{{Op: Replace, Path: Pointer{"a", "0", "b"}, Value: "z"}}, nil); !ok {
		t.Error("a member of an array's element not taken directly")
	}
}
