package cel

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/lang"
)

// TestNativeBool holds the conditions evaluated without cel-go to
// cel-go's value, cost and error: random conditions (has(), comparisons
// with constants of every type, in lists, !, && and ||) over random
// objects (members missing, null, of every type, strings of any code
// points and lengths).
func TestNativeBool(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6, 60))
	names := []string{"a", "b", "c"}
	path := func() string {
		n := 1 + rnd.IntN(3)
		var b strings.Builder
		b.WriteString("object")
		for range n {
			b.WriteString("." + names[rnd.IntN(len(names))])
		}
		return b.String()
	}
	// A member with optional steps and a default: object.a.?b.orValue('x').
	optional := func() string {
		n := 1 + rnd.IntN(3)
		var b strings.Builder
		b.WriteString("object")
		opt := false
		for i := range n {
			if rnd.IntN(2) == 0 || (i == n-1 && !opt) {
				b.WriteString(".?")
				opt = true
			} else {
				b.WriteString(".")
			}
			b.WriteString(names[rnd.IntN(len(names))])
		}
		return b.String() + ".orValue(" + []string{`'x'`, `''`, `1`, `true`}[rnd.IntN(4)] + ")"
	}
	constants := []string{`'x'`, `'ab'`, `''`, `'é€𝄞'`, `'` + strings.Repeat("z", 30) + `'`, `1`, `3`, `-2`, `2.5`, `0.0`, `true`, `false`}
	ops := []string{"==", "!=", "<", "<=", ">", ">="}
	var cond func(depth int) string
	cond = func(depth int) string {
		k := rnd.IntN(10)
		if depth > 2 {
			k %= 4
		}
		switch k {
		case 0:
			return "has(" + path() + ")"
		case 1, 2:
			c, op := constants[rnd.IntN(len(constants))], ops[rnd.IntN(len(ops))]
			member := path()
			if rnd.IntN(3) == 0 {
				member = optional()
			}
			if rnd.IntN(2) == 0 {
				return c + " " + op + " " + member
			}
			return member + " " + op + " " + c
		case 3:
			switch rnd.IntN(3) {
			case 0:
				if rnd.IntN(2) == 0 {
					return optional() + " in ['x', 'ab', 'é€𝄞']"
				}
				return path() + " in ['x', 'ab', 'é€𝄞']"
			case 1:
				return "'" + names[rnd.IntN(len(names))] + "' in " + path()
			}
			return path() + " in [1, 3, -2]"
		case 4:
			if rnd.IntN(3) == 0 {
				member := path()
				if rnd.IntN(3) == 0 {
					member = optional()
				}
				if rnd.IntN(3) == 0 {
					return member + ".matches(" + []string{`'^x'`, `''`, `'é€+$'`, `'^(z{3,}|ab)'`, `'[a-y]'`, `'` + strings.Repeat("z", 25) + `'`}[rnd.IntN(6)] + ")"
				}
				return member + "." + []string{"startsWith", "endsWith", "contains"}[rnd.IntN(3)] + "(" + []string{`'x'`, `''`, `'é€'`, `'` + strings.Repeat("z", 25) + `'`}[rnd.IntN(4)] + ")"
			}
			return "!(" + cond(depth+1) + ")"
		case 5, 6:
			return "(" + cond(depth+1) + " && " + cond(depth+1) + ")"
		case 7, 8:
			return "(" + cond(depth+1) + " || " + cond(depth+1) + ")"
		}
		return []string{"true", "false"}[rnd.IntN(2)] + " && " + cond(depth+1)
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch rnd.IntN(12) {
		case 0:
			return nil
		case 1, 2:
			return int64(rnd.IntN(7) - 3)
		case 3:
			return []float64{2.5, 0, -1.5}[rnd.IntN(3)]
		case 4:
			return rnd.IntN(2) == 0
		case 5:
			return []any{"x"}
		case 6, 7:
			if depth < 3 {
				m := map[string]any{}
				for _, n := range names {
					if rnd.IntN(3) > 0 {
						m[n] = value(depth + 1)
					}
				}
				return m
			}
		}
		return []string{"x", "ab", "", "é€𝄞", "y", strings.Repeat("z", 30), strings.Repeat("é", 200)}[rnd.IntN(7)]
	}
	// full is an object with most members there, to the depth of the
	// paths.
	var full func(depth int) any
	full = func(depth int) any {
		if depth == 3 || rnd.IntN(10) == 0 {
			return value(3)
		}
		m := map[string]any{}
		for _, n := range names {
			if rnd.IntN(10) > 0 {
				m[n] = full(depth + 1)
			}
		}
		return m
	}
	native, total := 0, 0
	for range 1000 {
		src := cond(0)
		p, ds := Language{}.CompileExpr(env(), src)
		if ds != nil {
			t.Fatalf("%s: %v", src, ds)
		}
		if p.nbool == nil {
			t.Fatalf("%s: not evaluated natively", src)
		}
		for range 40 {
			in := &lang.Activation{Object: value(0)}
			if rnd.IntN(4) > 0 {
				in.Object = full(0)
			}
			total++
			if _, _, ok := p.nbool.eval(&boolEval{in: in, budget: p.budget}); ok {
				native++
			}
			if err := sameAsCEL(p, in); err != nil {
				t.Fatalf("%s over %v: %v", src, in.Object, err)
			}
		}
	}
	if native < total/8 {
		t.Errorf("%d of %d evaluations without cel-go: the objects do not exercise it", native, total)
	}
	t.Logf("%d of %d evaluations without cel-go", native, total)
}

// BenchmarkNativeMatches is the load test's Deployment Policies' condition
// (test/load.PolicySet): matches() in an exists() over the containers.
func BenchmarkNativeMatches(b *testing.B) {
	p, ds := Language{}.CompileExpr(env(), `object.spec.template.spec.containers.exists(c, c.image.matches('^nginx:1\\.25'))`)
	if ds != nil {
		b.Fatal(ds)
	}
	in := &lang.Activation{Object: decode(b, deployment).(map[string]any)}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _, err := p.EvalBoolCost(context.Background(), in); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
