package cel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
)

// countingLazy is a lang.Lazy that caches its members and counts how many
// it computed.
type countingLazy struct {
	names  []string
	get    func(name string) (any, error)
	cache  map[string]any
	errs   map[string]error
	counts map[string]int
}

func newLazy(names []string, get func(string) (any, error)) *countingLazy {
	return &countingLazy{names: names, get: get, cache: map[string]any{}, errs: map[string]error{}, counts: map[string]int{}}
}

func (l *countingLazy) Member(name string) (any, bool, error) {
	found := false
	for _, n := range l.names {
		found = found || n == name
	}
	if !found {
		return nil, false, nil
	}
	if v, ok := l.cache[name]; ok {
		return v, true, l.errs[name]
	}
	l.counts[name]++
	v, err := l.get(name)
	l.cache[name], l.errs[name] = v, err
	return v, true, err
}

func (l *countingLazy) Names() []string { return l.names }

var _ lang.Lazy = (*countingLazy)(nil)

var errBoom = errors.New("boom")

func TestLazy(t *testing.T) {
	limited := env()
	limited.Limits.MaxWork = 100
	inner, ds := Language{}.CompileExpr(limited, "object.l.all(x, x == 1)")
	if ds != nil {
		t.Fatal(ds)
	}
	obj := map[string]any{"l": bigList(1000), "n": json.Number("2")}
	mk := func() *countingLazy {
		return newLazy([]string{"two", "name", "nil", "boom", "limit", "q", "obj"}, func(name string) (any, error) {
			switch name {
			case "two":
				return json.Number("2"), nil
			case "name":
				return "web", nil
			case "nil":
				return nil, nil
			case "boom":
				return nil, errBoom
			case "limit":
				_, _, err := inner.EvalCost(context.Background(), &lang.Activation{Object: obj})
				return nil, err
			case "q":
				v, _, err := compile(t, "quantity('1Gi')").EvalValue(context.Background(), nil)
				return v, err
			case "obj":
				return map[string]any{"a": []any{json.Number("1")}}, nil
			}
			return nil, nil
		})
	}
	for _, tc := range []struct {
		src   string
		want  any
		err   error  // errors.Is
		msg   string // error contains
		count map[string]int
	}{
		{src: "variables.two + 1", want: json.Number("3"), count: map[string]int{"two": 1}},
		{src: "variables['two'] * variables.two", want: json.Number("4"), count: map[string]int{"two": 1}},
		{src: "variables.name.startsWith('w')", want: true, count: map[string]int{"name": 1}},
		{src: "has(variables.two) && !has(variables.nope)", want: true, count: map[string]int{"two": 1}},
		{src: "has(variables.nil) && variables.nil == null", want: true, count: map[string]int{"nil": 1}},
		{src: "'two' in variables && !('x' in variables)", want: true, count: map[string]int{"two": 1}},
		{src: "size(variables)", want: json.Number("7"), count: map[string]int{}},
		{src: "variables.map(k, k)", want: []any{"two", "name", "nil", "boom", "limit", "q", "obj"}, count: map[string]int{}},
		{src: "variables.exists(k, k == 'name')", want: true, count: map[string]int{}},
		{src: "variables.q.isGreaterThan(quantity('1Mi'))", want: true, count: map[string]int{"q": 1}},
		{src: "variables.obj.a[0]", want: json.Number("1"), count: map[string]int{"obj": 1}},
		{src: "variables.nope", msg: "no such key: nope", count: map[string]int{}},
		{src: "variables.boom", err: errBoom, msg: "boom", count: map[string]int{"boom": 1}},
		{src: "has(variables.boom)", err: errBoom, count: map[string]int{"boom": 1}},
		{src: "variables.two == 2 && variables.boom == 1", err: errBoom, count: map[string]int{"two": 1, "boom": 1}},
		{src: "variables.limit", err: lang.ErrLimit, msg: "cost limit exceeded", count: map[string]int{"limit": 1}},
	} {
		l := mk()
		got, err := compile(t, tc.src).Eval(context.Background(), &lang.Activation{Vars: map[string]any{"variables": l}})
		switch {
		case tc.err != nil || tc.msg != "":
			if err == nil || tc.err != nil && !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Eval(%q) error %v, want %v containing %q", tc.src, err, tc.err, tc.msg)
			}
		case err != nil:
			t.Errorf("Eval(%q): %v", tc.src, err)
		default:
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Eval(%q) (-want +got):\n%s", tc.src, diff)
			}
		}
		if diff := cmp.Diff(tc.count, l.counts); diff != "" {
			t.Errorf("Eval(%q) members computed (-want +got):\n%s", tc.src, diff)
		}
	}
}

func TestEvalCost(t *testing.T) {
	in := &lang.Activation{Object: map[string]any{"l": bigList(10), "s": "abc"}}
	for _, tc := range []struct {
		src      string
		min, max uint64
	}{
		{"true", 0, 0},
		{"object.s == 'abc'", 2, 4},
		{"object.l.all(x, x == 1)", 30, 80},
	} {
		p := compile(t, tc.src)
		_, cost, err := p.EvalCost(context.Background(), in)
		if err != nil || cost < tc.min || cost > tc.max {
			t.Errorf("EvalCost(%q) cost %d, %v, want %d..%d", tc.src, cost, err, tc.min, tc.max)
		}
		_, bcost, err := p.EvalBoolCost(context.Background(), in)
		if err != nil || bcost != cost {
			t.Errorf("EvalBoolCost(%q) cost %d, %v, want %d", tc.src, bcost, err, cost)
		}
	}
	small := env()
	small.Limits.MaxWork = 100
	p, ds := Language{}.CompileExpr(small, "object.l.all(x, x == 1)")
	if ds != nil {
		t.Fatal(ds)
	}
	_, cost, err := p.EvalCost(context.Background(), &lang.Activation{Object: map[string]any{"l": bigList(1000)}})
	if !errors.Is(err, lang.ErrLimit) || cost < 100 {
		t.Errorf("over budget: cost %d, %v, want a limit and a cost of at least 100", cost, err)
	}
	if RuntimeCostBudget != 10_000_000 {
		t.Errorf("RuntimeCostBudget = %d", RuntimeCostBudget)
	}
}
