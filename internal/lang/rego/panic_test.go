package rego

import (
	"context"
	"errors"
	"testing"

	oparego "github.com/open-policy-agent/opa/v1/rego"
)

// TestEvalPanic: a panic inside OPA's evaluation is recovered and reported
// as ErrEvalPanic; the program stays usable.
func TestEvalPanic(t *testing.T) {
	p, err := Compile(context.Background(), "data.t.x", 0, Module{File: "t.rego", Source: "package t\nx := 1"})
	if err != nil {
		t.Fatal(err)
	}
	eval := p.eval
	p.eval = func(context.Context, ...oparego.EvalOption) (oparego.ResultSet, error) { panic("boom") }
	if _, err := p.Eval(context.Background(), map[string]any{}); !errors.Is(err, ErrEvalPanic) {
		t.Fatalf("got %v, want ErrEvalPanic", err)
	}
	p.eval = eval
	if v, err := p.Eval(context.Background(), map[string]any{}); err != nil || v == nil {
		t.Fatalf("after the panic: %v %v", v, err)
	}
}
