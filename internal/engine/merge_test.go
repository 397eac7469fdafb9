package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeSorted checks that merging gives what sorting the
// concatenation gives.
func TestMergeSorted(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200; n++ {
		var a, b []Rule
		for i := range rnd.IntN(12) + rnd.IntN(3)*20 {
			r := &fakeRule{info: RuleInfo{Kind: []string{"A", "B"}[rnd.IntN(2)], Tier: rnd.IntN(3), Namespace: fmt.Sprint("ns", rnd.IntN(2)), Name: fmt.Sprint("r", n, "-", i)}}
			r.info.Key = r.info.Namespace + "/" + r.info.Name
			if rnd.IntN(2) == 0 {
				a = append(a, r)
			} else {
				b = append(b, r)
			}
		}
		slices.SortFunc(a, Less)
		slices.SortFunc(b, Less)
		want := slices.SortedFunc(slices.Values(slices.Concat(a, b)), Less)
		if got := mergeSorted(a, b); !slices.Equal(got, want) {
			t.Fatalf("case %d: merge differs from sort", n)
		}
	}
}

// fakeRule is a rule of no kind in particular, for the kernel's own tests.
type fakeRule struct {
	info  RuleInfo
	scope func(ns string) bool
	match func(h *Handle) (bool, error)
	apply func(h *Handle) error
}

var _ Rule = (*fakeRule)(nil)

func (r *fakeRule) Info() *RuleInfo        { return &r.info }
func (r *fakeRule) InScope(ns string) bool { return r.scope == nil || r.scope(ns) }
func (r *fakeRule) Match(h *Handle) (bool, error) {
	if r.match == nil {
		return true, nil
	}
	return r.match(h)
}
func (r *fakeRule) Apply(h *Handle) error {
	if r.apply == nil {
		return nil
	}
	return r.apply(h)
}
