package kyverno

import (
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyvernoautogen"
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
			for _, g := range mpolAutogen(&mp.Spec) {
				out = append(out, celGenerated{g.name, func(p *CELPolicy, c *compiler) { p.compileMutating(c, g.spec) }})
			}
			return out
		})
}

func (p *CELPolicy) compileMutating(c *compiler, spec *kpoliciesv1.MutatingPolicySpec) {
	p.compileMatch(c, spec.MatchConstraints, spec.MatchConditions, spec.Variables)
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
}

// mutate applies the mutations in order and patches the difference.
func (p *CELPolicy) mutate(h *engine.Handle) RuleResult {
	act, done := p.prepare(h)
	if done != nil {
		return *done
	}
	orig, _ := h.Object().(map[string]any) // never a DELETE: the kernel runs no mutating rule then
	cur := orig
	for _, mu := range p.mutations {
		if mu.m == nil {
			continue
		}
		act.Object = cur
		next, _, err := mu.m.Apply(h.Context(), act, cur)
		if err != nil {
			return celErrorResult(err, fmt.Sprintf("failed to evaluate policy: %s: %v", mu.field, err))
		}
		cur = next
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

// mpolGenerated is an autogen MutatingPolicy.
type mpolGenerated struct {
	name string
	spec *kpoliciesv1.MutatingPolicySpec
}

// The paths Kyverno's MutatingPolicy autogen rewrites (in matchConditions
// and ApplyConfiguration expressions only; JSONPatch expressions and
// variables stay as written, as in Kyverno).
var (
	reMPolSpec        = regexp.MustCompile(`\b(object|oldObject|Object)\.spec`)
	reMPolLabels      = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.labels`)
	reMPolAnnotations = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.annotations`)
)

// mpolAutogen is a Pod MutatingPolicy's autogen policies, as Kyverno
// generates them.
func mpolAutogen(spec *kpoliciesv1.MutatingPolicySpec) []mpolGenerated {
	var pc *kpoliciesv1.PodControllers
	if spec.Autogen != nil {
		pc = spec.Autogen.PodControllers
	}
	var out []mpolGenerated
	for _, t := range kyvernoautogen.Targets(spec.MatchConstraints, pc) {
		gen := spec.DeepCopy()
		gen.MatchConstraints, gen.Autogen = t.Match, nil
		for i := range gen.MatchConditions {
			gen.MatchConditions[i].Expression = podToTemplate(gen.MatchConditions[i].Expression, t.Template)
		}
		for i := range gen.Mutations {
			if ac := gen.Mutations[i].ApplyConfiguration; ac != nil && ac.Expression != "" {
				ac.Expression = podToTemplate(ac.Expression, t.Template)
			}
		}
		out = append(out, mpolGenerated{name: t.Name, spec: gen})
	}
	return out
}

// podToTemplate rewrites a Pod expression for the pod template at
// template (spec.template or spec.jobTemplate.spec.template): the paths
// to spec, labels and annotations; an ApplyConfiguration's Object{...}
// wrapped down to the template.
func podToTemplate(expr, template string) string {
	expr = reMPolSpec.ReplaceAllString(expr, "${1}."+template+".spec")
	expr = reMPolLabels.ReplaceAllString(expr, "${1}."+template+".metadata.labels")
	expr = reMPolAnnotations.ReplaceAllString(expr, "${1}."+template+".metadata.annotations")
	rest, ok := strings.CutPrefix(strings.TrimSpace(expr), "Object")
	if !ok {
		return expr
	}
	body, ok := strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), "{")
	if !ok {
		return expr
	}
	depth, end := 1, -1
	for i, r := range body {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth == 0 {
			end = i
			break
		}
	}
	if end <= 0 {
		return expr
	}
	// Object{spec: Object.spec{template: Object.spec.template{ BODY }}} for
	// spec.template; one level per segment of the template's path.
	segs := strings.Split(template, ".")
	var open, close strings.Builder
	open.WriteString("Object{")
	typ := "Object"
	for _, s := range segs {
		typ += "." + s
		open.WriteString(s + ": " + typ + "{")
		close.WriteString("}")
	}
	return open.String() + body[:end] + close.String() + "}" + body[end+1:]
}
