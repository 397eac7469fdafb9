package gatekeeper

import (
	"context"
	"fmt"
	"slices"
	"strings"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
)

// The variables of a K8sNativeValidation expression, as a
// ValidatingAdmissionPolicy names them (params is not declared: as in
// Gatekeeper, the constraint's parameters are variables.params).
const (
	celRequest   = "request"
	celNamespace = "namespaceObject"
	celVariables = "variables"
	varParams    = "params"
	varAnyObject = "anyObject"
	gkInternal   = "gatekeeper_internal_"
)

func celEnv(name string) *lang.Env {
	return &lang.Env{Name: name, Vars: []lang.Var{
		{Name: cel.VarObject, Doc: "the object (null on DELETE)"},
		{Name: cel.VarOldObject, Doc: "the existing object (UPDATE, DELETE), else null"},
		{Name: celRequest, Doc: "the admission request's attributes"},
		{Name: celNamespace, Doc: "the object's Namespace, null when unknown"},
		{Name: celVariables, Doc: "params (the constraint's parameters), anyObject (the object, or the old one on DELETE) and the template's variables"},
	}}
}

// celCode is a compiled K8sNativeValidation source: Gatekeeper runs it as
// a ValidatingAdmissionPolicy whose params are the constraint.
type celCode struct {
	vars        []celVar // the template's, after params and anyObject
	conds       []celCond
	validations []celValidation
	failClosed  bool // failurePolicy Fail (the default)
}

type celVar struct {
	name string
	prog *cel.Program
	// constant: the variable reads only params and constant variables
	// before it, so that its value is the same for every review of a
	// constraint (computed when the constraint loads: constVars).
	constant bool
}

type celCond struct {
	name string
	prog *cel.Program
}

type celValidation struct {
	prog    *cel.Program
	message string
	msgExpr *cel.Program
}

// compileCEL compiles a K8sNativeValidation source at field.
func compileCEL(field string, raw []byte, envs *cel.EnvCache, errf errfFunc) *celCode {
	var src gkv1.CELSource
	if err := strictJSON(raw, &src); err != nil {
		errf(field, -1, "%v", err)
		return nil
	}
	out := &celCode{failClosed: true}
	if fp := src.FailurePolicy; fp != nil {
		switch *fp {
		case "Fail":
		case "Ignore":
			out.failClosed = false
		default:
			errf(field+".failurePolicy", -1, "must be Fail or Ignore, not %q", *fp)
		}
	}
	compile := func(f, expr string) *cel.Program {
		p, ds := cel.Language{Envs: envs}.CompileExpr(celEnv(f), expr)
		for _, d := range ds {
			errf(f, d.Pos, "%s", d.Msg)
		}
		return p
	}
	seen := map[string]bool{varParams: true, varAnyObject: true}
	for i, v := range src.Variables {
		f := fmt.Sprintf("%s.variables[%d]", field, i)
		switch {
		case v.Name == varParams || v.Name == varAnyObject:
			errf(f+".name", -1, "%s is Gatekeeper's own variable", v.Name)
			continue
		case strings.HasPrefix(v.Name, gkInternal):
			errf(f+".name", -1, "names beginning %s are Gatekeeper's", gkInternal)
			continue
		case seen[v.Name]:
			errf(f+".name", -1, "duplicate variable %q", v.Name)
			continue
		}
		seen[v.Name] = true
		cv := celVar{name: v.Name, prog: compile(f+".expression", v.Expression)}
		cv.constant = cv.prog != nil && cv.prog.Reads(celVariables) && out.readsConstants(cv.prog)
		out.vars = append(out.vars, cv)
	}
	for i, mc := range src.MatchCondition {
		f := fmt.Sprintf("%s.matchCondition[%d]", field, i)
		if strings.HasPrefix(mc.Name, gkInternal) {
			errf(f+".name", -1, "names beginning %s are Gatekeeper's", gkInternal)
			continue
		}
		out.conds = append(out.conds, celCond{name: mc.Name, prog: compile(f+".expression", mc.Expression)})
	}
	for i, v := range src.Validations {
		f := fmt.Sprintf("%s.validations[%d]", field, i)
		cv := celValidation{prog: compile(f+".expression", v.Expression), message: strings.TrimSpace(v.Message)}
		if v.MessageExpression != "" {
			cv.msgExpr = compile(f+".messageExpression", v.MessageExpression)
		}
		out.validations = append(out.validations, cv)
	}
	if len(src.Validations) == 0 {
		errf(field+".validations", -1, "K8sNativeValidation needs at least one validation")
	}
	return out
}

// readsConstants reports whether the variables p reads are params and
// the constant variables compiled so far.
func (code *celCode) readsConstants(p *cel.Program) bool {
	members, whole := p.Members(celVariables)
	if whole {
		return false
	}
	for _, m := range members {
		if m == varParams {
			continue
		}
		i := slices.IndexFunc(code.vars, func(v celVar) bool { return v.name == m })
		if i < 0 || !code.vars[i].constant {
			return false
		}
	}
	return true
}

// constVars computes the constant variables of a constraint whose
// variables.params is params (nil when the code has none): their values,
// errors and costs, each counted in a review's budget when the review
// reads it, as if computed then. They are CEL values no evaluation
// changes, shared by the constraint's reviews.
func (code *celCode) constVars(params any) []varValue {
	if !slices.ContainsFunc(code.vars, func(v celVar) bool { return v.constant }) {
		return nil
	}
	vals := make([]varValue, len(code.vars))
	vars := &celVars{code: code, ctx: context.Background(), act: &lang.Activation{Vars: map[string]any{}}, params: params, vals: vals, active: len(code.vars)}
	vars.act.Vars[celVariables] = vars
	for i, v := range code.vars {
		if v.constant {
			vars.Member(v.name)      //nolint:errcheck // kept in vals[i]
			vals[i].cost = vars.cost // its own: the constants it read were counted already
			vars.cost = 0
		}
	}
	for i := range vals {
		vals[i].counted = false // counted by each review that reads it
	}
	return vals
}

// celVars is `variables` for one evaluation: params and anyObject, then
// the template's variables, each computed on first read (a variable reads
// those before it), its value or error kept.
type celVars struct {
	code *celCode
	ctx  context.Context
	act  *lang.Activation
	// params and anyObject are Gatekeeper's own variables.
	params, anyObject any
	vals              []varValue
	cost              uint64
	active            int // the variables visible: those before the one being computed
}

// varValue is a variable's value once computed, and what computing it
// cost (a constant's: counted when a review first reads it).
type varValue struct {
	val     any
	err     error
	done    bool
	cost    uint64
	counted bool
}

var _ lang.Lazy = (*celVars)(nil)

func (v *celVars) Member(name string) (any, bool, error) {
	switch name {
	case varParams:
		return v.params, true, nil
	case varAnyObject:
		return v.anyObject, true, nil
	}
	for i := 0; i < v.active; i++ {
		if v.code.vars[i].name != name {
			continue
		}
		cv := &v.vals[i]
		if !cv.done {
			prev := v.active
			v.active = i
			val, cost, err := v.code.vars[i].prog.EvalValue(v.ctx, v.act)
			v.active = prev
			v.cost += cost
			if err != nil {
				err = &varError{name: name, err: err}
			}
			cv.val, cv.err, cv.done, cv.counted = val, err, true, true
		} else if !cv.counted {
			v.cost += cv.cost
			cv.counted = true
		}
		return cv.val, true, cv.err
	}
	return nil, false, nil
}

func (v *celVars) Names() []string {
	names := []string{varParams, varAnyObject}
	for i := 0; i < v.active; i++ {
		names = append(names, v.code.vars[i].name)
	}
	return names
}

// varError is a variable's error, worded without the CEL package's
// prefix (the evaluation that read the variable adds its own).
type varError struct {
	name string
	err  error
}

func (e *varError) Error() string {
	return "variable " + e.name + ": " + strings.TrimPrefix(e.err.Error(), "cel: ")
}
func (e *varError) Unwrap() error { return e.err }

// celError is an expression's error without the CEL package's prefix.
func celError(err error) string { return strings.TrimPrefix(err.Error(), "cel: ") }

// celViolations evaluates the code as Gatekeeper's K8sNativeValidation
// driver does (the API server's validator): every match condition must
// hold; each validation that is false is a violation with its message
// (messageExpression, else message, else "failed expression: ..."); an
// error is a violation under failurePolicy Fail, nothing under Ignore.
func (c *Constraint) celViolations(h *engine.Handle, st *evalState, nsObj map[string]any) ([]Violation, error) {
	code := c.t.celCode
	q := h.Request()
	obj, old := h.Object(), oldObject(q)
	act := &lang.Activation{Object: obj, OldObject: old, Vars: make(map[string]any, 3)}
	anyObject := obj
	if q.Operation == rules.Delete {
		act.Object = nil // as the API server: no object on DELETE
		anyObject = old
		if anyObject == nil {
			anyObject = obj
		}
	}
	act.Vars[celRequest] = st.celRequest(h)
	if nsObj != nil {
		act.Vars[celNamespace] = nsObj
	}
	vals := make([]varValue, len(code.vars))
	copy(vals, c.celConst)
	vars := &celVars{code: code, ctx: h.Context(), act: act, params: c.celParams, anyObject: anyObject,
		vals: vals, active: len(code.vars)}
	act.Vars[celVariables] = vars
	var out []Violation
	fail := func(err error) ([]Violation, error) {
		if h.Context().Err() != nil {
			return nil, engine.InField("spec.targets[0].code", err)
		}
		if !code.failClosed {
			return out, nil
		}
		return append(out, Violation{Msg: err.Error(), Details: map[string]any{}}), nil
	}
	for _, mc := range code.conds {
		ok, cost, err := mc.prog.EvalBoolCost(h.Context(), act)
		vars.cost += cost
		if err != nil {
			return fail(fmt.Errorf("failed to evaluate match condition %s: %s", mc.name, celError(err)))
		}
		if !ok {
			return nil, nil
		}
	}
	for _, v := range code.validations {
		ok, cost, err := v.prog.EvalBoolCost(h.Context(), act)
		vars.cost += cost
		if vars.cost > cel.RuntimeCostBudget {
			return fail(fmt.Errorf("validation failed due to running out of cost budget, no further validation rules will be run"))
		}
		if err != nil {
			if out, err = fail(fmt.Errorf("expression '%s' resulted in error: %s", v.prog.Source(), celError(err))); err != nil {
				return nil, err
			}
			continue
		}
		if ok {
			continue
		}
		msg := v.message
		if v.msgExpr != nil {
			if m, cost, err := v.msgExpr.EvalCost(h.Context(), act); err == nil {
				vars.cost += cost
				if s, ok := m.(string); ok && strings.TrimSpace(s) != "" && !strings.Contains(s, "\n") {
					msg = strings.TrimSpace(s)
				}
			}
		}
		if msg == "" {
			msg = "failed expression: " + strings.TrimSpace(v.prog.Source())
		}
		out = append(out, Violation{Msg: msg, Details: map[string]any{}})
	}
	return out, nil
}
