package jmespath

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jmespath-community/go-jmespath/pkg/interpreter"

	"github.com/modwright/modwright/internal/lang"
	bounded "github.com/modwright/modwright/internal/lang/quantity"
)

// hostile are expressions that, on the library's own interpreter,
// allocate without bound or run for hours; each must end with an error
// in lang.ErrLimit's chain, at once.
var hostile = []struct{ name, src string }{
	{"replace_all empty old", "replace_all(replace_all(replace_all(s, '', s), '', s), '', s)"},
	{"replace one char", "replace_all(replace_all(replace_all(replace_all(s, 'a', s), 'a', s), 'a', s), 'a', s)"},
	{"pad_left huge width", "pad_left(s, `1e15`)"},
	{"pad_right nested", "pad_right(pad_right(s, `100000000`), `100000000`)"},
	{"regex empty match", "regex_replace_all('', regex_replace_all('', s, s), regex_replace_all('', s, s))"},
	{"flatten doubling", "l" + strings.Repeat(" | [@, @][]", 40)},
	{"multiselect DAG", "@" + strings.Repeat(" | [@, @]", 64) + " | to_string(@)"},
	{"let DAG", strings.Repeat("let $a = [@, @] in $a | ", 64) + "length(to_string(@))"},
	{"join of shared list", "join(s, [s, s, s, s, s, s, s, s]" + strings.Repeat(" | [@, @, @, @][]", 12) + ")"},
	{"cross product work", crossProduct},
	{"hash DAG", "@" + strings.Repeat(" | {a: @, b: @}", 64) + " | to_string(@)"},
}

// crossProduct visits 64^6 elements.
var crossProduct = "l[*]" + strings.Repeat(".{a: $.l[*]", 6) + strings.Repeat("}", 6)

func hostileDoc() any {
	l := make([]any, 64)
	for i := range l {
		l[i] = float64(i)
	}
	return map[string]any{"s": strings.Repeat("ab", 1024), "l": l}
}

func TestHostileBounded(t *testing.T) {
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			p, ds := Language{}.CompileExpr(&lang.Env{Name: "t"}, tc.src)
			if ds != nil {
				t.Fatalf("compile: %v", ds)
			}
			start := time.Now()
			v, err := p.Search(context.Background(), hostileDoc())
			if !errors.Is(err, lang.ErrLimit) {
				s := ""
				if x, ok := v.(string); ok {
					s = x[:min(len(x), 40)]
				}
				t.Fatalf("Search = %.40v (%d bytes), %v; want an error in lang.ErrLimit's chain", s, len(s), err)
			}
			if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrTooMuchWork) {
				t.Errorf("error %v is neither ErrTooLarge nor ErrTooMuchWork", err)
			}
			t.Logf("%v in %v", err, time.Since(start))
		})
	}
}

// TestSearchStopsAtDeadline: an evaluation working through its budget
// stops when its context ends, not when the budget is spent.
func TestSearchStopsAtDeadline(t *testing.T) {
	p, ds := Language{}.CompileExpr(&lang.Env{Name: "t"}, crossProduct)
	if ds != nil {
		t.Fatal(ds)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Search(ctx, hostileDoc()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Search with an ended context = %v, want context.Canceled", err)
	}
}

func TestDepthBound(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		refused   bool
	}{
		{name: "600000 parentheses", src: strings.Repeat("(", 600000) + "a" + strings.Repeat(")", 600000), refused: true},
		{name: "deep brackets", src: strings.Repeat("[", 300) + "a" + strings.Repeat("]", 300), refused: true},
		{name: "not chain", src: strings.Repeat("!", 300) + "a", refused: true},
		{name: "expref chain", src: "sort_by(@, " + strings.Repeat("& ", 300) + "a)", refused: true},
		{name: "let chain", src: strings.Repeat("let $a = @ in ", 300) + "$a", refused: true},
		{name: "too long", src: "a" + strings.Repeat(".a", MaxSource), refused: true},
		{name: "deep but within", src: strings.Repeat("(", 200) + "a" + strings.Repeat(")", 200)},
		{name: "many siblings", src: strings.Repeat("[a] || ", 1000) + "b"},
		{name: "subtractions", src: strings.Repeat("a - ", 1000) + "b"},
		{name: "quoted brackets", src: "'" + strings.Repeat("(", 1000) + "' || `\"" + strings.Repeat("[", 1000) + "\"`"},
		{name: "not equal", src: strings.Repeat("a != b || ", 300) + "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ds := Language{}.CompileExpr(&lang.Env{Name: "t"}, tc.src)
			refused := ds != nil && (strings.Contains(ds[0].Msg, "nested deeper") || strings.Contains(ds[0].Msg, "longer than"))
			if refused != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", refused, ds, tc.refused)
			}
		})
	}
}

// FuzzEvaluate compares Search with the library's own interpreter (the
// reference) on an expression and a document: the same result, or both
// failing; or Search stopping at a bound.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		"a.b", "a[*].b", "a[?b > `1`].c", "a[]", "a.*", "a[1:3]", "a[::-1]", "'abc'[1:]", "{x: a, y: b}",
		"[a, b][0]", "a || b", "a && b", "!a", "a == b", "a < b", "-a + b * `2`", "length(a)", "sort_by(a, &b)",
		"let $x = a in $x.b", "max_by(a, &b)", "to_string(a)", "join(',', a[*].c)", "map(&b, a)", "a | [0]", "`[1,2]`[]",
		"a[-1]", "$.a", "@", "values(a)", "merge(a, b)", "items(a)", "a.b.c.d", "a[?contains(@, 'x')]",
	} {
		f.Add(s, `{"a": [{"b": 1, "c": "x"}, {"b": 2, "c": "y"}, [3, 4]], "b": {"c": 5}}`)
	}
	f.Fuzz(func(t *testing.T, src, doc string) {
		var data any
		if json.Unmarshal([]byte(doc), &data) != nil {
			return
		}
		p, ds := Language{}.CompileExpr(&lang.Env{Name: "fuzz"}, src)
		if ds != nil {
			return
		}
		for _, call := range []string{"time_now", "time_now_utc", "time_since", "random", "is_external_url"} {
			if strings.Contains(src, call) {
				return // the wall clock, randomness, DNS
			}
		}
		got, err := p.Search(context.Background(), data)
		if errors.Is(err, lang.ErrLimit) {
			return
		}
		want, wantErr := reference(p, data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q over %s: Search error %v, library error %v", src, doc, err, wantErr)
		}
		if err == nil && !cmp.Equal(normalizeFuncs(got), normalizeFuncs(want), cmpopts.EquateNaNs()) &&
			!(unordered(src) && cmp.Equal(sorted(got), sorted(want), cmpopts.EquateNaNs())) {
			t.Fatalf("%q over %s: Search = %#v, library = %#v", src, doc, got, want)
		}
	})
}

// unordered reports whether src may read an object's members in Go's map
// order, which changes from run to run.
func unordered(src string) bool {
	for _, s := range []string{"*", "keys", "values", "items", "group_by", "from_items", "merge", "to_string"} {
		if strings.Contains(src, s) {
			return true
		}
	}
	return false
}

// sorted is v with every list sorted by its elements' JSON text.
func sorted(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		texts := make([]string, len(x))
		for i, e := range x {
			out[i] = sorted(e)
			b, _ := json.Marshal(out[i])
			texts[i] = string(b)
		}
		sort.Sort(byText{out, texts})
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = sorted(e)
		}
		return out
	}
	return normalizeFuncs(v)
}

type byText struct {
	v []any
	t []string
}

func (b byText) Len() int           { return len(b.v) }
func (b byText) Less(i, j int) bool { return b.t[i] < b.t[j] }
func (b byText) Swap(i, j int) {
	b.v[i], b.v[j] = b.v[j], b.v[i]
	b.t[i], b.t[j] = b.t[j], b.t[i]
}

// reference is the library's own interpreter; a panic is an error.
func reference(p *Program, data any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, ErrPanic
		}
	}()
	return interpreter.NewInterpreter(data, p.caller, nil).Execute(p.node, data)
}

// normalizeFuncs replaces expression references (functions, which never
// compare equal) by a marker.
func normalizeFuncs(v any) any {
	if reflect.TypeOf(v) != nil && reflect.TypeOf(v).Kind() == reflect.Func {
		return "<expref>"
	}
	return v
}

// TestQuantityOutOfRange: the arithmetic functions refuse a quantity
// beyond package quantity's bounds (apimachinery's arithmetic on
// "1e999999999" runs for hours) with an error in lang.ErrLimit's chain.
func TestQuantityOutOfRange(t *testing.T) {
	for _, src := range []string{
		"add('1e999999999', '1')", "subtract('1', '1e-999999999')", "sum(['1Gi', '1e999999999'])",
		"multiply('1e999999999', `2`)", "divide('1e999999999', `2`)", "modulo('1e999999999', '3')",
	} {
		p, ds := Language{}.CompileExpr(&lang.Env{Name: "t"}, src)
		if ds != nil {
			t.Fatal(ds)
		}
		done := make(chan error, 1)
		go func() {
			_, err := p.Search(context.Background(), nil)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, lang.ErrLimit) || !errors.Is(err, bounded.ErrOutOfRange) {
				t.Errorf("%s: %v, want bounded.ErrOutOfRange", src, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not end", src)
		}
	}
}
