package cel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/modwright/modwright/internal/lang"
)

// TestNativeValue holds the expressions evaluated without cel-go to
// cel-go's value, cost and error, on objects that hold what they expect
// (random strings, of any code points and lengths) and objects that do
// not (which cel-go evaluates).
func TestNativeValue(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 50))
	alphabet := []rune("abcXYZ-._/0é€𝄞 ")
	randString := func() string {
		n := rnd.IntN(40)
		switch rnd.IntN(10) {
		case 0:
			n = 0
		case 1:
			n = 1000 + rnd.IntN(5000)
		}
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rnd.IntN(len(alphabet))])
		}
		return b.String()
	}
	randValue := func() any {
		switch rnd.IntN(8) {
		case 0:
			return nil
		case 1:
			return int64(rnd.IntN(100))
		case 2:
			return map[string]any{"a": "b"}
		case 3:
			return []any{"x"}
		}
		return randString()
	}
	object := func() any {
		md := map[string]any{}
		for _, k := range []string{"name", "namespace"} {
			if rnd.IntN(6) > 0 {
				md[k] = randValue()
			}
		}
		if rnd.IntN(4) > 0 {
			md["labels"] = map[string]any{"app.kubernetes.io/name": randValue()}
		}
		obj := map[string]any{"kind": "Deployment"}
		switch rnd.IntN(8) {
		case 0:
		case 1:
			obj["metadata"] = randValue()
		default:
			obj["metadata"] = md
		}
		return obj
	}
	for _, tc := range []struct {
		src    string
		budget int64
	}{
		{`object.metadata.name + '-n'`, 0},
		{`'p-é' + object.metadata.name`, 0},
		{`object.metadata.name`, 0},
		{`object['metadata'].labels['app.kubernetes.io/name'] + '-𝄞'`, 0},
		{`object.metadata.namespace + ''`, 0},
		{`object.metadata.name + '-n'`, 60}, // a long name costs more: cel-go refuses
	} {
		t.Run(tc.src, func(t *testing.T) {
			e := env()
			e.Limits.MaxWork = tc.budget
			p, ds := Language{}.CompileExpr(e, tc.src)
			if ds != nil {
				t.Fatal(ds)
			}
			if p.native == nil {
				t.Fatal("not evaluated natively")
			}
			native, refused := 0, 0
			for i := range 2000 {
				in := &lang.Activation{Object: object()}
				if _, _, ok := p.native.eval(in, p.budget); ok {
					native++
				} else if _, _, err := p.evalCEL(context.Background(), in); err != nil {
					refused++
				}
				if err := sameAsCEL(p, in); err != nil {
					t.Fatalf("object %d %v: %v", i, in.Object, err)
				}
			}
			if native < 500 || refused < 100 {
				t.Errorf("%d evaluations without cel-go, %d errors: the objects do not exercise both", native, refused)
			}
		})
	}
}

// TestNativeValueBound: a string joined past MaxOutput is cel-go's, which
// refuses it (guardAdd), whatever the budget.
func TestNativeValueBound(t *testing.T) {
	e := env()
	e.Limits.MaxWork = 1 << 40
	p, ds := Language{}.CompileExpr(e, `object.metadata.name + '-n'`)
	if ds != nil {
		t.Fatal(ds)
	}
	in := &lang.Activation{Object: map[string]any{"metadata": map[string]any{"name": strings.Repeat("𝄞", MaxOutput/4)}}}
	if _, _, ok := p.native.eval(in, p.budget); ok {
		t.Error("evaluated without cel-go past MaxOutput")
	}
	if _, _, err := p.eval(context.Background(), in); err == nil {
		t.Error("a string joined past MaxOutput: no error")
	}
}

// sameAsCEL is an error when p's evaluation over in (native where it can
// be) differs from cel-go's in value, cost or failing.
func sameAsCEL(p *Program, in *lang.Activation) error {
	got, gotCost, gotErr := p.eval(context.Background(), in)
	want, wantCost, wantErr := p.evalCEL(context.Background(), in)
	if (gotErr != nil) != (wantErr != nil) || gotCost != wantCost || (wantErr == nil && got.Equal(want) != types.True) {
		return fmt.Errorf("got %v, cost %d, %v; cel-go %v, cost %d, %v", got, gotCost, gotErr, want, wantCost, wantErr)
	}
	return nil
}
