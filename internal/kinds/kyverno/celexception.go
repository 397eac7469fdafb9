package kyverno

import (
	"fmt"
	"slices"
	"strings"
	"time"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
)

// celExceptions is the variable Kyverno's CEL policies read the
// exceptions' allowed images and values from.
const celExceptions = "exceptions"

// celException is a compiled PolicyException of Kyverno's CEL policies
// (policies.kyverno.io): the policies it names, its match conditions
// (over the object, the old object, the request and the namespace's
// object, as Kyverno evaluates them, before the policy's own), the images
// and values it allows (none: it exempts in full), its report result and
// expiry.
type celException struct {
	refs           []kpoliciesv1.PolicyRef
	conditions     []celExpr
	images, values []string
	pass           bool // reportResult: pass
	expires        *time.Time
	// notYet: the exception has validations, which Kyverno's
	// PolicyException does not have: it is not granted (Kyverno, whose
	// CRD drops them, grants it on its match conditions alone).
	notYet string
}

// compileCELException compiles a policies.kyverno.io PolicyException.
func compileCELException(m *kinds.Manifest) (*Exception, error) {
	var pe kpoliciesv1.PolicyException
	av := m.APIVersion()
	if !strings.HasPrefix(av, kpoliciesv1.Group+"/") || !slices.Contains(celVersions(), strings.TrimPrefix(av, kpoliciesv1.Group+"/")) {
		av = kpoliciesv1.Group + "/" + kpoliciesv1.Version
	}
	if err := kinds.Decode(m, kpoliciesv1.KindPolicyException, av, &pe); err != nil {
		return nil, err
	}
	c := &compiler{p: &Policy{}, ce: &rules.CompileError{Kind: kpoliciesv1.KindPolicyException, Rule: m.Key()}, orValueCompat: true, data: cel.ClusterData}
	ce := &celException{refs: pe.Spec.PolicyRefs, images: pe.Spec.Images, values: pe.Spec.AllowedValues}
	if len(pe.Spec.PolicyRefs) == 0 {
		c.errf("spec.policyRefs", "an exception names at least one policy")
	}
	for i, r := range pe.Spec.PolicyRefs {
		if r.Name == "" {
			c.errf(fmt.Sprintf("spec.policyRefs[%d].name", i), "must name a policy")
		}
		if r.Kind == "" {
			c.errf(fmt.Sprintf("spec.policyRefs[%d].kind", i), "must name the policy's kind")
		}
	}
	for i, mc := range pe.Spec.MatchConditions {
		f := fmt.Sprintf("spec.matchConditions[%d].expression", i)
		ce.conditions = append(ce.conditions, celExpr{field: f, prog: c.celProgram(f, mc.Expression), message: mc.Name})
	}
	switch pe.Spec.ReportResult {
	case "", "skip":
	case "pass":
		ce.pass = true
	default:
		c.errf("spec.reportResult", "must be skip or pass, not %q", pe.Spec.ReportResult)
	}
	if pe.Spec.ExpiresAt != nil {
		t := pe.Spec.ExpiresAt.Time
		ce.expires = &t
	}
	if len(pe.Spec.Validations) > 0 {
		ce.notYet = "spec.validations is no field of Kyverno's PolicyException: not granted rather than granted on its match conditions alone"
	}
	if len(c.ce.Errors) > 0 {
		return nil, c.ce
	}
	return &Exception{key: m.Key(), ns: m.Namespace(), cel: ce}, nil
}

// celExempted is what the exceptions naming the policy make of an
// evaluation: the keys of those that exempt the object in full (its
// result then skip, or pass), else the images and values those that
// match allow, bound for the policy's expressions as exceptions.
func (p *CELPolicy) celExempted(h *engine.Handle, act *lang.Activation) (keys []string, pass bool, err error) {
	exs := p.opts.exceptions
	if p.opts.exceptionSource != nil {
		exs = append(slices.Clip(exs), p.opts.exceptionSource.Exceptions()...)
	}
	if len(exs) == 0 {
		if p.readsExceptions {
			act.Vars[celExceptions] = map[string]any{"allowedImages": []any{}, "allowedValues": []any{}}
		}
		return nil, false, nil
	}
	images, values := []any{}, []any{}
	now := p.opts.now()
	full := false
	for _, ex := range exs {
		ce := ex.cel
		if ce == nil || ce.notYet != "" || (ce.expires != nil && !now.Before(*ce.expires)) || !ce.names(p) || (p.ns != "" && ex.ns != p.ns) {
			continue
		}
		ok, err := ce.holds(h, act)
		if err != nil {
			if full {
				continue // granted already: a broken later exception does not take it back
			}
			return nil, false, fmt.Errorf("PolicyException %s: %w", ex.key, err)
		}
		if !ok {
			continue
		}
		if len(ce.images) == 0 && len(ce.values) == 0 {
			if !full {
				pass = ce.pass
			}
			full = true
			keys = append(keys, ex.key)
			continue
		}
		if !full {
			for _, i := range ce.images {
				images = append(images, i)
			}
			for _, v := range ce.values {
				values = append(values, v)
			}
		}
	}
	if full {
		return keys, pass, nil
	}
	if p.readsExceptions {
		act.Vars[celExceptions] = map[string]any{"allowedImages": images, "allowedValues": values}
	}
	return nil, false, nil
}

// names reports whether the exception names the policy (its kind as
// Kyverno names it).
func (ce *celException) names(p *CELPolicy) bool {
	return slices.ContainsFunc(ce.refs, func(r kpoliciesv1.PolicyRef) bool { return r.Name == p.name && r.Kind == p.info.Kind })
}

// holds: every match condition is true.
func (ce *celException) holds(h *engine.Handle, act *lang.Activation) (bool, error) {
	for _, mc := range ce.conditions {
		ok, err := mc.prog.EvalBool(h.Context(), act)
		if err != nil {
			return false, fmt.Errorf("%s: %w", mc.field, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
