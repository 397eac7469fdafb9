package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
)

// The policy kinds' lint codes (kinds holds the ones every kind shares).
// They are stable: scripts and docs may refer to them.
const (
	codeCostly        = "W201" // an expression's estimated cost may exceed the per-expression limit
	codeNotIdempotent = "W202" // applying the mutations twice changes the object twice
)

var (
	_ kinds.Linter        = (*Rule)(nil)
	_ kinds.CompileLinter = (*Kind)(nil)
)

// CompileFindings reports a manifest Compile refused (kinds.CompileFindings)
// with the kind's hints.
func (k *Kind) CompileFindings(m *kinds.Manifest, err error) []kinds.Finding {
	fs := kinds.CompileFindings(k.Name(), m, err)
	for i := range fs {
		if fs[i].Code == kinds.CodeUndecodable {
			fs[i].Hint = "check the field names and types against docs/policy.md"
		}
	}
	return fs
}

// Lint warns about a policy that compiles but will not do what its author
// meant: expressions that may run out of cost on large objects, mutations
// that change their own result again.
func (r *Rule) Lint(ctx context.Context, origin string, samples []kinds.Manifest) []kinds.Finding {
	if r.Err != nil {
		return nil
	}
	var out []kinds.Finding
	warn := func(code, field, msg, hint string) {
		out = append(out, kinds.Finding{Severity: kinds.SeverityWarning, Code: code, Origin: origin, Kind: r.Kind, Rule: r.Key, Field: field, Message: msg, Hint: hint})
	}
	costly := func(field string, cost uint64) {
		// An unbounded estimate says the size is unknown (an optional's
		// value, a function's result), not that the expression is costly.
		if cost > cel.PerCallLimit && cost < cel.UnboundedCost {
			warn(codeCostly, field,
				fmt.Sprintf("the estimated cost reaches %d, over the per-expression limit %d, when the lists, maps and strings it reads hold %d elements or bytes: such an evaluation fails (failurePolicy decides)", cost, uint64(cel.PerCallLimit), cel.LargeSize),
				"bound what the expression iterates over (check size() first), or avoid nested loops over lists")
		}
	}
	for _, v := range r.vars {
		costly(v.field, v.prog.LargeCost())
	}
	for _, c := range r.conditions {
		costly(c.field, c.prog.LargeCost())
	}
	for _, v := range r.validates {
		costly(v.field+".cel", v.prog.LargeCost())
		if v.msgExpr != nil {
			costly(v.field+".messageExpression", v.msgExpr.LargeCost())
		}
	}
	for _, m := range r.mutations {
		costly(m.field, m.m.LargeCost())
	}
	for _, a := range r.audits {
		costly(a.field, a.prog.LargeCost())
	}
	if len(r.mutations) > 0 {
		if f, ok := r.checkIdempotent(ctx, origin, samples); ok {
			out = append(out, f)
		}
	}
	return out
}

// checkIdempotent applies the policy to each sample it matches, then again
// to the result (as an UPDATE): the second pass must change nothing.
func (r *Rule) checkIdempotent(ctx context.Context, origin string, samples []kinds.Manifest) (kinds.Finding, bool) {
	op := rules.Create
	if !r.Index.Operations.Has(op) {
		op = rules.Update
	}
	for _, s := range samples {
		obj := s.Object
		ns := r.Namespace
		if r.cluster {
			md, _ := obj["metadata"].(map[string]any)
			ns, _ = md["namespace"].(string)
			kind, _ := obj["kind"].(string)
			if ns == "" && !kinds.IsClusterScoped(kind) {
				ns = "default"
			}
		}
		_, ops := kinds.ApplyAgain(ctx, r, obj, ns, op)
		if len(ops) == 0 {
			continue
		}
		return kinds.Finding{Severity: kinds.SeverityWarning, Code: codeNotIdempotent, Origin: origin, Kind: r.Kind, Rule: r.Key, Field: "spec.mutations",
			Message: fmt.Sprintf("not idempotent: applied again to its own result on %s it changes the object again (%s)", s.Origin, strings.Join(ops, "; ")),
			Hint:    "make each mutation set a value rather than append one (a JSONPatch 'add' to '/-' appends every time), or add a matchCondition that stops once the change is there"}, true
	}
	return kinds.Finding{}, false
}
