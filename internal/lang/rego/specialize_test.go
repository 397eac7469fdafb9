package rego_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang/rego"
)

// specializeSrc checks containers against parameters through functions of
// several bodies, a library package, negation and a builtin that reads the
// input whole (object.get(input, ...)), as Gatekeeper's templates do.
const specializeSrc = `package t
import data.lib.exempt

violation contains {"msg": msg} if {
	not input.review.operation == "UPDATE"
	c := input.review.object.spec.containers[_]
	not exempt.is_exempt(c)
	msg := check(input.parameters.rule, c)
}

check("MustRunAsNonRoot", c) := msg if {
	not c.securityContext.runAsNonRoot
	msg := sprintf("container %v may run as root", [c.name])
}

check("Max", c) := msg if {
	c.securityContext.runAsUser > input.parameters.max
	msg := sprintf("container %v runs as %v > %v", [c.name, c.securityContext.runAsUser, input.parameters.max])
}
`

const specializeLib = `package lib.exempt

is_exempt(c) if {
	some img in object.get(input, "parameters", {}).exemptImages
	c.image == img
}
`

// TestSpecialize: a program specialized for its parameters gives what the
// program gives, on every input with those parameters.
func TestSpecialize(t *testing.T) {
	ctx := context.Background()
	p, err := rego.Compile(ctx, "data.t.violation", 0, rego.Module{File: "t.rego", Source: specializeSrc}, rego.Module{File: "lib.rego", Source: specializeLib})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(op string, containers ...any) any {
		return map[string]any{"operation": op, "object": map[string]any{"spec": map[string]any{"containers": containers}}}
	}
	c := func(name, image string, user int, nonRoot bool) any {
		return map[string]any{"name": name, "image": image, "securityContext": map[string]any{"runAsUser": user, "runAsNonRoot": nonRoot}}
	}
	reviews := []any{
		pod("CREATE"),
		pod("CREATE", c("a", "nginx", 0, false), c("b", "busybox", 1000, true)),
		pod("UPDATE", c("a", "nginx", 0, false)),
		pod("CREATE", c("a", "exempt", 5000, false), c("b", "nginx", 5000, false)),
		map[string]any{"object": "not an object"},
	}
	for _, params := range []map[string]any{
		{"rule": "MustRunAsNonRoot"},
		{"rule": "MustRunAsNonRoot", "exemptImages": []any{"exempt"}},
		{"rule": "Max", "max": 1000},
		{"rule": "Max", "max": 1000, "exemptImages": []any{"exempt", "nginx"}},
		{"rule": "none"},
		{},
	} {
		pv, err := rego.ToValue(params)
		if err != nil {
			t.Fatal(err)
		}
		sp, ok := p.Specialize(ctx, []string{"parameters"}, []rego.Value{pv}, []string{"review"})
		if !ok || sp == p {
			t.Fatalf("%v: not specialized", params)
		}
		if _, again := sp.Specialize(ctx, []string{"parameters"}, []rego.Value{pv}, []string{"review"}); again {
			t.Errorf("%v: a specialized program specialized again", params)
		}
		for i, r := range reviews {
			rv, err := rego.ToValue(r)
			if err != nil {
				t.Fatal(err)
			}
			keys, vals := []string{"review", "parameters"}, []rego.Value{rv, pv}
			want, werr := p.EvalParts(ctx, keys, vals)
			got, gerr := sp.EvalParts(ctx, keys, vals)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("%v, review %d: errors %v and %v", params, i, werr, gerr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%v, review %d: (-general +specialized)\n%s", params, i, diff)
			}
		}
	}
}

// TestSpecializeRefused: a query that is not a reference is not
// specialized, nor is one whose partial evaluation runs past its budget.
func TestSpecializeRefused(t *testing.T) {
	ctx := context.Background()
	pv, _ := rego.ToValue(map[string]any{"n": 1})
	q, err := rego.CompileWith(ctx, rego.Options{Query: "x := data.t.violation"}, rego.Module{File: "t.rego", Source: specializeSrc}, rego.Module{File: "lib.rego", Source: specializeLib})
	if err != nil {
		t.Fatal(err)
	}
	if sp, ok := q.Specialize(ctx, []string{"parameters"}, []rego.Value{pv}, []string{"review"}); ok || sp != q {
		t.Error("a query specialized")
	}
	// The partial evaluation of x makes nine million steps with the
	// parameters known: past the budget.
	slow, err := rego.Compile(ctx, "data.t.x", 0, rego.Module{File: "t.rego", Source: `package t
x := count([1 | some i in numbers.range(1, 3000); some j in numbers.range(1, 3000); (i + j) % input.parameters.n == 0]) + input.review.y`})
	if err != nil {
		t.Fatal(err)
	}
	if sp, ok := slow.Specialize(ctx, []string{"parameters"}, []rego.Value{pv}, []string{"review"}); ok || sp != slow {
		t.Error("specialized past its budget")
	}
}
