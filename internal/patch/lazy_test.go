package patch

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/value"
)

// TestExpandLazy: operations on a tree value.DecodeLazy made, each path
// expanded first (Doc.Expand), give the same errors and the same text as on
// the tree decoded in full, with KubeMod's and RFC 6902's semantics, and
// after rollbacks.
func TestExpandLazy(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	taken := 0
	for it := 0; it < 1500; it++ {
		_, text, ok := randObjectText(t, r)
		if !ok {
			continue
		}
		lazy, ok := value.DecodeLazy(string(text))
		if !ok {
			continue // a key DecodeLazy leaves to Decode
		}
		taken++
		full, err := value.Decode(text)
		if err != nil {
			t.Fatal(err)
		}
		a, b := NewOwnedDoc(full), NewOwnedDoc(lazy)
		for k := 0; k < 6; k++ {
			op := randOp(r, a.Root())
			if op.Op == "move" {
				continue
			}
			strict := r.IntN(2) == 0
			mark := a.Mark()
			apply := func(d *Doc) error {
				if strict {
					return d.ApplyRFC6902(op)
				}
				return d.Apply(op)
			}
			b.Expand(op.Path)
			errA, errB := apply(a), apply(b)
			if (errA == nil) != (errB == nil) || errA != nil && errA.Error() != errB.Error() {
				t.Fatalf("%v on %s (strict %v): full %v, lazy %v", op, text, strict, errA, errB)
			}
			if r.IntN(5) == 0 {
				a.Rollback(mark)
				b.Rollback(mark)
			}
			ta, _ := value.AppendJSON(nil, a.Root())
			tb, err := value.AppendJSON(nil, b.Root())
			if err != nil || string(ta) != string(tb) {
				t.Fatalf("%v on %s (strict %v): full %s, lazy %s (%v)", op, text, strict, ta, tb, err)
			}
		}
	}
	if taken < 500 {
		t.Fatalf("only %d documents taken lazily", taken)
	}
}

// TestExpandDeep: a path deeper than expandLevels decodes the rest of the
// tree in full (one scan), and operations on it give the full tree's text.
func TestExpandDeep(t *testing.T) {
	const depth = 200
	text := strings.Repeat(`{"a":`, depth) + `"x"` + strings.Repeat(`,"b":{"c":1}}`, depth)
	lazy, ok := value.DecodeLazy(text)
	if !ok {
		t.Fatal("refused")
	}
	p := make(Pointer, depth)
	for i := range p {
		p[i] = "a"
	}
	d := NewOwnedDoc(lazy)
	d.Expand(p)
	if err := d.Apply(Operation{Op: Replace, Path: p, Value: "y"}); err != nil {
		t.Fatal(err)
	}
	got, _ := value.AppendJSON(nil, d.Root())
	if want := strings.Replace(text, `"x"`, `"y"`, 1); string(got) != want {
		t.Fatalf("got %.80s..., want %.80s...", got, want)
	}
	// Beside the path, below the first levels, nothing is Raw any more:
	// the rest was decoded at once, not level by level.
	v := d.Root()
	for range expandLevels + 2 {
		v = v.(map[string]any)["a"]
	}
	if _, raw := v.(map[string]any)["b"].(value.Raw); raw {
		t.Error("a deep path's tree decoded level by level")
	}
}
