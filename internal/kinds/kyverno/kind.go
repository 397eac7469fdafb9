package kyverno

import (
	"fmt"
	"slices"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
)

// Kind is the adapter of ClusterPolicy or Policy. It is stateless and
// safe for concurrent use.
type Kind struct {
	name string
	opts options
}

var _ kinds.Kind = (*Kind)(nil)

// NewKinds returns the adapters of ClusterPolicy and Policy.
func NewKinds(opts ...Option) []kinds.Kind {
	o := newOptions(opts)
	return []kinds.Kind{&Kind{kyvernov1.KindClusterPolicy, o}, &Kind{kyvernov1.KindPolicy, o}}
}

// newOptions are the options of a set of kinds, with their own CEL
// environments and metrics.
func newOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	o.celEnvs = cel.NewEnvCache()
	o.metrics = NewMetrics()
	return o
}

// Observer is the kinds' shared Metrics.
func (k *Kind) Observer() kinds.Observer { return k.opts.metrics }

// Name is ClusterPolicy or Policy.
func (k *Kind) Name() string { return k.name }

// Group is kyverno.io.
func (k *Kind) Group() string { return kyvernov1.Group }

// Versions are v1 and v2beta1 (the same schema).
func (k *Kind) Versions() []string { return []string{kyvernov1.Version, kyvernov1.VersionV2beta1} }

// Compile decodes and compiles a policy. A policy with errors is returned
// with its error, also in Info().Err (a *rules.CompileError naming each
// field), so that it stays visible.
func (k *Kind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	p := &Policy{kind: k.name, opts: k.opts}
	// Kyverno's patches change the object only, never its
	// last-applied-configuration annotation (KubeMod's habit).
	p.info = engine.RuleInfo{Kind: k.name, Key: m.Key(), Namespace: m.Namespace(), Name: m.Name(), Phase: engine.Validate, KeepLastApplied: true}
	av := m.APIVersion()
	if av != kyvernov1.Group+"/"+kyvernov1.VersionV2beta1 {
		av = kyvernov1.Group + "/" + kyvernov1.Version
	}
	var cp kyvernov1.ClusterPolicy
	if err := kinds.Decode(m, k.name, av, &cp); err != nil {
		p.info.Err = err
		return p, err
	}
	c := &compiler{p: p, ce: &rules.CompileError{Kind: k.name, Rule: m.Key()}}
	c.policy(&cp)
	if len(c.ce.Errors) > 0 {
		// An autogen rule repeats its source rule's errors: each is
		// reported once, at the source rule's field.
		seen := map[rules.FieldError]bool{}
		c.ce.Errors = slices.DeleteFunc(c.ce.Errors, func(e rules.FieldError) bool {
			dup := seen[e]
			seen[e] = true
			return dup
		})
		p.info.Err = c.ce
		return p, c.ce
	}
	return p, nil
}

// compiler collects a policy's errors.
type compiler struct {
	p  *Policy
	ce *rules.CompileError
	// broken are the rules with errors (no autogen rule repeats them).
	broken []int
	// orValueCompat: a CEL policy (ValidatingPolicy, ...): Kyverno's CEL
	// libraries are declared.
	orValueCompat bool
	// data declares Kyverno's data libraries (its CEL policies), the
	// resource library of a namespaced policy's scope or a cluster one's.
	data cel.DataScope
	// readsData, readsExceptions: some expression compiled reads a data
	// library's variable, the exceptions variable (noted by noteReads).
	readsData, readsExceptions bool
}

// reader is a compiled expression (a program, a mutation).
type reader interface{ ReadsAny(names ...string) bool }

// noteReads notes what a compiled expression reads of the variables a CEL
// policy binds only when its expressions read them.
func (c *compiler) noteReads(r reader) {
	if c.data == cel.NoData {
		return
	}
	c.readsData = c.readsData || r.ReadsAny(cel.DataVars()...)
	c.readsExceptions = c.readsExceptions || r.ReadsAny(celExceptions)
}

// celLanguage is the CEL of the policy's expressions. x.orValue(y)
// accepts an x that is not optional in every kind's CEL (validate.cel of
// a ClusterPolicy too), as the cel-go of the Kyverno releases the policy
// library was written for did.
func (c *compiler) celLanguage() cel.Language {
	return cel.Language{Envs: c.p.opts.celEnvs, OrValueCompat: true, KyvernoLibs: c.orValueCompat, KyvernoData: c.data}
}

// celEnv is the environment of the policy's expressions: a Kyverno CEL
// policy's declares its data libraries' variables too.
func (c *compiler) celEnv(name string) *lang.Env {
	env := celEnv(name)
	if c.data != cel.NoData {
		for _, v := range cel.DataVars() {
			env.Vars = append(env.Vars, lang.Var{Name: v, Doc: "Kyverno's " + v + " library"})
		}
		env.Vars = append(env.Vars, lang.Var{Name: celExceptions, Doc: "the images and values the matching PolicyExceptions allow: allowedImages, allowedValues"})
	}
	return env
}

func (c *compiler) errf(field, format string, args ...any) {
	c.ce.Errors = append(c.ce.Errors, rules.FieldError{Field: field, Pos: -1, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) policy(cp *kyvernov1.ClusterPolicy) {
	p, spec := c.p, &cp.Spec
	if c.p.kind == kyvernov1.KindPolicy {
		p.ns = cp.Namespace
		if p.ns == "" {
			p.ns = "default"
		}
	}
	p.name = cp.Name
	p.scored = cp.Annotations[kyvernov1.AnnotationScored] != "false"
	p.background = spec.Background == nil || *spec.Background
	p.severity, p.category = cp.Annotations[kyvernov1.AnnotationSeverity], cp.Annotations[kyvernov1.AnnotationCategory]
	p.enforce = enforce(spec.ValidationFailureAction)
	p.overrides = c.overrides("spec.validationFailureActionOverrides", spec.ValidationFailureActionOverrides)
	p.applyOne = spec.ApplyRules == "One"
	// A rule's error never stops the evaluation (every policy has its
	// results, as in Kyverno); the policy's failurePolicy Fail makes it
	// reject the object (Apply).
	p.info.FailurePolicy = engine.FailureIgnore
	switch spec.FailurePolicy {
	case "", "Fail":
		p.failClosed = true
	case "Ignore":
	default:
		c.errf("spec.failurePolicy", "must be Fail or Ignore, not %q", spec.FailurePolicy)
	}
	switch spec.ApplyRules {
	case "", "All", "One":
	default:
		c.errf("spec.applyRules", "must be All or One, not %q", spec.ApplyRules)
	}
	if len(spec.Rules) == 0 {
		c.errf("spec.rules", "a policy needs at least one rule")
	}
	seen := map[string]bool{}
	for i := range spec.Rules {
		r := &spec.Rules[i]
		field := fmt.Sprintf("spec.rules[%d]", i)
		if seen[r.Name] {
			c.errf(field+".name", "duplicate rule name %q", r.Name)
		}
		seen[r.Name] = true
		before := len(c.ce.Errors)
		p.rules = append(p.rules, c.rule(field, r, ""))
		if len(c.ce.Errors) > before {
			c.broken = append(c.broken, i)
		}
	}
	p.rules = append(p.rules, c.autogen(cp)...)
	p.info.Index = p.index()
	p.info.Existing = existingRules(p.rules, spec)
	for _, r := range p.rules {
		if r.g == nil || r.autogen {
			continue
		}
		p.info.Generates = append(p.info.Generates, r.name)
		if r.g.synchronize && !r.g.orphan {
			p.info.Downstream = append(p.info.Downstream, r.name)
		}
	}
	// Mutate rules run in the mutating phase, the others in the validating
	// one, as Kyverno's two webhooks run them.
	p.info.Phase = 0
	for _, r := range p.rules {
		if r.mutatesObject() {
			p.info.Phase |= engine.Mutate
		} else {
			p.info.Phase |= engine.Validate
		}
	}
	if p.info.Phase == 0 {
		p.info.Phase = engine.Validate
	}
}

// index places the policy: its namespace (a Policy), the operations and
// kinds its rules match.
func (p *Policy) index() engine.IndexKeys {
	ix := engine.IndexKeys{AnyNamespace: p.ns == "", Namespace: p.ns}
	var ops engine.OpSet
	var kindsOf []string
	anyKind := false
	for _, r := range p.rules {
		o, ks, any := r.match.footprint()
		if r.syncsOnDelete() && o&engine.OpSetOf(rules.Create) != 0 {
			o |= engine.OpSetOf(rules.Delete) // its objects go with a deleted trigger
		}
		ops |= o
		if any {
			anyKind = true
		}
		kindsOf = append(kindsOf, ks...)
	}
	ix.Operations = ops
	if !anyKind {
		slices.Sort(kindsOf)
		ix.Kinds = slices.Compact(kindsOf)
		if ix.Kinds == nil {
			ix.Kinds = []string{}
		}
	}
	return ix
}

func enforce(action string) bool { return action == "Enforce" || action == "enforce" }

func (c *compiler) overrides(field string, os []kyvernov1.ValidationFailureActionOverride) []override {
	var out []override
	for i, o := range os {
		f := fmt.Sprintf("%s[%d]", field, i)
		ov := override{enforce: enforce(o.Action), namespaces: o.Namespaces}
		switch o.Action {
		case "Enforce", "enforce", "Audit", "audit":
		default:
			c.errf(f+".action", "must be Enforce or Audit, not %q", o.Action)
			continue
		}
		if o.NamespaceSelector != nil {
			sel, err := selectorOf(o.NamespaceSelector)
			if err != nil {
				c.errf(f+".namespaceSelector", "%v", err)
				continue
			}
			ov.selector = sel
		}
		out = append(out, ov)
	}
	return out
}

// existingRules are the rules that act on existing objects when the
// policy is added or changed: generate rules with generateExisting (the
// rule's, else the policy's generateExisting or its former name
// generateExistingOnPolicyUpdate) and mutate rules of existing objects
// with mutateExistingOnPolicyUpdate (the rule's, else the policy's).
func existingRules(rs []*rule, spec *kyvernov1.Spec) []string {
	var out []string
	or := func(b *bool, dflt bool) bool {
		if b != nil {
			return *b
		}
		return dflt
	}
	for _, r := range rs {
		switch {
		case r.autogen:
		case r.g != nil && or(r.g.existing, spec.GenerateExisting || (spec.GenerateExistingOnPolicyUpdate != nil && *spec.GenerateExistingOnPolicyUpdate)),
			r.m != nil && len(r.m.targets) > 0 && or(r.m.onPolicyUpdate, spec.MutateExistingOnPolicyUpdate):
			out = append(out, r.name)
		}
	}
	return out
}
