package kyverno

import (
	"fmt"
	"maps"
	"slices"
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
		{Name: celParams, Doc: "the parameter object of paramKind and paramRef (each in turn), else null"},
		{Name: cel.VarAuthorizer, Doc: "the API server's authorizer; none offline"},
	}}
}

// celV is a compiled validate.cel (or a rule's celPreconditions).
type celV struct {
	vars  []celVar
	exprs []celExpr
	// params are the paramKind and paramRef; nil: none.
	params *celParamRef
	// audit are the audit annotations, added to the request's audit
	// event as an admission policy's are.
	audit []celAudit
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
	p, ds := c.celLanguage().CompileExpr(c.celEnv(field), src)
	for _, d := range ds {
		c.ce.Errors = append(c.ce.Errors, rules.FieldError{Field: field, Pos: d.Pos, Msg: d.Msg})
	}
	if p != nil {
		c.noteReads(p)
	}
	return p
}

func (c *compiler) cel(field string, v *kyvernov1.CEL) (*celV, string) {
	out := &celV{params: c.celParams(field, v.ParamKind, v.ParamRef), audit: c.audits(field+".auditAnnotations", c.p.name, v.AuditAnnotations)}
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

// evalVars binds the variables: each evaluated when an expression first
// reads it, then kept, as the API server binds an admission policy's (a
// variable whose error is never read is no error).
func (cv *celV) evalVars(s *scope, act *lang.Activation) error {
	if len(cv.vars) == 0 {
		return nil
	}
	keys := make([]string, len(cv.vars))
	for i, v := range cv.vars {
		keys[i] = v.name
	}
	type memo struct {
		v          any
		err        error
		done, busy bool
	}
	memos := make([]memo, len(cv.vars))
	act.Vars[celVariables] = &lang.LazyFunc{Keys: keys, Get: func(name string) (any, error) {
		i := slices.Index(keys, name)
		m := &memos[i]
		switch {
		case m.done:
			return m.v, m.err
		case m.busy:
			return nil, fmt.Errorf("variable %s: it reads itself", name)
		case cv.vars[i].prog == nil:
			m.done = true
			return nil, nil
		}
		m.busy = true
		v, _, err := cv.vars[i].prog.EvalValue(s.ctx, act)
		if err != nil {
			err = fmt.Errorf("variable %s: %w", name, err)
		}
		m.v, m.err, m.done, m.busy = v, err, true, false
		return v, err
	}}
	return nil
}

// celPreconditionsHold: every celPreconditions expression is true in act.
func celPreconditionsHold(cv *celV, s *scope, act *lang.Activation) (bool, error) {
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
// message. With params, the expressions run once per parameter object
// (none selected under Allow: the rule passes); the first that fails
// decides.
func (p *Policy) validateCEL(h *engine.Handle, r *rule, s *scope) RuleResult {
	act, err := p.celActivation(h, s)
	if err != nil {
		return errorResult(r, "failed to build the CEL context", err)
	}
	if pr := r.v.cel.params; pr != nil {
		ns := h.Request().Namespace
		if h.Kind() == "Namespace" {
			ns = ""
		}
		params, err := p.params(h, pr, ns)
		if err != nil {
			return errorResult(r, "error in parameterized resource", err)
		}
		for _, param := range params {
			act.Vars[celParams] = param
			if res := p.validateCELWith(h, r, s, act); res.Status != Pass {
				return res
			}
		}
		return RuleResult{Rule: r.name, Status: Pass, Message: fmt.Sprintf("Validation rule '%s' passed.", r.name)}
	}
	return p.validateCELWith(h, r, s, act)
}

// validateCELWith evaluates the rule's celPreconditions (a skip when one
// is false), then its expressions, in act.
func (p *Policy) validateCELWith(h *engine.Handle, r *rule, s *scope, act *lang.Activation) RuleResult {
	// The variables first (bound lazily, afresh for each param): the
	// preconditions may read them, as an admission policy's match
	// conditions may.
	if err := r.v.cel.evalVars(s, act); err != nil {
		return errorResult(r, "validation failed", err)
	}
	if r.celPre != nil {
		ok, err := celPreconditionsHold(r.celPre, s, act)
		if err != nil {
			return errorResult(r, "failed to evaluate cel preconditions", err)
		}
		if !ok {
			return RuleResult{Rule: r.name, Status: Skip, Message: "cel preconditions not met"}
		}
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
	// The audit annotations, whatever the outcome, as the API server adds
	// an admission policy's (Kyverno compiles them but adds none).
	if len(r.v.cel.audit) > 0 {
		annotations, err := evalAudits(s.ctx, act, r.v.cel.audit)
		if err != nil {
			return errorResult(r, "validation failed", err)
		}
		for _, k := range slices.Sorted(maps.Keys(annotations)) {
			h.Annotate(p.name+"/"+k, annotations[k])
		}
	}
	if len(msgs) > 0 {
		return RuleResult{Rule: r.name, Status: Fail, Message: strings.Join(msgs, "; ")}
	}
	return RuleResult{Rule: r.name, Status: Pass, Message: fmt.Sprintf("Validation rule '%s' passed.", r.name)}
}
