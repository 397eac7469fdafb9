package jsonpath

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/value"
)

func parseSeeds() []string {
	var seeds []string
	for _, tt := range validExprs {
		seeds = append(seeds, tt.src)
	}
	for _, tt := range invalidExprs {
		seeds = append(seeds, tt.src)
	}
	for _, tt := range evalCases {
		seeds = append(seeds, tt.expr)
	}
	for _, tt := range evalErrorCases {
		seeds = append(seeds, tt.expr)
	}
	return seeds
}

// FuzzParse checks that Parse never panics and that the canonical form of
// every valid expression is within MaxSourceLen and parses back to itself.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds() {
		f.Add(s)
	}
	// Issue 13: raw control characters, each a 6-byte \u escape in the
	// canonical form, which then exceeded MaxSourceLen.
	f.Add(`$["` + strings.Repeat("\x01", 3000) + `"]`)
	f.Add("1" + strings.Repeat("+1", MaxSourceLen/2-1))
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): error %v is not a SyntaxError", src, err)
			}
			if se.Pos < 0 || se.Pos > len(src) && se.Pos != MaxSourceLen {
				t.Fatalf("Parse(%q): position %d out of range", src, se.Pos)
			}
			return
		}
		canon := e.String()
		if len(canon) > MaxSourceLen {
			t.Fatalf("Parse(%.200q): canonical form of %d bytes, over MaxSourceLen", src, len(canon))
		}
		e2, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) -> %q does not parse: %v", src, canon, err)
		}
		if got := e2.String(); got != canon {
			t.Fatalf("Parse(%q) -> %q -> %q: canonical form not stable", src, canon, got)
		}
		if e2.IsQuery() != e.IsQuery() || e2.Definite() != e.Definite() || e2.Captures() != e.Captures() {
			t.Fatalf("%q and its canonical form %q differ in IsQuery/Definite/Captures", src, canon)
		}
	})
}

// FuzzEvaluate checks that evaluation never panics nor modifies the document,
// that the canonical form evaluates identically, and that Select agrees with
// Evaluate.
func FuzzEvaluate(f *testing.F) {
	for _, tt := range evalCases {
		d := tt.doc
		if d == "" {
			d = "pod"
		}
		f.Add(tt.expr, docs[d])
	}
	for _, tt := range evalErrorCases {
		f.Add(tt.expr, podJSON)
	}
	f.Add(`$..*..*`, `[[[[1]]],{"a":{"b":[null,true,"x",1.5e3]}}]`)
	f.Fuzz(func(t *testing.T, src, doc string) {
		root, err := value.Decode([]byte(doc))
		if err != nil {
			return
		}
		e, err := Parse(src)
		if err != nil {
			return
		}
		before := value.DeepCopy(root)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		res, err := e.Evaluate(ctx, root)
		if errors.Is(err, ErrTooManyValues) || errors.Is(err, ErrTooMuchWork) {
			return // a bound, not a wrong answer
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, ErrEval) {
				t.Fatalf("Evaluate(%q): unexpected error %v", src, err)
			}
		}
		if !value.Equal(before, root) {
			t.Fatalf("Evaluate(%q) modified the document", src)
		}
		if err == nil && res.Single && len(res.Values) > 1 {
			t.Fatalf("Evaluate(%q): Single with %d values", src, len(res.Values))
		}
		res2, err2 := MustParse(e.String()).Evaluate(ctx, root)
		if ctx.Err() != nil {
			return
		}
		if (err == nil) != (err2 == nil) || err == nil && !sameResult(res, res2) {
			t.Fatalf("Evaluate(%q) = %v, %v but its canonical form %q gives %v, %v", src, res, err, e.String(), res2, err2)
		}
		if !e.IsQuery() {
			return
		}
		nodes, err3 := e.Select(ctx, root)
		if ctx.Err() != nil || errors.Is(err3, ErrTooManyValues) {
			return // Select also bounds captured keys, which Evaluate does not hold
		}
		if (err == nil) != (err3 == nil) {
			t.Fatalf("Evaluate(%q) error %v but Select error %v", src, err, err3)
		}
		if err != nil {
			return
		}
		if len(nodes) != len(res.Values) {
			t.Fatalf("Select(%q): %d nodes, Evaluate: %d values", src, len(nodes), len(res.Values))
		}
		for i, nd := range nodes {
			if !equalValues(nd.Value, res.Values[i]) || len(nd.Keys) != e.Captures() {
				t.Fatalf("Select(%q): node %d = %v, want value %v and %d keys", src, i, nd, res.Values[i], e.Captures())
			}
			// The node's full path leads to its value.
			p, ok := e.PathOf(root, nd.Keys)
			if !ok {
				t.Fatalf("PathOf(%q, %v): not ok", src, nd.Keys)
			}
			v := root
			for _, k := range p {
				if v, ok = child(v, k); !ok {
					t.Fatalf("PathOf(%q, %v) = %v: no value there", src, nd.Keys, p)
				}
			}
			if !equalValues(v, nd.Value) {
				t.Fatalf("PathOf(%q, %v) = %v leads to %v, the node is %v", src, nd.Keys, p, v, nd.Value)
			}
		}
		// The tree view is the expression parsed: a path for a query, with
		// a step per capturing step where Select captures keys.
		tr := e.Tree()
		capturing := 0
		for _, st := range tr.Steps {
			if st.Kind != StepName && st.Kind != StepIndex {
				capturing++
			}
		}
		if (tr.Kind == TreePath) != e.IsQuery() || capturing != e.Captures() {
			t.Fatalf("Tree(%q) = %+v: not the expression parsed (query %v, %d captures)", src, tr, e.IsQuery(), e.Captures())
		}
	})
}

func sameResult(a, b Result) bool {
	if a.Single != b.Single || len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Values {
		if fmt.Sprintf("%T", a.Values[i]) != fmt.Sprintf("%T", b.Values[i]) || !equalValues(a.Values[i], b.Values[i]) {
			return false
		}
	}
	return true
}

// equalValues is value.Equal, except that values with the same JSON text
// (such as 1e999, which value.Equal cannot compare) are equal too.
func equalValues(a, b any) bool {
	if value.Equal(a, b) {
		return true
	}
	ja, err1 := value.Encode(a)
	jb, err2 := value.Encode(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
