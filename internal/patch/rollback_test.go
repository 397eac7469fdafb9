package patch

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/value"
)

// TestApplyRandomAgainstReference applies random operations to random
// documents and compares Doc.Apply with the naive reference implementation:
// same error class, same resulting tree, and an unchanged tree on error.
func TestApplyRandomAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	iterations := 1000
	if testing.Short() {
		iterations = 200
	}
	outcomes := map[string]int{}
	for it := 0; it < iterations; it++ {
		doc := randDoc(r, 4)
		if it%10 == 0 {
			doc = randValue(r, 4) // scalar roots too
		}
		d := NewDoc(value.DeepCopy(doc))
		for step := 0; step < 10; step++ {
			op := randOp(r, d.Root())
			before := value.DeepCopy(d.Root())
			want, wantErr := refApply(before, op)
			err := d.Apply(op)
			if err != nil {
				outcomes[string(op.Op)+": "+sentinel(err).Error()]++
			} else {
				outcomes[string(op.Op)+": ok"]++
			}
			if sentinel(err) != wantErr {
				t.Fatalf("iteration %d: Apply(%v) on %s: error %v, reference %v", it, op, encode(before), err, wantErr)
			}
			if err != nil {
				if diff := cmp.Diff(before, d.Root()); diff != "" {
					t.Fatalf("iteration %d: failed Apply(%v) changed the document:\n%s", it, op, diff)
				}
				continue
			}
			if diff := cmp.Diff(want, d.Root()); diff != "" {
				t.Fatalf("iteration %d: Apply(%v) on %s (-reference +got):\n%s", it, op, encode(before), diff)
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestRollbackRandom applies random sequences of operations with marks at
// random points, and checks that rolling back to a mark restores exactly the
// tree as it was when the mark was taken.
func TestRollbackRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	iterations := 1000
	if testing.Short() {
		iterations = 100
	}
	type snap struct {
		mark int
		tree any
	}
	for it := 0; it < iterations; it++ {
		orig := randDoc(r, 4)
		d := NewDoc(value.DeepCopy(orig))
		stack := []snap{{d.Mark(), value.DeepCopy(orig)}}
		for step := 0; step < 40; step++ {
			switch k := r.IntN(10); {
			case k == 0: // take a mark
				stack = append(stack, snap{d.Mark(), value.DeepCopy(d.Root())})
			case k == 2: // freeze: rollbacks across it still restore the tree
				d.Freeze()
			case k == 1 && len(stack) > 1: // roll back to the newest mark
				s := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				d.Rollback(s.mark)
				if diff := cmp.Diff(s.tree, d.Root()); diff != "" {
					t.Fatalf("iteration %d step %d: rollback to %d (-want +got):\n%s", it, step, s.mark, diff)
				}
				if d.Mark() != s.mark {
					t.Fatalf("Mark() after Rollback(%d) = %d", s.mark, d.Mark())
				}
			default:
				_ = d.Apply(randOp(r, d.Root()))
			}
		}
		// Roll back through the remaining marks, newest first.
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			d.Rollback(s.mark)
			if diff := cmp.Diff(s.tree, d.Root()); diff != "" {
				t.Fatalf("iteration %d: final rollback to %d (-want +got):\n%s", it, s.mark, diff)
			}
		}
		if diff := cmp.Diff(orig, d.Root()); diff != "" {
			t.Fatalf("iteration %d: not back to the original:\n%s", it, diff)
		}
	}
}

// TestFreezeRandom freezes random documents at random points, on Docs that
// copy what they change and on Docs that own their tree, and checks that
// nothing the Doc does afterwards (operations, rollbacks to marks taken
// after the freeze) changes the frozen tree, and that Diff from it to the
// current tree turns the one into the other.
func TestFreezeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	iterations := 1000
	if testing.Short() {
		iterations = 200
	}
	for it := 0; it < iterations; it++ {
		orig := randDoc(r, 4)
		d := NewDoc(orig)
		if it%2 == 1 {
			d = NewOwnedDoc(value.DeepCopy(orig))
		}
		var frozen, want any
		var marks []int
		for step := 0; step < 30; step++ {
			switch k := r.IntN(8); {
			case k == 0:
				frozen = d.Freeze()
				want = value.DeepCopy(frozen)
				marks = marks[:0]
			case k == 1:
				marks = append(marks, d.Mark())
			case k == 2 && len(marks) > 0:
				d.Rollback(marks[len(marks)-1])
				marks = marks[:len(marks)-1]
			default:
				_ = d.Apply(randOp(r, d.Root()))
			}
			if frozen == nil {
				continue
			}
			if diff := cmp.Diff(want, frozen); diff != "" {
				t.Fatalf("iteration %d step %d: the frozen tree changed (-frozen +now):\n%s", it, step, diff)
			}
			got, err := ApplyRFC6902(value.DeepCopy(frozen), Diff(frozen, d.Root()))
			if err != nil {
				t.Fatalf("iteration %d step %d: the difference from the frozen tree does not apply: %v", it, step, err)
			}
			if !value.Equal(d.Root(), got) { // Diff compares numbers by value
				t.Fatalf("iteration %d step %d: frozen + Diff gives %s, not %s", it, step, encode(got), encode(d.Root()))
			}
		}
	}
}

// TestRollbackSkippingMarks rolls back past several marks at once.
func TestRollbackSkippingMarks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for it := 0; it < 500; it++ {
		d := NewDoc(randDoc(r, 4))
		var marks []int
		var trees []any
		for step := 0; step < 30; step++ {
			if r.IntN(5) == 0 {
				marks = append(marks, d.Mark())
				trees = append(trees, value.DeepCopy(d.Root()))
			}
			_ = d.Apply(randOp(r, d.Root()))
		}
		if len(marks) == 0 {
			continue
		}
		i := r.IntN(len(marks))
		d.Rollback(marks[i])
		if diff := cmp.Diff(trees[i], d.Root()); diff != "" {
			t.Fatalf("iteration %d: rollback to mark %d of %d (-want +got):\n%s", it, i, len(marks), diff)
		}
	}
}

func TestRelease(t *testing.T) {
	d := NewDoc(mustDecode(t, `{"a":1}`))
	apply := func(op Operation) {
		t.Helper()
		if err := d.Apply(op); err != nil {
			t.Fatal(err)
		}
	}
	m0 := d.Mark()
	apply(Operation{Op: Add, Path: Pointer{"b"}, Value: "x"})
	d.Release() // b is permanent
	m1 := d.Mark()
	if m1 <= m0 {
		t.Errorf("marks not monotonic across Release: %d then %d", m0, m1)
	}
	apply(Operation{Op: Add, Path: Pointer{"c"}, Value: "y"})
	m2 := d.Mark()
	apply(Operation{Op: Remove, Path: Pointer{"a"}})

	d.Rollback(m2)
	if diff := cmp.Diff(mustDecode(t, `{"a":1,"b":"x","c":"y"}`), d.Root()); diff != "" {
		t.Errorf("Rollback(m2):\n%s", diff)
	}
	d.Rollback(m2 + 5) // at or beyond the current position: nothing
	d.Rollback(m0)     // before the Release: back to the Release only
	if diff := cmp.Diff(mustDecode(t, `{"a":1,"b":"x"}`), d.Root()); diff != "" {
		t.Errorf("Rollback(m0):\n%s", diff)
	}
	d.Rollback(-1)
	if diff := cmp.Diff(mustDecode(t, `{"a":1,"b":"x"}`), d.Root()); diff != "" {
		t.Errorf("Rollback(-1):\n%s", diff)
	}
}

// TestRollbackRestoresAbsence checks the difference between a member that
// was absent and one that was null.
func TestRollbackRestoresAbsence(t *testing.T) {
	d := NewDoc(mustDecode(t, `{"n":null}`))
	m := d.Mark()
	for _, op := range []Operation{
		{Op: Add, Path: Pointer{"n"}, Value: "v"},
		{Op: Add, Path: Pointer{"x"}, Value: nil},
		{Op: Add, Path: Pointer{"y", "z"}, Value: nil},
		{Op: Remove, Path: Pointer{"n"}},
	} {
		if err := d.Apply(op); err != nil {
			t.Fatal(err)
		}
	}
	d.Rollback(m)
	root := d.Root().(map[string]any)
	if len(root) != 1 {
		t.Errorf("root = %v, want only n", root)
	}
	if v, ok := root["n"]; !ok || v != nil {
		t.Errorf("n = %v, %v; want present and null", v, ok)
	}
}

// TestApplyErrorKeepsJournal checks that a failed Apply between successful
// ones does not disturb rolling back.
func TestApplyErrorKeepsJournal(t *testing.T) {
	d := NewDoc(mustDecode(t, `{"a":[1]}`))
	m := d.Mark()
	if err := d.Apply(Operation{Op: Add, Path: Pointer{"a", "-"}, Value: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(Operation{Op: Add, Path: Pointer{"b", "3"}, Value: "x"}); !errors.Is(err, ErrInvalidIndex) {
		t.Fatalf("error = %v", err)
	}
	d.Rollback(m)
	if diff := cmp.Diff(mustDecode(t, `{"a":[1]}`), d.Root()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestReset: a Doc reset to another tree edits it as a new one would, and
// never changes in place a tree it edited before (its containers are no
// longer its own); its Version goes on.
func TestReset(t *testing.T) {
	d := NewDoc(mustDecode(t, `{"a":{"b":1}}`))
	if err := d.Apply(Operation{Op: Add, Path: Pointer{"a", "c"}, Value: "x"}); err != nil {
		t.Fatal(err)
	}
	first := d.Root()
	firstJSON := encode(first)
	v := d.Version()
	for _, owned := range []bool{false, true} {
		next := mustDecode(t, `{"a":{"b":2}}`)
		d.Reset(next, owned)
		if d.Version() <= v {
			t.Errorf("Version %d after Reset, was %d", d.Version(), v)
		}
		v = d.Version()
		// The same identities as before could be reused only if they were
		// still owned: write into the first tree's containers' places.
		if err := d.Apply(Operation{Op: Add, Path: Pointer{"a", "c"}, Value: "y"}); err != nil {
			t.Fatal(err)
		}
		if err := d.Apply(Operation{Op: Replace, Path: Pointer{"a", "b"}, Value: 3}); err != nil {
			t.Fatal(err)
		}
		if got := encode(d.Root()); got != `{"a":{"b":3,"c":"y"}}` {
			t.Errorf("after Reset(owned %v): %s", owned, got)
		}
		if got := encode(next); owned != (got == `{"a":{"b":3,"c":"y"}}`) {
			t.Errorf("Reset(owned %v): the tree given is %s", owned, got)
		}
		if got := encode(first); got != firstJSON {
			t.Errorf("the tree edited before Reset changed: %s, was %s", got, firstJSON)
		}
	}
}
