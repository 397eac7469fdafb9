package kyverno

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyvernoautogen"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// Kyverno's MutatingPolicy (policies.kyverno.io) is a
// MutatingAdmissionPolicy and its binding in one: matchConstraints,
// matchConditions (skip) and variables as a ValidatingPolicy's, then its
// mutations in order (ApplyConfiguration merged as server-side apply
// merges, JSONPatch), each over the object the previous left, through the
// API server's mutation code (internal/lang/cel). The policy patches the
// difference; its result is pass ("success") once evaluated, as Kyverno's.

// MPolKind is MutatingPolicy or NamespacedMutatingPolicy.
type MPolKind struct {
	name string
	opts options
}

var _ kinds.Kind = (*MPolKind)(nil)

// Name is MutatingPolicy or NamespacedMutatingPolicy.
func (k *MPolKind) Name() string { return k.name }

// Group is policies.kyverno.io.
func (k *MPolKind) Group() string { return kpoliciesv1.Group }

// Versions are v1, v1beta1 and v1alpha1 (one schema).
func (k *MPolKind) Versions() []string { return celVersions() }

// celMutation is one compiled mutation.
type celMutation struct {
	field string
	m     *cel.Mutation
}

// Compile decodes and compiles a MutatingPolicy.
func (k *MPolKind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	var mp kpoliciesv1.MutatingPolicy
	return compileCELPolicy(k.name, k.name == kpoliciesv1.KindNamespacedMutatingPolicy, k.opts, m, true,
		func(av string) error { return kinds.Decode(m, k.name, av, &mp) },
		func(p *CELPolicy, c *compiler) { p.compileMutating(c, &mp.Spec) },
		func() []celGenerated {
			var out []celGenerated
			for _, g := range kyvernoautogen.MPol(&mp.Spec) {
				out = append(out, celGenerated{g.Name, func(p *CELPolicy, c *compiler) { p.compileMutating(c, g.Spec) }})
			}
			return out
		})
}

func (p *CELPolicy) compileMutating(c *compiler, spec *kpoliciesv1.MutatingPolicySpec) {
	p.compileMatch(c, spec.MatchConstraints, spec.MatchConditions, spec.Variables)
	p.varsFirst = true // Kyverno binds a MutatingPolicy's variables before its match conditions
	cl := c.celLanguage()
	for i, mu := range spec.Mutations {
		f := fmt.Sprintf("spec.mutations[%d]", i)
		var kind cel.MutationKind
		var src string
		switch {
		case mu.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && mu.ApplyConfiguration != nil:
			kind, src, f = cel.ApplyConfiguration, mu.ApplyConfiguration.Expression, f+".applyConfiguration.expression"
		case mu.PatchType == admissionregistrationv1.PatchTypeJSONPatch && mu.JSONPatch != nil:
			kind, src, f = cel.JSONPatch, mu.JSONPatch.Expression, f+".jsonPatch.expression"
		default:
			c.errf(f+".patchType", "must be ApplyConfiguration with applyConfiguration, or JSONPatch with jsonPatch, not %q", mu.PatchType)
			continue
		}
		m, ds := cl.CompileMutation(c.celEnv(f), kind, src)
		for _, d := range ds {
			c.ce.Errors = append(c.ce.Errors, rules.FieldError{Field: f, Pos: d.Pos, Msg: d.Msg})
		}
		if m != nil {
			c.noteReads(m)
		}
		p.mutations = append(p.mutations, celMutation{field: f, m: m})
	}
	if len(spec.Mutations) == 0 {
		c.errf("spec.mutations", "a MutatingPolicy needs at least one mutation")
	}
	var ev *kpoliciesv1.EvaluationConfiguration
	if spec.Evaluation != nil {
		ev = &spec.Evaluation.EvaluationConfiguration
		me := spec.Evaluation.MutateExisting
		p.mutateExisting = me != nil && me.Enabled != nil && *me.Enabled
	}
	p.settings(spec.FailurePolicy, ev)
	p.compileAudit(c, spec.AuditAnnotations)
	if p.mutateExisting {
		for i, mc := range spec.TargetMatchConditions {
			f := fmt.Sprintf("spec.targetMatchConditions[%d].expression", i)
			p.targetConds = append(p.targetConds, celExpr{field: f, prog: c.celProgram(f, mc.Expression), message: mc.Name})
		}
		p.existing = c.mpolTargets(spec)
		if p.existing != nil {
			// The targets that exist are mutated when the policy comes.
			p.info.Existing = []string{""}
			p.info.ExistingResources = p.existing.existingResources()
		}
		// The targets are mutated once the trigger is admitted (the
		// validating phase); the trigger itself in the mutating phase,
		// unless the policy is off at admission.
		p.info.Phase = engine.Validate
		if p.admission {
			p.info.Phase |= engine.Mutate
		}
	}
}

// applyMutations applies the mutations in order to obj (not modified):
// the object they leave, or the result of the one that failed.
func (p *CELPolicy) applyMutations(h *engine.Handle, act *lang.Activation, obj map[string]any) (map[string]any, *RuleResult) {
	cur := obj
	for _, mu := range p.mutations {
		if mu.m == nil {
			continue
		}
		act.Object = cur
		next, _, err := mu.m.Apply(h.Context(), act, cur)
		if err != nil {
			res := celErrorResult(err, fmt.Sprintf("failed to evaluate policy: %s: %v", mu.field, err))
			return nil, &res
		}
		cur = next
	}
	return cur, nil
}

// mutate applies the mutations in order and patches the difference.
func (p *CELPolicy) mutate(h *engine.Handle) RuleResult {
	act, done := p.prepare(h)
	if done != nil {
		return *done
	}
	orig, _ := h.Object().(map[string]any) // never a DELETE: the kernel runs no mutating rule then
	cur, res := p.applyMutations(h, act, orig)
	if res != nil {
		return *res
	}
	act.Object = cur
	props, err := p.auditAnnotations(h.Context(), act)
	if err != nil {
		return RuleResult{Status: Error, Message: err.Error()}
	}
	if err := h.Patch(patch.Diff(orig, cur)); err != nil {
		return RuleResult{Status: Error, Message: "failed to patch resource: " + err.Error()}
	}
	return RuleResult{Status: Pass, Message: "success", Properties: props}
}
