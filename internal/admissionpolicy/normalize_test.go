package admissionpolicy_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/value"
)

// roundTrip is what Normalize stands for: a JSON round trip through the
// API server's decoder, nulls dropped from objects.
func roundTrip(t *testing.T, m map[string]any) (map[string]any, error) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	var drop func(v any)
	drop = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if e == nil {
					delete(v, k)
				} else {
					drop(e)
				}
			}
		case []any:
			for _, e := range v {
				drop(e)
			}
		}
	}
	drop(out)
	return out, nil
}

// TestNormalize: Normalize, which walks the tree, gives what the JSON
// round trip gives (its reference), on the load test's objects, on the
// numbers where the two could part (integral floats, the int64 bounds,
// exponents, json.Number) and on random trees; NaN is an error as the
// round trip's.
func TestNormalize(t *testing.T) {
	var cases []map[string]any
	for _, f := range []string{"deployment", "pod", "service", "configmap", "namespace"} {
		data, err := os.ReadFile("../../testdata/bench/objects/" + f + ".json")
		if err != nil {
			t.Fatal(err)
		}
		v, err := value.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, v.(map[string]any))
	}
	cases = append(cases, map[string]any{
		"floats":  []any{1.0, -0.0, 2.5, 1e20, 1e21, 1e300, -1e19, 9.223372036854775e18, float64(math.MaxInt64), float64(math.MinInt64), 0.1},
		"ints":    []any{int64(math.MaxInt64), int64(math.MinInt64), 7, int32(-3)},
		"numbers": []any{json.Number("12"), json.Number("1.0"), json.Number("1e3"), json.Number("99999999999999999999")},
		"nulls":   map[string]any{"a": nil, "b": []any{nil, map[string]any{"c": nil}}},
		"scalars": []any{"x", true, false, ""},
	})
	r := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(9); {
		case depth > 4 || k < 2:
			return []any{r.Float64() * 1e6, float64(r.IntN(1000)), int64(r.IntN(1000)), "s", true, nil}[r.IntN(6)]
		case k < 5:
			m := map[string]any{}
			for i := range r.IntN(4) {
				m[string(rune('a'+i))] = gen(depth + 1)
			}
			return m
		default:
			l := make([]any, r.IntN(4))
			for i := range l {
				l[i] = gen(depth + 1)
			}
			return l
		}
	}
	for range 500 {
		cases = append(cases, map[string]any{"root": gen(0)})
	}
	for i, c := range cases {
		want, werr := roundTrip(t, c)
		got, gerr := admissionpolicy.Normalize(c)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("case %d: error %v, round trip's %v", i, gerr, werr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d (-round trip +Normalize):\n%s", i, diff)
		}
	}
	if _, err := admissionpolicy.Normalize(map[string]any{"a": math.NaN()}); err == nil {
		t.Error("NaN: no error")
	}
}
