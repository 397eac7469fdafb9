package rego

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	oparego "github.com/open-policy-agent/opa/v1/rego"
)

// The bounds of Specialize: the time its partial evaluation and the
// compilation of the residual may take, and the residual's size in rules.
const (
	SpecializeTimeout   = 250 * time.Millisecond
	MaxSpecializedRules = 2000
)

// resultVar is the query variable a specialized program's query binds to
// the entrypoint's value.
const resultVar = "__modwright_result__"

// Specialize is p for inputs whose members keys have the values vals
// (converted already; a rule's parameters, say) and whose members unknown
// vary (the object under review): OPA's partial evaluation does at load
// what depends on the known members only, and the residual (the queries
// and support rules left) is compiled on its own, without p's modules.
// The input an evaluation of the result is given must still hold the
// known members with the same values (a residual may read them whole).
//
// ok is false, and the result p itself, where specializing is not safe or
// not worth it: the partial evaluation failed or ran out of its budget
// (SpecializeTimeout), the residual has more than MaxSpecializedRules
// rules or is not one query, or it reads data or calls a function it
// does not define (a rule of p's modules left unevaluated). A program
// already specialized, or one whose entrypoint is a query rather than a
// reference, is not specialized.
func (p *Program) Specialize(ctx context.Context, keys []string, vals []Value, unknown []string) (_ *Program, ok bool) {
	if p.modules == nil || p.binding != "" {
		return p, false
	}
	entry, err := ast.ParseRef(p.entrypoint)
	if err != nil || !entry.HasPrefix(ast.DefaultRootRef) {
		return p, false
	}
	ctx, cancel := context.WithTimeout(ctx, SpecializeTimeout)
	defer cancel()
	input := partsObject(keys, vals)
	unknowns := make([]*ast.Term, len(unknown))
	for i, u := range unknown {
		unknowns[i] = ast.NewTerm(ast.InputRootRef.Append(ast.StringTerm(u)))
	}
	query := ast.NewBody(ast.Equality.Expr(ast.VarTerm(resultVar), ast.NewTerm(entry)))
	opts := []func(*oparego.Rego){oparego.ParsedQuery(query), oparego.Capabilities(capabilities()),
		oparego.StrictBuiltinErrors(!p.lax), oparego.ParsedUnknowns(unknowns), oparego.ParsedInput(input)}
	for _, m := range p.modules {
		opts = append(opts, oparego.ParsedModule(m))
	}
	pq, err := func() (pq *oparego.PartialQueries, err error) {
		defer func() {
			if r := recover(); r != nil {
				pq, err = nil, ErrEvalPanic
			}
		}()
		return oparego.New(opts...).Partial(ctx)
	}()
	if err != nil || len(pq.Queries) != 1 {
		return p, false
	}
	n := 0
	for _, m := range pq.Support {
		n += len(m.Rules)
	}
	if n > MaxSpecializedRules {
		return p, false
	}
	// The residual is compiled on its own. One that calls a function of
	// p's modules the partial evaluation kept as a call is not
	// specialized: with p's modules beside it, it was slower than p
	// (Gatekeeper's seccomp template: 3x).
	eval, err := compileResidual(ctx, pq, p.lax)
	if err != nil {
		return p, false
	}
	return &Program{entrypoint: p.entrypoint, binding: resultVar, eval: eval, timeout: p.timeout, lax: p.lax}, true
}

// compileResidual compiles the residual: its query and support modules.
// Its compiler knows only the builtins they call (and the operators and
// internal ones compiling may add): a compiler's type environment of
// every builtin is most of the memory it holds.
func compileResidual(ctx context.Context, pq *oparego.PartialQueries, lax bool) (func(context.Context, ...oparego.EvalOption) (oparego.ResultSet, error), error) {
	all := pq.Support
	caps := residualCapabilities(pq.Queries, all)
	c := ast.NewCompiler().WithCapabilities(caps)
	opts := []func(*oparego.Rego){oparego.ParsedQuery(pq.Queries[0]), oparego.Compiler(c),
		oparego.Capabilities(caps), oparego.StrictBuiltinErrors(!lax)}
	for _, m := range all {
		opts = append(opts, oparego.ParsedModule(m))
	}
	prep, err := oparego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, err
	}
	if !selfContained(c, pq.Queries, all) {
		return nil, errNotSelfContained
	}
	return prep.Eval, nil
}

// errNotSelfContained: a residual reads data no rule of it defines.
var errNotSelfContained = errors.New("the residual reads data it does not define")

// selfContained reports whether every reference to data in the residual
// names a rule the residual defines: otherwise a rule of the original
// modules was left unevaluated and would read as undefined.
func selfContained(c *ast.Compiler, queries []ast.Body, modules []*ast.Module) bool {
	ok := true
	visit := func(r ast.Ref) bool {
		if ok && r.HasPrefix(ast.DefaultRootRef) && len(c.GetRules(r)) == 0 {
			ok = false
		}
		return !ok
	}
	for _, q := range queries {
		ast.WalkRefs(q, visit)
	}
	for _, m := range modules {
		ast.WalkRefs(m, visit)
	}
	return ok
}

// residualCapabilities are the allowed builtins the queries and modules
// call, the infix operators and OPA's internal builtins.
func residualCapabilities(queries []ast.Body, modules []*ast.Module) *ast.Capabilities {
	called := map[string]bool{}
	visit := func(x any) bool {
		if e, ok := x.(*ast.Expr); ok && e.IsCall() {
			called[e.Operator().String()] = true
		}
		if c, ok := x.(ast.Call); ok && len(c) > 0 {
			called[c[0].String()] = true
		}
		return false
	}
	for _, q := range queries {
		ast.WalkNodes(q, func(n ast.Node) bool { return visit(n) })
		ast.WalkTerms(q, func(t *ast.Term) bool { return visit(t.Value) })
	}
	for _, m := range modules {
		ast.WalkNodes(m, func(n ast.Node) bool { return visit(n) })
		ast.WalkTerms(m, func(t *ast.Term) bool { return visit(t.Value) })
	}
	c := capabilities()
	kept := c.Builtins[:0:0]
	for _, b := range c.Builtins {
		if called[b.Name] || b.Infix != "" || strings.HasPrefix(b.Name, "internal.") {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	return c
}
