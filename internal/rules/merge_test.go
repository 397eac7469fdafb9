package rules

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
		var a, b []*Rule
		for i := range rnd.IntN(12) + rnd.IntN(3)*20 {
			r := &Rule{Tier: rnd.IntN(3), Namespace: fmt.Sprint("ns", rnd.IntN(2)), Name: fmt.Sprint("r", n, "-", i)}
			r.Key = r.Namespace + "/" + r.Name
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
