package kyverno

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
)

// The variables of a validate.cel expression, as a ValidatingAdmissionPolicy
// names them.
const (
	celRequest   = "request"
	celNamespace = "namespaceObject"
	celVariables = "variables"
	celParams    = "params"
)

func celEnv(name string) *lang.Env {
	return &lang.Env{Name: name, Vars: []lang.Var{
		{Name: cel.VarObject, Doc: "the object (null on DELETE)"},
		{Name: cel.VarOldObject, Doc: "the existing object (UPDATE, DELETE), else null"},
		{Name: celRequest, Doc: "the admission request's attributes"},
		{Name: celNamespace, Doc: "the object's Namespace, null for cluster-scoped objects"},
		{Name: celVariables, Doc: "the rule's variables, by name"},
		{Name: celParams, Doc: "the parameters (none: paramKind is not supported yet)"},
		{Name: cel.VarAuthorizer, Doc: "the API server's authorizer; none offline"},
	}}
}

// celV is a compiled validate.cel (or a rule's celPreconditions).
type celV struct {
	vars  []celVar
	exprs []celExpr
}

type celVar struct {
	name string
	prog *cel.Program
}

type celExpr struct {
	field   string
	prog    *cel.Program
	message string
	msgExpr *cel.Program
}

func (c *compiler) celProgram(field, src string) *cel.Program {
	p, ds := cel.Language{Envs: c.p.opts.celEnvs, OrValueCompat: c.orValueCompat}.CompileExpr(celEnv(field), src)
	for _, d := range ds {
		c.ce.Errors = append(c.ce.Errors, rules.FieldError{Field: field, Pos: d.Pos, Msg: d.Msg})
	}
	return p
}

func (c *compiler) cel(field string, v *kyvernov1.CEL) (*celV, string) {
	if v.ParamKind != nil || v.ParamRef != nil {
		return nil, "validate.cel with paramKind or paramRef is not evaluated yet"
	}
	out := &celV{}
	for i, vr := range v.Variables {
		f := fmt.Sprintf("%s.variables[%d].expression", field, i)
		out.vars = append(out.vars, celVar{name: vr.Name, prog: c.celProgram(f, vr.Expression)})
	}
	for i, e := range v.Expressions {
		f := fmt.Sprintf("%s.expressions[%d]", field, i)
		ce := celExpr{field: f, prog: c.celProgram(f+".expression", e.Expression), message: e.Message}
		if e.MessageExpression != "" {
			ce.msgExpr = c.celProgram(f+".messageExpression", e.MessageExpression)
		}
		out.exprs = append(out.exprs, ce)
	}
	if len(v.Expressions) == 0 {
		c.errf(field+".expressions", "validate.cel needs at least one expression")
	}
	return out, ""
}

func (c *compiler) celPreconditions(field string, mcs []admissionregistrationv1.MatchCondition) *celV {
	out := &celV{}
	for i, mc := range mcs {
		f := fmt.Sprintf("%s[%d].expression", field, i)
		out.exprs = append(out.exprs, celExpr{field: f, prog: c.celProgram(f, mc.Expression), message: mc.Name})
	}
	return out
}

// celActivation is the input of a rule's CEL expressions.
func (p *Policy) celActivation(h *engine.Handle, s *scope) (*lang.Activation, error) {
	q := h.Request()
	var obj, old any
	if q.Operation != rules.Delete {
		obj = s.obj
	}
	if req, ok := s.doc["request"].(map[string]any); ok && q.Operation != rules.Create {
		old = jsonOf(req["oldObject"])
	}
	return celActivationOf(h, s.ctx, obj, old)
}

// evalVars evaluates the variables in order (each may read the earlier).
func (cv *celV) evalVars(s *scope, act *lang.Activation) error {
	if len(cv.vars) == 0 {
		return nil
	}
	vars := map[string]any{}
	act.Vars[celVariables] = vars
	for _, v := range cv.vars {
		if v.prog == nil {
			continue
		}
		val, err := v.prog.Eval(s.ctx, act)
		if err != nil {
			return fmt.Errorf("variable %s: %w", v.name, err)
		}
		vars[v.name] = val
	}
	return nil
}

// celPreconditionsHold: every celPreconditions expression is true.
func (p *Policy) celPreconditionsHold(h *engine.Handle, cv *celV, s *scope) (bool, error) {
	act, err := p.celActivation(h, s)
	if err != nil {
		return false, err
	}
	for _, e := range cv.exprs {
		if e.prog == nil {
			continue
		}
		ok, err := e.prog.EvalBool(s.ctx, act)
		if err != nil {
			return false, fmt.Errorf("%s: %w", e.field, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// validateCEL is Kyverno's validate.cel: the expressions of a
// ValidatingAdmissionPolicy; the first false one fails the rule with its
// message.
func (p *Policy) validateCEL(h *engine.Handle, r *rule, s *scope) RuleResult {
	act, err := p.celActivation(h, s)
	if err != nil {
		return errorResult(r, "failed to build the CEL context", err)
	}
	if err := r.v.cel.evalVars(s, act); err != nil {
		return errorResult(r, "validation failed", err)
	}
	var msgs []string
	for _, e := range r.v.cel.exprs {
		if e.prog == nil {
			continue
		}
		ok, err := e.prog.EvalBool(s.ctx, act)
		if err := s.ctx.Err(); err != nil {
			return errorResult(r, "validation failed", err)
		}
		if err != nil {
			// As a ValidatingAdmissionPolicy under failurePolicy Fail,
			// which Kyverno evaluates validate.cel as: the expression's
			// error denies.
			msgs = append(msgs, fmt.Sprintf("expression '%s' resulted in error: %v", e.prog.Source(), err))
			continue
		}
		if ok {
			continue
		}
		msg := e.message
		if e.msgExpr != nil {
			if v, err := e.msgExpr.Eval(s.ctx, act); err == nil {
				if m, ok := v.(string); ok && m != "" {
					msg = m
				}
			}
		}
		if msg == "" {
			msg = r.v.rawMessage
		}
		if msg == "" {
			msg = "failed expression: " + e.prog.Source()
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) > 0 {
		return RuleResult{Rule: r.name, Status: Fail, Message: strings.Join(msgs, "; ")}
	}
	return RuleResult{Rule: r.name, Status: Pass, Message: fmt.Sprintf("Validation rule '%s' passed.", r.name)}
}
