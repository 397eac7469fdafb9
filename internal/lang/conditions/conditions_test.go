package conditions_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/conditions"
	"github.com/modwright/modwright/internal/lang/quantity"
	"github.com/modwright/modwright/internal/lang/subst"
)

func num(s string) json.Number { return json.Number(s) }

func TestEvaluate(t *testing.T) {
	for _, c := range []struct {
		key   any
		op    string
		value any
		want  bool
	}{
		// Equals / NotEquals: types, wildcards, durations, quantities.
		{"nginx", "Equals", "ngi*", true},
		{"nginx", "Equals", "ngin?", true},
		{"nginx", "Equals", "ng?", false},
		{"nginx", "equals", "nginx", true}, // operators ignore case
		{"nginx", "Equal", "nginx", true},  // the old spelling
		{num("3"), "Equals", num("3.0"), true},
		{num("3"), "Equals", "3", true},
		{num("3"), "Equals", true, false},
		{true, "Equals", true, true},
		{true, "Equals", "true", false},
		{"1h", "Equals", "60m", true},
		{"1h", "Equals", num("3600"), true},
		{"1Gi", "Equals", "1024Mi", true},
		{"1Gi", "Equals", "1Gx", false},
		{map[string]any{"a": num("1")}, "Equals", map[string]any{"a": num("1.0")}, true},
		{[]any{"a"}, "Equals", []any{"b"}, false},
		{nil, "Equals", nil, false},
		{nil, "NotEquals", "x", false}, // a null key is never unequal either
		{"a", "NotEquals", num("1"), true},
		{num("2"), "NotEquals", "x", true},
		{"1Gi", "NotEquals", "", true},
		{"nginx", "NotEquals", "ngi*", false},
		// In family.
		{"b", "AnyIn", []any{"a", "b"}, true},
		{"b", "AnyIn", []any{"a*", "c"}, false},
		{"abc", "AnyIn", []any{"a*"}, true},
		{num("5"), "AnyIn", "1-10", true},
		{num("11"), "AnyIn", "1-10", false},
		{num("11"), "AnyNotIn", "1-10", true},
		{[]any{"a", "z"}, "AnyIn", []any{"a"}, true},
		{[]any{"a", "z"}, "AllIn", []any{"a"}, false},
		{[]any{"a", "z"}, "AnyNotIn", []any{"a"}, true},
		{[]any{"a", "z"}, "AllNotIn", []any{"b"}, true},
		{[]any{"a"}, "AllIn", `["a","b"]`, true},
		{[]any{num("5"), num("7")}, "AllIn", "1-10", true},
		{[]any{num("5"), num("70")}, "AllIn", "1-10", false},
		{"x", "In", []any{"x"}, true},
		{"x", "NotIn", []any{"x"}, false},
		{"x", "In", map[string]any{}, false}, // not a list: false
		// Numeric operators.
		{num("5"), "GreaterThan", num("3"), true},
		{num("5"), "GreaterThan", "3", true},
		{"5", "LessThan", num("3"), false},
		{"2Gi", "GreaterThan", "1500Mi", true},
		{"90s", "GreaterThan", "1m", true},
		{"1.10.0", "GreaterThan", "1.9.3", true},
		{"1.10.0", "LessThanOrEquals", "1.10.0", true},
		{"abc", "GreaterThan", "abd", false},
		{true, "GreaterThan", false, false},
		// Duration operators.
		{"2h", "DurationGreaterThan", "1h", true},
		{num("30"), "DurationLessThan", "1m", true},
		{"x", "DurationLessThan", "1m", false},
	} {
		got, err := conditions.Evaluate(c.key, c.op, c.value)
		if err != nil {
			t.Errorf("%v %s %v: %v", c.key, c.op, c.value, err)
			continue
		}
		if got != c.want {
			t.Errorf("%v %s %v = %v, want %v", c.key, c.op, c.value, got, c.want)
		}
	}
	if _, err := conditions.Evaluate("a", "Bigger", "b"); err == nil {
		t.Error("an unknown operator evaluates")
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"", "", true}, {"", "a", false}, {"*", "", true}, {"a*c", "abbc", true}, {"a*c", "abbd", false},
		{"?", "", false}, {"?", "é", true}, {"*a*b", "xaxxb", true}, {"a**", "a", true},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 60), false}, // linear, no blow-up
	} {
		if got := lang.MatchWildcard(c.pattern, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// mapResolver resolves the expressions it knows.
type mapResolver map[string]any

func (m mapResolver) Resolve(_ context.Context, expr string) (any, error) {
	v, ok := m[expr]
	if !ok {
		return nil, subst.ErrUndefined
	}
	return v, nil
}

func TestSet(t *testing.T) {
	r := mapResolver{"name": "web", "replicas": num("5")}
	for _, c := range []struct {
		name    string
		block   conditions.Block
		ok      bool
		msg     string
		steps   []string
		wantErr error
	}{{
		name: "all hold: their messages",
		block: conditions.Block{All: []conditions.Condition{
			{Key: "{{ name }}", Operator: "Equals", Value: "w*", Message: "named {{ name }}"},
			{Key: "{{ replicas }}", Operator: "GreaterThan", Value: num("3"), Message: "many"}}},
		ok: true, msg: "named web; many", steps: []string{"all[0] web Equals w* true", "all[1] 5 GreaterThan 3 true"},
	}, {
		name: "all stops at the first failure",
		block: conditions.Block{All: []conditions.Condition{
			{Key: "{{ replicas }}", Operator: "LessThan", Value: num("3"), Message: "few"},
			{Key: "{{ nope }}", Operator: "Equals", Value: "x"}}},
		ok: false, msg: "few", steps: []string{"all[0] 5 LessThan 3 false"},
	}, {
		name: "any stops at the first that holds; all still runs",
		block: conditions.Block{
			Any: []conditions.Condition{{Key: "a", Operator: "Equals", Value: "b", Message: "not b"}, {Key: "a", Operator: "Equals", Value: "a", Message: "is a"}, {Key: "{{ nope }}", Operator: "Equals", Value: "x"}},
			All: []conditions.Condition{{Key: "x", Operator: "Equals", Value: "y", Message: "not y"}}},
		ok: false, msg: "not b; not y", steps: []string{"any[0] a Equals b false", "any[1] a Equals a true", "all[0] x Equals y false"},
	}, {
		name:  "an empty any never holds",
		block: conditions.Block{Any: []conditions.Condition{}},
		ok:    false,
	}, {
		name:    "an undefined variable is an error naming the field",
		block:   conditions.Block{Any: []conditions.Condition{{Key: "{{ nope }}", Operator: "Equals", Value: "x"}}},
		wantErr: subst.ErrUndefined, steps: []string{"any[0] <nil> Equals <nil> error"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			s, errs := conditions.Compile(c.block)
			if errs != nil {
				t.Fatal(errs)
			}
			var steps []string
			ok, msg, err := s.Eval(context.Background(), r, func(st conditions.Step) {
				res := "false"
				if st.Err != nil {
					res = "error"
				} else if st.Result {
					res = "true"
				}
				steps = append(steps, strings.Join([]string{st.Field, text(st.Key), st.Operator, text(st.Value), res}, " "))
			})
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), "any[0].key") {
					t.Fatalf("error %v, want %v naming any[0].key", err, c.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if ok != c.ok || msg != c.msg {
				t.Errorf("Eval = %v %q, want %v %q", ok, msg, c.ok, c.msg)
			}
			if d := cmp.Diff(c.steps, steps); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
		})
	}
}

func text(v any) string {
	if v == nil {
		return "<nil>"
	}
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

func TestCompileErrors(t *testing.T) {
	_, errs := conditions.Compile(conditions.Block{All: []conditions.Condition{
		{Key: "a", Operator: "Equals", Value: "b"},
		{Key: "a", Operator: "Bigger", Value: "b"}}})
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if d := cmp.Diff([]string{"all[1].operator"}, got); d != "" {
		t.Errorf("error fields (-want +got):\n%s\n%v", d, errs)
	}
}

func FuzzEvaluate(f *testing.F) {
	f.Add(`"a*"`, "Equals", `"abc"`)
	f.Add(`5`, "AnyIn", `"1-10"`)
	f.Add(`["a","b"]`, "AllNotIn", `"[\"a\"]"`)
	f.Add(`"1Gi"`, "GreaterThan", `"1h"`)
	f.Fuzz(func(t *testing.T, key, op, value string) {
		var k, v any
		if json.Unmarshal([]byte(key), &k) != nil || json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		_, _ = conditions.Evaluate(k, op, v)
	})
}

// TestQuantityOutOfRange: a quantity-shaped operand beyond package
// quantity's bounds (an object's "1e999999999": apimachinery's comparison
// of it runs for hours) fails the condition with an error in
// lang.ErrLimit's chain, at once, for every operator that reads
// quantities.
func TestQuantityOutOfRange(t *testing.T) {
	for _, c := range []struct {
		key   any
		op    string
		value any
	}{
		{"1e999999999", "GreaterThan", "1Gi"},
		{"1Gi", "LessThan", "1e999999999"},
		{"1e-999999999", "Equals", "1"},
		{"1", "NotEquals", "-1e999999999"},
		{[]any{"1Gi", "1e999999999"}, "AnyIn", []any{"> 1"}},
		{"2e999999999", "AllIn", []any{"1Gi-2Gi"}},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := conditions.Evaluate(c.key, c.op, c.value)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, lang.ErrLimit) || !errors.Is(err, quantity.ErrOutOfRange) {
				t.Errorf("Evaluate(%v %s %v) = %v, want quantity.ErrOutOfRange", c.key, c.op, c.value, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Evaluate(%v %s %v) did not end", c.key, c.op, c.value)
		}
	}
}
