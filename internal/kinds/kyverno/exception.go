package kyverno

import (
	"slices"
	"strings"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	kyvernov2 "github.com/modwright/modwright/api/kyverno/v2"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/conditions"
	"github.com/modwright/modwright/internal/rules"
)

// Exception is a compiled PolicyException (kyverno.io/v2, v2beta1): the
// rules it exempts, the objects it matches, its conditions.
type Exception struct {
	key   string // namespace/name
	ns    string
	rules []kyvernov2.Exception
	match matchSpec
	cond  *conditions.Set
	progs programs
	pss   []pssExclude
	// cel is a policies.kyverno.io PolicyException's (celexception.go);
	// such an exception names no rule of a ClusterPolicy.
	cel *celException
}

// CompileException compiles a PolicyException manifest (kyverno.io's, or
// policies.kyverno.io's for the CEL policies); errors name its fields (a
// *rules.CompileError).
func CompileException(m *kinds.Manifest) (*Exception, error) {
	av := m.APIVersion()
	if strings.HasPrefix(av, kpoliciesv1.Group+"/") {
		return compileCELException(m)
	}
	if av != kyvernov1.Group+"/v2beta1" {
		av = kyvernov1.Group + "/v2"
	}
	var pe kyvernov2.PolicyException
	if err := kinds.Decode(m, kyvernov2.KindPolicyException, av, &pe); err != nil {
		return nil, err
	}
	p := &Policy{}
	c := &compiler{p: p, ce: &rules.CompileError{Kind: kyvernov2.KindPolicyException, Rule: m.Key()}}
	ex := &Exception{key: m.Key(), ns: m.Namespace(), rules: pe.Spec.Exceptions}
	ex.match = c.matchSpec("spec.match", &pe.Spec.Match)
	if b := pe.Spec.Conditions; b != nil {
		ex.cond = c.block("spec.conditions", b.All, b.Any, b.Any != nil)
	}
	if len(pe.Spec.Exceptions) == 0 {
		c.errf("spec.exceptions", "an exception names at least one policy and its rules")
	}
	ex.pss = c.pssExcludes("spec.podSecurity", pe.Spec.PodSecurity, nil)
	if len(c.ce.Errors) > 0 {
		return nil, c.ce
	}
	ex.progs = p.progs
	return ex, nil
}

// WithExceptions gives the policies PolicyExceptions (a test suite's).
func WithExceptions(exs ...*Exception) Option {
	return func(o *options) { o.exceptions = append(o.exceptions, exs...) }
}

// ExceptionSource gives the PolicyExceptions current at evaluation (in the
// cluster: those of the namespaces trusted with exceptions, kept by the
// operator as they change).
type ExceptionSource interface {
	Exceptions() []*Exception
}

// WithExceptionSource makes the policies read PolicyExceptions from src at
// each evaluation, beside WithExceptions'.
func WithExceptionSource(src ExceptionSource) Option {
	return func(o *options) { o.exceptionSource = src }
}

// exceptions are the PolicyExceptions of an evaluation.
func (p *Policy) exceptions() []*Exception {
	if p.opts.exceptionSource == nil {
		return p.opts.exceptions
	}
	return append(slices.Clip(p.opts.exceptions), p.opts.exceptionSource.Exceptions()...)
}

// covers: the exception names the policy and rule.
func (ex *Exception) covers(policy, rule string) bool {
	return slices.ContainsFunc(ex.rules, func(e kyvernov2.Exception) bool {
		return e.PolicyName == policy && slices.ContainsFunc(e.RuleNames, func(n string) bool { return lang.MatchWildcard(n, rule) })
	})
}

// exempted returns the exceptions that exempt the object from
// rule r (matched, conditions holding); an error is a condition that could
// not be evaluated.
func (p *Policy) exempted(h *engine.Handle, r *rule, t *target, s *scope) ([]*Exception, error) {
	name := p.name
	if p.ns != "" {
		name = p.info.Namespace + "/" + p.name
	}
	var out []*Exception
	for _, ex := range p.exceptions() {
		if !ex.covers(name, r.name) {
			continue
		}
		ok, err := ex.match.matches(t)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if ex.cond != nil {
			es := *s
			es.progs = &ex.progs
			pass, _, err := ex.cond.Eval(es.ctx, &es, nil)
			if err != nil {
				return nil, err
			}
			if !pass {
				continue
			}
		}
		out = append(out, ex)
	}
	return out, nil
}

func exceptionKeys(exs []*Exception) []string {
	keys := make([]string, len(exs))
	for i, ex := range exs {
		keys[i] = ex.key
	}
	return keys
}

func exceptionSkip(r *rule, keys []string) RuleResult {
	return RuleResult{Rule: r.name, Status: Skip, Message: "rule is skipped due to policy exceptions" + strings.Join(keys, ", ")}
}
