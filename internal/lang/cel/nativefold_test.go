package cel

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/lang"
)

// TestNativeFold holds all() and exists() evaluated without cel-go to
// cel-go's value, cost and error: over lists of the object and of
// variables (as JSON and as CEL values, as a Policy's variables are), with
// predicates on the iteration variable, nested ones, and the object.
func TestNativeFold(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 70))
	pick := func(s ...string) string { return s[rnd.IntN(len(s))] }
	var pred func(v string, depth int) string
	pred = func(v string, depth int) string {
		switch rnd.IntN(12) {
		case 0:
			return v + " == 'x'"
		case 1:
			return v + ".a == " + pick("'x'", "'ab'", "1")
		case 2:
			return "has(" + v + ".a)"
		case 3:
			return v + ".?b.orValue(1) " + pick(">", "!=", "<=") + " 0"
		case 4:
			return v + ".?a.orValue('') in ['x', 'ab']"
		case 5:
			return v + ".c"
		case 6:
			return "!has(" + v + ".b) || " + v + ".b == 2"
		case 7:
			if depth < 2 {
				w := pick("y", "z")
				return v + ".l." + pick("all", "exists") + "(" + w + ", " + pred(w, depth+1) + ")"
			}
			return v + " == 'ab'"
		case 8:
			return "object.c == 'x' && " + pred(v, depth)
		case 9:
			return "!(" + pred(v, depth) + ")"
		case 10:
			if rnd.IntN(2) == 0 {
				return v + ".a." + pick("startsWith('a')", "endsWith('b')", "contains('é')", "matches('^a.*b$')")
			}
			return v + ".a.size() > 1" // not native: cel-go evaluates the whole
		}
		return pred(v, depth) + " || " + pred(v, depth)
	}
	ranges := []string{"object.a", "object.b.l", "variables.list", "variables.m.l"}
	var elem func(depth int) any
	elem = func(depth int) any {
		switch rnd.IntN(9) {
		case 0:
			return nil
		case 1:
			return "x"
		case 2:
			return int64(rnd.IntN(3))
		}
		m := map[string]any{}
		if rnd.IntN(4) > 0 {
			m["a"] = []any{"x", "ab", int64(1), nil, strings.Repeat("é", 20)}[rnd.IntN(5)]
		}
		if rnd.IntN(2) > 0 {
			m["b"] = []any{int64(2), int64(-1), "s", nil}[rnd.IntN(4)]
		}
		if rnd.IntN(2) > 0 {
			m["c"] = []any{true, false, "t"}[rnd.IntN(3)]
		}
		if depth < 2 && rnd.IntN(3) > 0 {
			m["l"] = list(rnd, depth+1, elem)
		}
		return m
	}
	native, total := 0, 0
	for range 400 {
		src := pick(ranges...) + "." + pick("all", "exists") + "(x, " + pred("x", 0) + ")"
		p, ds := Language{}.CompileExpr(env(), src)
		if ds != nil {
			t.Fatalf("%s: %v", src, ds)
		}
		for range 30 {
			obj := map[string]any{"a": list(rnd, 0, elem), "b": map[string]any{"l": list(rnd, 0, elem)}, "c": pick("x", "y")}
			if rnd.IntN(8) == 0 {
				obj["a"] = "not a list"
			}
			vars := map[string]any{"list": list(rnd, 0, elem), "m": map[string]any{"l": list(rnd, 0, elem)}}
			asCEL := rnd.IntN(2) == 0 // a variable's value as cel-go computed it
			in := &lang.Activation{Object: obj, Vars: map[string]any{"variables": &lang.LazyFunc{Keys: []string{"list", "m"}, Get: func(name string) (any, error) {
				if asCEL {
					return jsonAdapter.NativeToValue(vars[name]), nil
				}
				return vars[name], nil
			}}}}
			total++
			if p.nbool != nil {
				if _, _, ok := p.nbool.eval(&boolEval{in: in, budget: p.budget}); ok {
					native++
				}
			}
			if err := sameAsCEL(p, in); err != nil {
				t.Fatalf("%s over %v (variables %v, as CEL values %v): %v", src, obj, vars, asCEL, err)
			}
		}
	}
	if native < total/8 {
		t.Errorf("%d of %d evaluations without cel-go: the inputs do not exercise it", native, total)
	}
	t.Logf("%d of %d evaluations without cel-go", native, total)
}

func list(rnd *rand.Rand, depth int, elem func(int) any) []any {
	n := rnd.IntN(5)
	l := make([]any, n)
	for i := range l {
		l[i] = elem(depth)
	}
	return l
}
