package patch

import (
	"math/rand/v2"
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
		doc, ok := randDoc(r, 4).(map[string]any)
		if !ok {
			continue
		}
		text, err := value.AppendJSON(nil, doc)
		if err != nil {
			t.Fatal(err)
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
