package kyverno

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Kyverno's GeneratingPolicy (policies.kyverno.io) generates objects when
// the objects it matches are admitted: matchConstraints, matchConditions
// (skip) and variables as a ValidatingPolicy's, then its generate
// expressions, which hand the objects to generator.Apply(namespace,
// objects). The objects carry Kyverno's generate labels and go to the
// engine (Handle.Generate); the result is pass once evaluated, with them.
// evaluation.synchronize keeps them as the policy makes them (in the
// cluster: internal/generator) and deletes them with their trigger.

// GPolKind is GeneratingPolicy or NamespacedGeneratingPolicy.
type GPolKind struct {
	name string
	opts options
}

var _ kinds.Kind = (*GPolKind)(nil)

// Name is GeneratingPolicy or NamespacedGeneratingPolicy.
func (k *GPolKind) Name() string { return k.name }

// Group is policies.kyverno.io.
func (k *GPolKind) Group() string { return kpoliciesv1.Group }

// Versions are v1, v1beta1 and v1alpha1 (one schema).
func (k *GPolKind) Versions() []string { return celVersions() }

// Compile decodes and compiles a GeneratingPolicy.
func (k *GPolKind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	var gp kpoliciesv1.GeneratingPolicy
	return compileCELPolicy(k.name, k.name == kpoliciesv1.KindNamespacedGeneratingPolicy, k.opts, m, false,
		func(av string) error { return kinds.Decode(m, k.name, av, &gp) },
		func(p *CELPolicy, c *compiler) { p.compileGenerating(c, &gp.Spec) },
		func() []celGenerated { return nil })
}

// gpolEnv is the environment of generate expressions: a CEL policy's, and
// the generator.
func gpolEnv(c *compiler, name string) *lang.Env {
	env := c.celEnv(name)
	env.Vars = append(env.Vars, lang.Var{Name: cel.VarGenerator, Doc: "Kyverno's generator: generator.Apply(namespace, objects)"})
	return env
}

func (p *CELPolicy) compileGenerating(c *compiler, spec *kpoliciesv1.GeneratingPolicySpec) {
	p.compileMatch(c, spec.MatchConstraints, spec.MatchConditions, spec.Variables)
	p.generating = true
	cl := c.celLanguage()
	cl.Generator = true
	for i, g := range spec.Generation {
		f := fmt.Sprintf("spec.generate[%d]", i)
		switch {
		case g.Expression != "" && g.Template != nil:
			c.errf(f, "a generate entry has an expression or a template, not both")
		case g.Template != nil:
			if t := c.compileTemplate(f+".template", g.Template.Value, g.Template.Interpolate); t != nil {
				p.generations = append(p.generations, gpolEntry{field: f + ".template", tmpl: t})
			}
		case g.Expression == "":
			c.errf(f+".expression", "a generate entry needs an expression")
		default:
			prog, ds := cl.CompileExpr(gpolEnv(c, f+".expression"), g.Expression)
			for _, d := range ds {
				c.ce.Errors = append(c.ce.Errors, rules.FieldError{Field: f + ".expression", Pos: d.Pos, Msg: d.Msg})
			}
			if prog != nil {
				c.noteReads(prog)
			}
			p.generations = append(p.generations, gpolEntry{field: f + ".expression", prog: prog})
		}
	}
	if len(spec.Generation) == 0 {
		c.errf("spec.generate", "a GeneratingPolicy needs at least one generate entry")
	}
	p.info.Generates = []string{""} // no inner rules: the policy's objects go with it
	var ev *kpoliciesv1.EvaluationConfiguration
	if e := spec.Evaluation; e != nil {
		ev = &kpoliciesv1.EvaluationConfiguration{Admission: e.Admission}
		p.synchronize = e.Synchronize != nil && e.Synchronize.Enabled != nil && *e.Synchronize.Enabled
		if e.GenerateExisting != nil && e.GenerateExisting.Enabled != nil && *e.GenerateExisting.Enabled {
			p.info.Existing = []string{""}
		}
		if p.synchronize && (e.OrphanDownstreamOnPolicyDelete == nil || e.OrphanDownstreamOnPolicyDelete.Enabled == nil || !*e.OrphanDownstreamOnPolicyDelete.Enabled) {
			p.info.Downstream = []string{""}
		}
	}
	// Generation is asynchronous in Kyverno: its errors never refuse the
	// trigger.
	fp := admissionregistrationv1.Ignore
	p.settings(&fp, ev)
	p.compileAudit(c, spec.AuditAnnotations)
	p.background = false // a background scan generates nothing
}

// gpolEntry is a compiled generate entry: an expression calling
// generator.Apply, or a template (gpoltemplate.go).
type gpolEntry struct {
	field string
	prog  *cel.Program
	tmpl  *gpolTemplate
}

// generated collects what generator.Apply hands over in one evaluation.
type generated struct {
	p    *CELPolicy
	objs []map[string]any
}

var _ cel.Generator = (*generated)(nil)

// Generate places the objects in namespace (not a cluster-scoped kind's),
// as Kyverno's generator does; a namespaced policy generates in its own
// namespace only.
func (g *generated) Generate(namespace string, objs []map[string]any) error {
	if g.p.ns != "" {
		if namespace == "" {
			namespace = g.p.ns
		} else if namespace != g.p.ns {
			return fmt.Errorf("cross-namespace generation denied: a policy in namespace %q cannot generate resources into namespace %q", g.p.ns, namespace)
		}
	}
	for _, o := range objs {
		if len(g.objs) >= maxGeneratedPerRule {
			return fmt.Errorf("a policy may generate at most %d objects", maxGeneratedPerRule)
		}
		obj := value.DeepCopy(o).(map[string]any) // CEL may hand over parts of the input
		md := metadataOf(obj)
		if md == nil {
			md = map[string]any{}
			obj["metadata"] = md
		}
		kind, _ := obj["kind"].(string)
		if namespace == "" || kinds.IsClusterScoped(kind) {
			if g.p.ns != "" && kinds.IsClusterScoped(kind) {
				return fmt.Errorf("cross-scope generation denied: a policy in namespace %q cannot generate the cluster-scoped %s", g.p.ns, kind)
			}
			delete(md, "namespace")
		} else {
			md["namespace"] = namespace
		}
		dropServerOwned(md)
		g.objs = append(g.objs, obj)
	}
	return nil
}

// fromTemplate renders a template and hands its objects over as
// generator.Apply does, each to the namespace its metadata names.
func (g *generated) fromTemplate(ctx context.Context, t *gpolTemplate, act *lang.Activation) error {
	objs, err := t.render(ctx, act)
	if err != nil {
		return fmt.Errorf("failed to render the generate template: %w", err)
	}
	for _, o := range objs {
		ns, _ := metadataOf(o)["namespace"].(string)
		if err := g.Generate(ns, []map[string]any{o}); err != nil {
			return err
		}
	}
	return nil
}

// generate evaluates the generate expressions. On a DELETE of a trigger,
// a synchronizing policy gives the engine the objects that go with it
// (evaluated over the deleted object) and no result.
func (p *CELPolicy) generate(h *engine.Handle) (RuleResult, bool) {
	if h.Request().Operation == rules.Delete {
		if p.synchronize {
			if objs, _, res := p.generateOver(h, h.Object()); res == nil {
				for _, o := range objs {
					h.Generate("", o, true)
				}
			}
		}
		return RuleResult{}, false
	}
	objs, props, res := p.generateOver(h, nil)
	if res != nil {
		return *res, true
	}
	for _, o := range objs {
		h.Generate("", o, p.synchronize)
	}
	return RuleResult{Status: Pass, Message: "policy evaluated successfully", Generated: objs, Properties: props}, true
}

// generateOver runs the expressions (over trigger in place of the object,
// when not nil) and labels their objects.
func (p *CELPolicy) generateOver(h *engine.Handle, trigger any) ([]map[string]any, map[string]string, *RuleResult) {
	var act *lang.Activation
	var done *RuleResult
	if trigger != nil {
		act, done = p.prepareOver(h, trigger)
	} else {
		act, done = p.prepare(h)
	}
	if done != nil {
		return nil, nil, done
	}
	sink := &generated{p: p}
	act.Vars[cel.VarGenerator] = cel.GeneratorValue(sink)
	for _, g := range p.generations {
		var err error
		switch {
		case g.tmpl != nil:
			err = sink.fromTemplate(h.Context(), g.tmpl, act)
		case g.prog != nil:
			_, err = g.prog.Eval(h.Context(), act)
		}
		if err != nil {
			res := celErrorResult(err, fmt.Sprintf("failed to evaluate policy: %s: %v", g.field, err))
			return nil, nil, &res
		}
	}
	trig, _ := h.Object().(map[string]any)
	name := resourceName(trig)
	if len(name) > 63 {
		name = name[:63] // a label value's bound, as Kyverno trims it
	}
	for _, o := range sink.objs {
		addGenerateLabels(h, o, map[string]string{labelPolicyName: p.name, labelTriggerName: name})
	}
	props, err := p.auditAnnotations(h.Context(), act)
	if err != nil {
		return nil, nil, &RuleResult{Status: Error, Message: err.Error()}
	}
	return sink.objs, props, nil
}
