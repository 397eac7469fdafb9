package quantity

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/modwright/modwright/internal/lang"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		refused bool
	}{
		{in: "12Ki"}, {in: "1.5"}, {in: "-1e3"}, {in: "1E"}, {in: "1Ei"}, {in: "9223372036854775807"},
		{in: "0.000000001"}, {in: "1e64"}, {in: "1e-64"}, {in: "1e+64"}, {in: "2E-0064"},
		{in: "abc"}, {in: ""}, {in: "1ex"}, {in: "e999999", refused: true},
		{in: "1e65", refused: true}, {in: "1e999999999", refused: true}, {in: "-1e-999999999", refused: true},
		{in: "+1E99999999999999999999999999", refused: true}, {in: "e11111111111110", refused: true}, {in: ".e99", refused: true},
		{in: "1" + strings.Repeat("0", MaxDigits), refused: true}, {in: "1" + strings.Repeat("0", MaxDigits-1)},
	} {
		t.Run(tc.in, func(t *testing.T) {
			q, err := Parse(tc.in)
			if tc.refused {
				if !errors.Is(err, ErrOutOfRange) || !errors.Is(err, lang.ErrLimit) {
					t.Fatalf("Parse(%q) = %v, %v; want ErrOutOfRange in lang.ErrLimit's chain", tc.in, q, err)
				}
				return
			}
			want, wantErr := resource.ParseQuantity(tc.in)
			if (err == nil) != (wantErr == nil) || (err == nil && !q.Equal(want)) {
				t.Fatalf("Parse(%q) = %v, %v; apimachinery: %v, %v", tc.in, q, err, want, wantErr)
			}
		})
	}
}

// TestBoundedArithmetic: the largest and smallest quantities Parse admits
// compare, add and print at once (apimachinery's own cost for
// "1e999999999" is hours).
func TestBoundedArithmetic(t *testing.T) {
	big, err := Parse("9999999999999999999999999999999999999999999999999999999999999999e64")
	if err != nil {
		t.Fatal(err)
	}
	small, err := Parse("0.000000000000000000000000000000000000000000000000000000000000001e-64")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 100 {
		_ = big.Cmp(small)
		s := big.DeepCopy()
		s.Add(small)
		_ = s.String()
		_ = small.String()
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("100 operations on bounded quantities took %v", d)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"12Ki", "1e64", "1e-64", "-0.5E", "1e999999999", "9Ei", ".5m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			return
		}
		// Bounded quantities cost microseconds (TestBoundedArithmetic);
		// the fuzzer shows a stall as a drop of its executions per second.
		one := resource.MustParse("1")
		_ = q.Cmp(one)
		c := q.DeepCopy()
		c.Add(one)
		_ = c.String()
	})
}
