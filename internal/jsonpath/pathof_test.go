package jsonpath

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPathOf checks that every node's full path leads to its value, and
// some paths as written.
func TestPathOf(t *testing.T) {
	tests := []struct {
		expr, doc string
		want      [][]any // nil: only checked to lead to the values
	}{
		{`$.kind`, "", [][]any{{"kind"}}},
		{`$.spec.containers[*].name`, "", [][]any{{"spec", "containers", 0, "name"}, {"spec", "containers", 1, "name"}, {"spec", "containers", 2, "name"}}},
		{`$.spec.containers[-1].name`, "", [][]any{{"spec", "containers", 2, "name"}}},
		{`$.metadata.labels.*`, "", [][]any{{"metadata", "labels", "app"}, {"metadata", "labels", "app.kubernetes.io/name"}, {"metadata", "labels", "color"}}},
		{`$.spec.tags[4,-5]`, "", [][]any{{"spec", "tags", 4}, {"spec", "tags", 0}}},
		{`$..containerPort`, "", [][]any{{"spec", "containers", 0, "ports", 0, "containerPort"}, {"spec", "containers", 0, "ports", 1, "containerPort"}, {"spec", "containers", 1, "ports", 0, "containerPort"}}},
		{`$.spec.containers[*].ports[? @.containerPort > 80].containerPort`, "", nil},
		{`$..*`, "small", nil},
		{`$..a..b`, "small", [][]any{{"a", 1, "b"}}},
		{`$`, "small", [][]any{nil}},
	}
	for _, tt := range tests {
		e := MustParse(tt.expr)
		root := evalDoc(t, tt.doc)
		nodes, err := e.Select(context.Background(), root)
		if err != nil {
			t.Fatalf("Select(%q): %v", tt.expr, err)
		}
		var got [][]any
		for _, n := range nodes {
			p, ok := e.PathOf(root, n.Keys)
			if !ok {
				t.Errorf("PathOf(%q, %v): not ok", tt.expr, n.Keys)
				continue
			}
			got = append(got, p)
			v := root
			for _, k := range p {
				if v, ok = child(v, k); !ok {
					t.Fatalf("%q: path %v does not lead to a value", tt.expr, p)
				}
			}
			if !reflect.DeepEqual(v, n.Value) {
				t.Errorf("%q: path %v leads to %v, the node is %v", tt.expr, p, v, n.Value)
			}
		}
		if tt.want != nil {
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PathOf(%q): (-want +got)\n%s", tt.expr, diff)
			}
		}
	}
	e := MustParse(`$.spec.containers[*].name`)
	root := evalDoc(t, "")
	for _, keys := range [][]any{nil, {7}, {"x"}, {0, 1}} {
		if p, ok := e.PathOf(root, keys); ok {
			t.Errorf("PathOf(%v) = %v, want not ok", keys, p)
		}
	}
	if _, ok := MustParse(`$.a == 1`).PathOf(root, nil); ok {
		t.Error("PathOf of a computed expression: ok")
	}
}

func TestPattern(t *testing.T) {
	a := AnyMember{}
	tests := []struct {
		expr string
		want []any
		ok   bool
	}{
		{`$`, nil, true},
		{`$.spec.containers[*].ports[0]`, []any{"spec", "containers", a, "ports", 0}, true},
		{`$.spec["a.b"][?(@.x)].*`, []any{"spec", "a.b", a, a}, true},
		{`$.spec.tags[1:3]`, []any{"spec", "tags", a}, true},
		{`$.spec.tags[-1]`, nil, false},
		{`$..name`, nil, false},
		{`$.a == 1`, nil, false},
	}
	for _, tt := range tests {
		got, ok := MustParse(tt.expr).Pattern()
		if ok != tt.ok || !cmp.Equal(got, tt.want) {
			t.Errorf("Pattern(%q) = %v, %v; want %v, %v", tt.expr, got, ok, tt.want, tt.ok)
		}
	}
}

// TestTree checks the tree view of an expression, and that its step kinds
// are the parser's.
func TestTree(t *testing.T) {
	got := MustParse(`$.spec.containers[?(@.name == "a" && @.image =~ "^r/")].ports[0]`).Tree()
	want := &Tree{Kind: TreePath, Steps: []TreeStep{
		{Kind: StepName, Name: "spec"}, {Kind: StepName, Name: "containers"},
		{Kind: StepFilter, Filter: &Tree{Kind: TreeBinary, Op: "&&",
			X: &Tree{Kind: TreeBinary, Op: "==", X: &Tree{Kind: TreePath, Current: true, Steps: []TreeStep{{Kind: StepName, Name: "name"}}}, Y: &Tree{Kind: TreeLiteral, Value: "a"}},
			Y: &Tree{Kind: TreeBinary, Op: "=~", Regex: "^r/", X: &Tree{Kind: TreePath, Current: true, Steps: []TreeStep{{Kind: StepName, Name: "image"}}}, Y: &Tree{Kind: TreeLiteral, Value: "^r/"}}}},
		{Kind: StepName, Name: "ports"}, {Kind: StepIndex, Index: 0},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	for k, want := range map[stepKind]StepKind{sName: StepName, sIndex: StepIndex, sWildcard: StepWildcard, sUnion: StepUnion, sSlice: StepSlice, sFilter: StepFilter, sDescent: StepDescent} {
		if StepKind(k) != want {
			t.Errorf("step kind %d is %d in the tree", k, want)
		}
	}
	call := MustParse(`length(@.a) > -@.c && !isDefined($.b)`).Tree()
	if call.X.X.Kind != TreeCall || call.X.X.Op != "length" || call.X.Y.Kind != TreeUnary || call.Y.Op != "!" || call.Y.X.Op != "isDefined" {
		t.Errorf("tree %+v", call)
	}
}
