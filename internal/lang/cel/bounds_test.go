package cel

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/quantity"
	"github.com/modwright/modwright/internal/patch"
)

// TestHostileCalls: calls that multiply their arguments are refused
// before they allocate, and quantities beyond package quantity's bounds
// before apimachinery spins on them; each with an error in lang.ErrLimit's
// chain, at once, also when the value comes through variables.
func TestHostileCalls(t *testing.T) {
	obj := map[string]any{
		"s":   strings.Repeat("ab", 2048),
		"q":   "1e999999999",
		"qs":  "-1e-999999999",
		"n":   int64(1) << 40,
		"big": strings.Repeat("x", 64<<10),
	}
	for _, tc := range []struct {
		name, src string
		want      error
	}{
		{"replace empty old", "object.s.replace('', object.s).replace('', object.s).size()", ErrTooLarge},
		{"replace one char", "object.s.replace('a', object.s).replace('a', object.s).size()", nil}, // the cost limit, or the bound
		{"replace through variables", "variables.r.replace('', variables.r).size()", ErrTooLarge},
		{"join of copies", "lists.range(1000).map(i, object.big).join(',').size()", ErrTooLarge},
		{"lists.range from the object", "lists.range(int(object.n)).size()", ErrTooLarge},
		{"string doubling", "[object.big].map(a, [a + a].map(b, [b + b].map(c, [c + c].map(d, [d + d].map(e, [e + e].map(f, [f + f].map(g, [g + g].map(h, [h + h].map(i, i + i)))))))))[0][0][0][0][0][0][0][0][0].size()", ErrTooLarge},
		{"quantity comparison", "quantity(object.q).isGreaterThan(quantity('1Gi'))", quantity.ErrOutOfRange},
		{"small quantity", "quantity(object.qs).asApproximateFloat()", quantity.ErrOutOfRange},
		{"isQuantity", "isQuantity(object.q)", quantity.ErrOutOfRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compile(t, tc.src)
			vars := map[string]any{"variables": map[string]any{"r": strings.Repeat("ab", 4096)}}
			done := make(chan error, 1)
			go func() {
				_, err := p.Eval(context.Background(), &lang.Activation{Object: obj, Vars: vars})
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, lang.ErrLimit) || (tc.want != nil && !errors.Is(err, tc.want)) {
					t.Fatalf("Eval = %v; want %v in lang.ErrLimit's chain", err, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Eval did not end")
			}
		})
	}
}

// TestBoundedCallsKeepSemantics: guarded calls within the bounds give what
// the libraries give.
func TestBoundedCallsKeepSemantics(t *testing.T) {
	for src, want := range map[string]any{
		"'a.b.c'.replace('.', '-')":                      "a-b-c",
		"'a.b.c'.replace('.', '-', 1)":                   "a-b.c",
		"'abc'.replace('', '-')":                         "-a-b-c-",
		"['a', 'b'].join()":                              "ab",
		"['a', 'b'].join(', ')":                          "a, b",
		"'a' + 'b'":                                      "ab",
		"1 + 2":                                          int64(3),
		"[1] + [2] == [1, 2]":                            true,
		"lists.range(3) == [0, 1, 2]":                    true,
		"quantity('1Gi').isGreaterThan(quantity('1Mi'))": true,
		"isQuantity('1e3') && !isQuantity('x')":          true,
		"dyn('a') + dyn('b')":                            "ab",
	} {
		p := compile(t, src)
		got, err := p.Eval(context.Background(), &lang.Activation{Object: map[string]any{}})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if n, ok := got.(interface{ Int64() (int64, error) }); ok {
			got, _ = n.Int64()
		}
		if got != want {
			t.Errorf("%s = %#v, want %#v", src, got, want)
		}
	}
}

// TestJSONPatchCopyBound: copies into their own subtree double the object
// each; the document's growth is bounded after every operation, for a
// custom resource and for a built-in kind (its Go form), and a quantity
// beyond the bounds never reaches apimachinery's decoding of the Go form.
func TestJSONPatchCopyBound(t *testing.T) {
	copies := "lists.range(40).map(i, JSONPatch{op: 'copy', from: '/spec', path: '/spec/c' + string(i)})"
	if _, _, err := mutate(t, JSONPatch, copies, widget); !errors.Is(err, lang.ErrLimit) || !errors.Is(err, patch.ErrTooLarge) {
		t.Errorf("40 copies into their own subtree: %v, want patch.ErrTooLarge in lang.ErrLimit's chain", err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := mutate(t, JSONPatch, "[JSONPatch{op: 'copy', from: '/spec/replicas', path: '/spec/template/spec/containers/0/resources/limits'}, JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/resources/limits', value: {'cpu': '1e-999999999'}}]", deployment)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, quantity.ErrOutOfRange) {
			t.Errorf("a patched quantity beyond the bounds: %v, want quantity.ErrOutOfRange", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the patched Deployment's Go form was never decoded")
	}
}
