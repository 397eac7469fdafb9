package gatekeeper

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
)

// TestConstantVariablesCost: a constant variable's cost is counted by
// each review that reads it, once, as if the review computed it.
func TestConstantVariablesCost(t *testing.T) {
	code := &celCode{}
	env := cel.NewEnvCache()
	for _, v := range []struct{ name, expr string }{
		{"a", "variables.params.l.map(x, x * 2)"},
		{"b", "variables.a.map(x, x + 1)"},
	} {
		p, ds := cel.Language{Envs: env}.CompileExpr(celEnv(v.name), v.expr)
		if len(ds) > 0 {
			t.Fatal(ds)
		}
		cv := celVar{name: v.name, prog: p}
		cv.constant = code.readsConstants(p)
		code.vars = append(code.vars, cv)
	}
	params := map[string]any{"l": []any{json.Number("1"), json.Number("2"), json.Number("3")}}
	consts := code.constVars(params)
	if len(consts) != 2 || !consts[0].done || !consts[1].done || consts[0].cost == 0 || consts[1].cost == 0 {
		t.Fatalf("constants %+v", consts)
	}
	// A review reading b, then a: each counted once.
	vals := slices.Clone(consts)
	vars := &celVars{code: code, ctx: context.Background(), act: &lang.Activation{Vars: map[string]any{}}, params: params, vals: vals, active: 2}
	for range 2 {
		if _, _, err := vars.Member("b"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := vars.Member("a"); err != nil {
			t.Fatal(err)
		}
	}
	if want := consts[0].cost + consts[1].cost; vars.cost != want {
		t.Errorf("cost %d, want %d (each constant once)", vars.cost, want)
	}
	// The constraint's values are left as they were for the next review.
	if consts[0].counted || consts[1].counted {
		t.Errorf("the constraint's constants marked counted: %+v", consts)
	}
}
