package rego_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/lang/rego"
)

func TestEval(t *testing.T) {
	p, err := rego.Compile(context.Background(), "data.t.derive", 0, rego.Module{File: "t.rego", Source: `package t
derive contains x if {
	some c in input.spec.containers
	x := c.name
}`})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Eval(context.Background(), map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := out.([]any); !ok || len(l) != 2 {
		t.Errorf("out %v", out)
	}
	if out, err := p.Eval(context.Background(), map[string]any{}); err != nil || out != nil && len(out.([]any)) != 0 {
		t.Errorf("no containers: %v, %v", out, err)
	}
}

// TestGuardrails: no builtin reads outside the input; a rule that runs
// too long ends at its budget.
func TestGuardrails(t *testing.T) {
	ctx := context.Background()
	for _, call := range []string{`http.send({"method": "GET", "url": "http://x"})`, `net.lookup_ip_addr("example.com")`, `opa.runtime()`, `time.now_ns()`, `rand.intn("x", 10)`, `uuid.rfc4122("x")`} {
		_, err := rego.Compile(ctx, "data.t.x", 0, rego.Module{File: "t.rego", Source: "package t\nx := " + call})
		if !errors.Is(err, rego.ErrCompile) || !strings.Contains(err.Error(), "undefined function") {
			t.Errorf("%s: %v", call, err)
		}
	}
	p, err := rego.Compile(ctx, "data.t.derive", 60*time.Millisecond, rego.Module{File: "t.rego", Source: `package t
derive := count([x | some x in numbers.range(0, 100000000)])`})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Eval(ctx, map[string]any{})
	if !errors.Is(err, rego.ErrEvalTimeout) {
		t.Fatalf("error %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("ended after %v", took)
	}
	// The caller's deadline stops it too, before its own budget.
	long, err := rego.Compile(ctx, "data.t.derive", time.Second, rego.Module{File: "t.rego", Source: `package t
derive := count([x | some x in numbers.range(0, 100000000)])`})
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err = long.Eval(dctx, map[string]any{}); !errors.Is(err, rego.ErrEvalTimeout) {
		t.Fatalf("error %v", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("ended %v after the caller's deadline of 30ms", took)
	}
	for _, c := range []struct {
		in, want time.Duration
		clamped  bool
	}{{0, rego.DefaultTimeout, false}, {time.Millisecond, rego.MinTimeout, true}, {time.Minute, rego.MaxTimeout, true}, {200 * time.Millisecond, 200 * time.Millisecond, false}} {
		if got, clamped := rego.ClampTimeout(c.in); got != c.want || clamped != c.clamped {
			t.Errorf("ClampTimeout(%v) = %v, %v", c.in, got, clamped)
		}
	}
}
