package kyverno

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	sigsjson "sigs.k8s.io/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/conditions"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/pattern"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Policy is a compiled ClusterPolicy or Policy: an engine.Rule evaluating
// each of its rules (and their autogen rules) in order.
type Policy struct {
	info      engine.RuleInfo
	kind      string
	name, ns  string // ns: a Policy's namespace ("default" when unset)
	opts      options
	rules     []*rule
	enforce   bool
	overrides []override
	applyOne  bool
	scored    bool
	// background: spec.background (default true).
	background bool
	// severity and category: the policies.kyverno.io annotations.
	severity, category string
	// failClosed: failurePolicy Fail (the default): a rule's error rejects
	// the object.
	failClosed bool
	progs      programs
}

var _ engine.Rule = (*Policy)(nil)

// Info is the policy's compiled information.
func (p *Policy) Info() *engine.RuleInfo { return &p.info }

// InScope is never asked (the index decides).
func (p *Policy) InScope(string) bool { return true }

// override is a failure action for some namespaces.
type override struct {
	enforce    bool
	namespaces []string
	selector   labels.Selector
}

// rule is one compiled rule.
type rule struct {
	name    string
	field   string // spec.rules[2]; an autogen rule's is its source's
	match   matchSpec
	exclude *matchSpec
	context []*ctxEntry
	pre     *conditions.Set
	v       *validation
	m       *mutation
	g       *generation
	// notYet says why the rule is not evaluated ("mutate rules are not
	// evaluated yet"): the rule's result is an error.
	notYet string
	// action: the rule's own failureAction ("" : the policy's).
	action    string
	overrides []override
	// allowExisting: validate.allowExistingViolations (default true).
	allowExisting bool
	// celPre are the celPreconditions of a validate.cel rule.
	celPre *celV
	// autogen: generated for pod controllers from the rule at field.
	autogen bool
	// typ is Kyverno's rule type: validate, mutate, generate,
	// verifyImages.
	typ string
}

// mutatesObject: a mutate rule of the object admitted, which runs when
// mutating (a mutate of existing objects runs when validating, on the
// object as admitted, as Kyverno's background work starts after it).
func (r *rule) mutatesObject() bool { return r.typ == "mutate" && !r.m.existing() }

// syncsOnDelete: a generate rule that synchronizes its objects, which go
// with their trigger: a DELETE of a trigger it matches when created
// reaches it, whatever operations it names (Kyverno deletes them apart
// from admission).
func (r *rule) syncsOnDelete() bool { return r.g != nil && r.g.synchronize }

// validation is a compiled validate.
type validation struct {
	message    *subst.Template // nil: none
	rawMessage string
	deny       *conditions.Set
	pattern    *patternSlot
	anyPattern []*patternSlot
	foreach    []*foreachV
	cel        *celV
	pss        *pssV
}

// patternSlot is a pattern compiled once, or, when it holds {{ }}
// variables, the document substituted and compiled per evaluation.
type patternSlot struct {
	field string
	p     *pattern.Pattern
	doc   *subst.Document
}

// foreachV is a compiled validate.foreach entry.
type foreachV struct {
	field        string
	list         *jpExpr
	elementScope *bool
	context      []*ctxEntry
	pre          *conditions.Set
	deny         *conditions.Set
	pattern      *patternSlot
	anyPattern   []*patternSlot
	foreach      []*foreachV
}

func (c *compiler) rule(field string, r *kyvernov1.Rule, from string) *rule {
	out := &rule{name: r.Name, field: field, autogen: from != ""}
	if r.Name == "" {
		c.errf(field+".name", "a rule needs a name")
	}
	out.match = c.matchSpec(field+".match", &r.MatchResources)
	if r.ExcludeResources != nil {
		ex := c.matchSpec(field+".exclude", r.ExcludeResources)
		out.exclude = &ex
	}
	out.context = c.contextEntries(field+".context", r.Context)
	if r.Preconditions != nil {
		out.pre = c.conditionsOf(field+".preconditions", r.Preconditions)
	}
	kinds := 0
	if r.Mutation != nil {
		kinds++
		out.typ = "mutate"
		out.m = c.mutation(field+".mutate", r.Mutation.Raw)
	}
	if r.Generation != nil {
		kinds++
		out.typ = "generate"
		out.g = c.generation(field+".generate", r.Generation.Raw)
	}
	if len(r.VerifyImages) > 0 {
		kinds++
		out.typ = "verifyImages"
		out.notYet = "verifyImages rules need image registries and signatures, which modwright does not verify"
	}
	if len(r.CELPreconditions) > 0 && (r.Validation == nil || r.Validation.CEL == nil) && out.notYet == "" {
		out.notYet = "celPreconditions are evaluated for validate.cel rules only"
	}
	if v := r.Validation; v != nil {
		kinds++
		out.typ = "validate"
		out.action = v.FailureAction
		out.allowExisting = v.AllowExistingViolations == nil || *v.AllowExistingViolations
		out.overrides = c.overrides(field+".validate.failureActionOverrides", v.FailureActionOverrides)
		switch v.FailureAction {
		case "", "Enforce", "Audit", "enforce", "audit":
		default:
			c.errf(field+".validate.failureAction", "must be Enforce or Audit, not %q", v.FailureAction)
		}
		switch {
		case v.Manifests != nil:
			out.notYet = "validate.manifests needs signatures, which modwright does not verify"
		case v.PodSecurity != nil:
			out.v = &validation{rawMessage: v.Message}
			out.v.pss, out.notYet = c.podSecurity(field+".validate.podSecurity", v.PodSecurity)
		case v.CEL != nil:
			out.v = &validation{rawMessage: v.Message}
			out.v.cel, out.notYet = c.cel(field+".validate.cel", v.CEL)
			if len(r.CELPreconditions) > 0 {
				out.celPre = c.celPreconditions(field+".celPreconditions", r.CELPreconditions)
			}
		case v.Assert != nil:
			out.notYet = "validate.assert is not evaluated yet"
		default:
			out.v = c.validation(field+".validate", v)
		}
	}
	if kinds != 1 {
		c.errf(field, "a rule needs exactly one of validate, mutate, generate or verifyImages")
	}
	return out
}

func (c *compiler) validation(field string, v *kyvernov1.Validation) *validation {
	out := &validation{rawMessage: v.Message}
	if v.Message != "" {
		out.message = c.template(field+".message", v.Message)
	}
	switch {
	case v.Deny != nil:
		out.deny = &conditions.Set{}
		if v.Deny.Conditions != nil {
			out.deny = c.conditionsOf(field+".deny.conditions", v.Deny.Conditions)
		}
	case v.Pattern != nil:
		out.pattern = c.pattern(field+".pattern", v.Pattern.Raw)
	case v.AnyPattern != nil:
		out.anyPattern = c.anyPattern(field+".anyPattern", v.AnyPattern.Raw)
	case len(v.ForEach) > 0:
		out.foreach = c.foreach(field+".foreach", v.ForEach)
	default:
		c.errf(field, "validate needs one of pattern, anyPattern, deny, foreach, podSecurity, cel or manifests")
	}
	return out
}

func (c *compiler) foreach(field string, fs []kyvernov1.ForEachValidation) []*foreachV {
	var out []*foreachV
	for i := range fs {
		f := &fs[i]
		ff := fmt.Sprintf("%s[%d]", field, i)
		fv := &foreachV{field: ff, elementScope: f.ElementScope}
		if f.List == "" {
			c.errf(ff+".list", "a foreach needs a list")
		} else {
			fv.list = c.jmesPath(ff+".list", f.List)
		}
		fv.context = c.contextEntries(ff+".context", f.Context)
		if f.Preconditions != nil {
			fv.pre = c.block(ff+".preconditions", f.Preconditions.All, f.Preconditions.Any, f.Preconditions.Any != nil)
		}
		switch {
		case f.Deny != nil:
			fv.deny = &conditions.Set{}
			if f.Deny.Conditions != nil {
				fv.deny = c.conditionsOf(ff+".deny.conditions", f.Deny.Conditions)
			}
		case f.Pattern != nil:
			fv.pattern = c.pattern(ff+".pattern", f.Pattern.Raw)
		case f.AnyPattern != nil:
			fv.anyPattern = c.anyPattern(ff+".anyPattern", f.AnyPattern.Raw)
		case f.ForEach != nil:
			var nested []kyvernov1.ForEachValidation
			if c.decodeInto(ff+".foreach", f.ForEach.Raw, &nested) {
				fv.foreach = c.foreach(ff+".foreach", nested)
			}
		}
		out = append(out, fv)
	}
	return out
}

func (c *compiler) pattern(field string, raw []byte) *patternSlot {
	v, err := value.Decode(raw)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	return c.patternOf(field, v)
}

func (c *compiler) patternOf(field string, v any) *patternSlot {
	ps := &patternSlot{field: field}
	doc, err := subst.CompileDocument(v)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	if doc.HasVariables() {
		ps.doc = doc
		c.p.progs.add(c, field, doc.Expressions())
		return ps
	}
	if ps.p, err = pattern.Compile(doc.Static()); err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	return ps
}

func (c *compiler) anyPattern(field string, raw []byte) []*patternSlot {
	v, err := value.Decode(raw)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		c.errf(field, "must be a list of patterns")
		return nil
	}
	var out []*patternSlot
	for i, p := range list {
		out = append(out, c.patternOf(fmt.Sprintf("%s[%d]", field, i), p))
	}
	return out
}

func (c *compiler) template(field, s string) *subst.Template {
	t, err := subst.Compile(s)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	c.p.progs.add(c, field, t.Expressions())
	return t
}

// conditionsOf compiles preconditions or deny conditions: a list (all of
// them, Kyverno's older form) or any/all.
func (c *compiler) conditionsOf(field string, raw *apiextensionsv1.JSON) *conditions.Set {
	v, err := value.Decode(raw.Raw)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	switch t := v.(type) {
	case []any:
		var cs []kyvernov1.Condition
		if !c.decodeInto(field, raw.Raw, &cs) {
			return nil
		}
		return c.block(field, cs, nil, false)
	case map[string]any:
		var b kyvernov1.AnyAllConditions
		if !c.decodeInto(field, raw.Raw, &b) {
			return nil
		}
		_, hasAny := t["any"]
		return c.block(field, b.All, b.Any, hasAny)
	case nil:
		return &conditions.Set{}
	}
	c.errf(field, "must be a list of conditions or any/all")
	return nil
}

func (c *compiler) block(field string, all, anyOf []kyvernov1.Condition, hasAny bool) *conditions.Set {
	conv := func(cs []kyvernov1.Condition) []conditions.Condition {
		out := make([]conditions.Condition, 0, len(cs))
		for _, x := range cs {
			cc := conditions.Condition{Operator: x.Operator, Message: x.Message}
			if x.Key != nil {
				cc.Key, _ = value.Decode(x.Key.Raw)
			}
			if x.Value != nil {
				cc.Value, _ = value.Decode(x.Value.Raw)
			}
			out = append(out, cc)
		}
		return out
	}
	b := conditions.Block{All: conv(all)}
	if hasAny {
		b.Any = conv(anyOf)
		if b.Any == nil {
			b.Any = []conditions.Condition{}
		}
	}
	set, errs := conditions.Compile(b)
	for _, e := range errs {
		c.ce.Errors = append(c.ce.Errors, fieldError(field+"."+e.Field, e.Pos, e.Msg))
	}
	if len(errs) > 0 {
		return nil
	}
	c.p.progs.add(c, field, set.Expressions())
	return set
}

func (c *compiler) jmesPath(field, src string) *jpExpr {
	e, err := c.p.progs.compile(src)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	return e
}

// jpExpr is a compiled JMESPath expression: a plain field chain (path)
// reaching a missing key is undefined, as in Kyverno.
type jpExpr struct {
	prog *jmespath.Program
	path []string
}

// programs are the JMESPath programs of a policy's {{ }} variables, by
// source, compiled at load; an expression known only at evaluation (a
// nested variable) is compiled then.
type programs struct {
	m map[string]*jpExpr
}

func (ps *programs) compile(src string) (*jpExpr, error) {
	if e, ok := ps.m[src]; ok {
		return e, nil
	}
	p, ds := jmespath.Language{}.CompileExpr(&lang.Env{Name: "jmespath"}, src)
	if len(ds) > 0 {
		msgs := make([]string, len(ds))
		for i, d := range ds {
			msgs[i] = d.Msg
		}
		return nil, fmt.Errorf("JMESPath %q: %s", src, strings.Join(msgs, "; "))
	}
	return &jpExpr{prog: p, path: p.FieldPath()}, nil
}

func (ps *programs) add(c *compiler, field string, srcs []string) {
	for _, s := range srcs {
		if _, ok := ps.m[s]; ok {
			continue
		}
		e, err := ps.compile(s)
		if err != nil {
			c.errf(field, "%v", err)
			continue
		}
		if ps.m == nil {
			ps.m = map[string]*jpExpr{}
		}
		ps.m[s] = e
	}
}

// decodeInto decodes raw JSON strictly into out.
func (c *compiler) decodeInto(field string, raw []byte, out any) bool {
	strict, err := sigsjson.UnmarshalStrict(raw, out)
	if err != nil {
		c.errf(field, "%v", err)
		return false
	}
	for _, e := range strict {
		c.errf(field, "%v", e)
	}
	return len(strict) == 0
}

func fieldError(field string, pos int, msg string) rules.FieldError {
	return rules.FieldError{Field: field, Pos: pos, Msg: msg}
}
