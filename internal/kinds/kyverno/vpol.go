package kyverno

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyvernoautogen"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Kyverno's ValidatingPolicy (policies.kyverno.io) is a
// ValidatingAdmissionPolicy and its binding in one, evaluated by Kyverno's
// CEL engine: matchConstraints as the API server matches them (resource
// rules, namespace and object selectors, exclusions), then matchConditions
// (one that does not hold gives the result skip), variables, and the
// validations in order: the first false one fails the policy with its
// message, an error is the policy's error, all true pass. Its
// validationActions say what a failure does at admission (Deny rejects,
// Warn warns, Audit only reports). The result is recorded like a
// ClusterPolicy rule's, with no rule name.

// VPolKind is ValidatingPolicy or NamespacedValidatingPolicy.
type VPolKind struct {
	name string
	opts options
}

var _ kinds.Kind = (*VPolKind)(nil)

// NewCELKinds are Kyverno's CEL policy kinds modwright evaluates:
// ValidatingPolicy, MutatingPolicy, GeneratingPolicy and their namespaced
// variants.
func NewCELKinds(opts ...Option) []kinds.Kind {
	o := newOptions(opts)
	return []kinds.Kind{&VPolKind{kpoliciesv1.KindValidatingPolicy, o}, &VPolKind{kpoliciesv1.KindNamespacedValidatingPolicy, o},
		&MPolKind{kpoliciesv1.KindMutatingPolicy, o}, &MPolKind{kpoliciesv1.KindNamespacedMutatingPolicy, o},
		&GPolKind{kpoliciesv1.KindGeneratingPolicy, o}, &GPolKind{kpoliciesv1.KindNamespacedGeneratingPolicy, o}}
}

// Name is ValidatingPolicy or NamespacedValidatingPolicy.
func (k *VPolKind) Name() string { return k.name }

// Group is policies.kyverno.io.
func (k *VPolKind) Group() string { return kpoliciesv1.Group }

// Versions are v1, v1beta1 and v1alpha1 (one schema).
func (k *VPolKind) Versions() []string { return celVersions() }

// CELPolicy is a compiled Kyverno CEL policy: a ValidatingPolicy, or a
// MutatingPolicy (mutating).
type CELPolicy struct {
	info       engine.RuleInfo
	name, ns   string // ns: a NamespacedValidatingPolicy's namespace
	match      *admissionregistrationv1.MatchResources
	nsSel      labels.Selector
	objSel     labels.Selector
	conditions []celExpr
	vars       []celVar
	// varsFirst: the match conditions read the variables (a
	// MutatingPolicy's, as Kyverno binds them; the other kinds bind them
	// once the conditions hold).
	varsFirst   bool
	validations []celExpr
	// mutations: a MutatingPolicy's (mutating), applied in order.
	mutations []celMutation
	mutating  bool
	// audit: the policy's audit annotations.
	audit []celAudit
	// generations: a GeneratingPolicy's generate expressions (generating);
	// synchronize keeps their objects (generateExisting: info.Existing).
	generations []gpolEntry
	generating  bool
	synchronize bool
	// payload: a ValidatingPolicy of evaluation.mode JSON, which
	// evaluates JSON payloads (engine.Request.Payload) and no Kubernetes
	// object: its object is the payload, with no request, old object or
	// namespace; matchConstraints are not read.
	payload bool
	// payloadMatch: a payload policy with matchConstraints (not read;
	// lint warns).
	payloadMatch bool
	// mutateExisting: a MutatingPolicy that mutates existing objects too
	// (evaluation.mutateExisting; mpolexisting.go).
	mutateExisting bool
	// existing are the targets mutateExisting lists (nil: none);
	// targetConds their match conditions (targetMatchConditions).
	existing    *mpolTargets
	targetConds []celExpr
	deny, warn  bool
	failClosed  bool
	admission   bool
	background  bool
	// notYet says why the policy is not evaluated (its result is an
	// error).
	notYet string
	// readsData, readsExceptions: an expression reads Kyverno's data
	// libraries, the exceptions variable (bound only then).
	readsData, readsExceptions bool
	opts                       options
	// autogen are the policy for pod controllers (Kyverno's autogen): the
	// same checks over the pod template; one of them or the policy itself
	// matches an object.
	autogen []*CELPolicy
	// field names an autogen policy in its errors ("" for the policy).
	field string
}

var _ engine.Rule = (*CELPolicy)(nil)

// Info is the policy's compiled information.
func (p *CELPolicy) Info() *engine.RuleInfo { return &p.info }

// InScope is never asked (the index decides).
func (p *CELPolicy) InScope(string) bool { return true }

// Compile decodes and compiles a ValidatingPolicy.
func (k *VPolKind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	var vp kpoliciesv1.ValidatingPolicy
	return compileCELPolicy(k.name, k.name == kpoliciesv1.KindNamespacedValidatingPolicy, k.opts, m, false,
		func(av string) error { return kinds.Decode(m, k.name, av, &vp) },
		func(p *CELPolicy, c *compiler) { p.compile(c, &vp.Spec) },
		func() []celGenerated {
			var out []celGenerated
			for _, g := range kyvernoautogen.VPol(&vp.Spec) {
				out = append(out, celGenerated{g.Name, func(p *CELPolicy, c *compiler) { p.compile(c, g.Spec) }})
			}
			return out
		})
}

// celVersions are the versions of Kyverno's CEL policy kinds (one schema).
func celVersions() []string {
	return []string{kpoliciesv1.Version, kpoliciesv1.VersionV1beta1, kpoliciesv1.VersionV1alpha1}
}

// celGenerated is an autogen policy: its name, how it compiles.
type celGenerated struct {
	name    string
	compile func(p *CELPolicy, c *compiler)
}

// compileCELPolicy is what compiling every Kyverno CEL policy shares: its
// namespace, information and apiVersion, the strict decoding (decode), its
// compilation (compile) and its autogen policies' (autogen; each one's
// errors named after it), and Kyverno's libraries reported as not
// evaluated yet rather than as errors.
func compileCELPolicy(kind string, namespaced bool, opts options, m *kinds.Manifest, mutating bool,
	decode func(apiVersion string) error, compile func(p *CELPolicy, c *compiler), autogen func() []celGenerated) (engine.Rule, error) {
	p := &CELPolicy{name: m.Name(), opts: opts, mutating: mutating}
	if namespaced {
		p.ns = m.Namespace()
		if p.ns == "" {
			p.ns = "default"
		}
	}
	phase := engine.Validate
	if mutating {
		phase = engine.Mutate
	}
	p.info = engine.RuleInfo{Kind: kind, Key: m.Key(), Namespace: m.Namespace(), Name: m.Name(), Phase: phase,
		FailurePolicy: engine.FailureIgnore, KeepLastApplied: true}
	av := m.APIVersion()
	if gv, err := schema.ParseGroupVersion(av); err != nil || gv.Group != kpoliciesv1.Group || !slices.Contains(celVersions(), gv.Version) {
		av = kpoliciesv1.Group + "/" + kpoliciesv1.Version
	}
	if err := decode(av); err != nil {
		p.info.Err = err
		return p, err
	}
	newCompiler := func() *compiler {
		data := cel.ClusterData
		if namespaced {
			data = cel.NamespacedData
		}
		return &compiler{p: &Policy{opts: opts}, ce: &rules.CompileError{Kind: kind, Rule: m.Key()}, orValueCompat: true, data: data}
	}
	c := newCompiler()
	compile(p, c)
	p.readsData, p.readsExceptions = c.readsData, c.readsExceptions
	if len(c.ce.Errors) == 0 {
		for _, g := range autogen() {
			a := &CELPolicy{name: p.name, ns: p.ns, opts: opts, info: p.info, mutating: mutating, field: "autogen (" + g.name + ")"}
			ac := newCompiler()
			g.compile(a, ac)
			a.readsData, a.readsExceptions = ac.readsData, ac.readsExceptions
			for _, e := range ac.ce.Errors {
				e.Field = a.field + ": " + e.Field
				c.ce.Errors = append(c.ce.Errors, e)
			}
			p.autogen = append(p.autogen, a)
		}
	}
	p.info.Index = p.index()
	if lib := kyvernoLibrary(c.ce.Errors); lib != "" {
		// Kyverno's own CEL libraries are not there yet: the policy loads
		// and says so in its result, as every part not evaluated yet.
		c.ce.Errors = nil
		p.notYet = "Kyverno's CEL library " + lib + " is not evaluated yet"
	}
	if len(c.ce.Errors) > 0 {
		p.info.Err = c.ce
		return p, c.ce
	}
	return p, nil
}

func (p *CELPolicy) compile(c *compiler, spec *kpoliciesv1.ValidatingPolicySpec) {
	ev := spec.Evaluation
	if ev != nil && ev.Mode != "" {
		switch ev.Mode {
		case "Kubernetes":
		case "JSON":
			p.payload = true
		default:
			c.errf("spec.evaluation.mode", "must be Kubernetes or JSON, not %q", ev.Mode)
		}
		e := *ev
		e.Mode = ""
		ev = &e
	}
	match := spec.MatchConstraints
	if p.payload {
		// As Kyverno: a payload has no resource to match.
		p.payloadMatch = match != nil
		match = &admissionregistrationv1.MatchResources{}
	}
	p.compileMatch(c, match, spec.MatchConditions, spec.Variables)
	for i, v := range spec.Validations {
		f := fmt.Sprintf("spec.validations[%d]", i)
		e := celExpr{field: f, prog: c.celProgram(f+".expression", v.Expression), message: v.Message}
		if v.MessageExpression != "" {
			e.msgExpr = c.celProgram(f+".messageExpression", v.MessageExpression)
		}
		p.validations = append(p.validations, e)
	}
	if len(spec.Validations) == 0 {
		c.errf("spec.validations", "a ValidatingPolicy needs at least one validation")
	}
	for i, a := range spec.ValidationActions {
		switch a {
		case admissionregistrationv1.Deny:
			p.deny = true
		case admissionregistrationv1.Warn:
			p.warn = true
		case admissionregistrationv1.Audit:
		default:
			c.errf(fmt.Sprintf("spec.validationActions[%d]", i), "must be Deny, Warn or Audit, not %q", a)
		}
	}
	if len(spec.ValidationActions) == 0 {
		p.deny = true // Kyverno's default
	}
	p.settings(spec.FailurePolicy, ev)
	p.compileAudit(c, spec.AuditAnnotations)
}

// compileAudit compiles a CEL policy's audit annotations.
func (p *CELPolicy) compileAudit(c *compiler, as []admissionregistrationv1.AuditAnnotation) {
	p.audit = c.audits("spec.auditAnnotations", p.name, as)
}

// audits compiles audit annotations (at field) of the policy named.
func (c *compiler) audits(field, policy string, as []admissionregistrationv1.AuditAnnotation) []celAudit {
	var out []celAudit
	for i, a := range as {
		f := fmt.Sprintf("%s[%d]", field, i)
		if errs := k8svalidation.IsQualifiedName(policy + "/" + a.Key); a.Key == "" || len(errs) > 0 {
			c.errf(f+".key", "%q is not a valid audit annotation key (with the policy's name before it): %s", a.Key, strings.Join(errs, "; "))
		}
		out = append(out, celAudit{key: a.Key, field: f + ".valueExpression", prog: c.celProgram(f+".valueExpression", a.ValueExpression)})
	}
	return out
}

// celAudit is a compiled audit annotation: its key and value expression.
type celAudit struct {
	key, field string
	prog       *cel.Program
}

// auditAnnotations evaluates the policy's audit annotations: a value
// that is null or empty is left out, as Kyverno and the API server do.
func (p *CELPolicy) auditAnnotations(ctx context.Context, act *lang.Activation) (map[string]string, error) {
	return evalAudits(ctx, act, p.audit)
}

// evalAudits evaluates audit annotations: a value that is null or empty
// is left out.
func evalAudits(ctx context.Context, act *lang.Activation, audits []celAudit) (map[string]string, error) {
	if len(audits) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(audits))
	for _, a := range audits {
		if a.prog == nil {
			continue
		}
		v, err := a.prog.Eval(ctx, act)
		if err != nil {
			return nil, fmt.Errorf("failed to evaluate auditAnnotation '%s': %w", a.key, err)
		}
		switch s := v.(type) {
		case nil:
		case string:
			if s != "" {
				out[a.key] = s
			}
		default:
			return nil, fmt.Errorf("failed to convert auditAnnotation '%s' expression: a %s, not a string", a.key, value.TypeName(v))
		}
	}
	return out, nil
}

// settings are what every CEL policy sets the same way: its failure policy
// (Fail by default), where it runs (admission and background scans by
// default), a mode other than Kubernetes (not evaluated yet).
func (p *CELPolicy) settings(fp *admissionregistrationv1.FailurePolicyType, ev *kpoliciesv1.EvaluationConfiguration) {
	p.failClosed = fp == nil || *fp == admissionregistrationv1.Fail
	p.admission, p.background = true, true
	if ev != nil {
		if ev.Admission != nil && ev.Admission.Enabled != nil {
			p.admission = *ev.Admission.Enabled
		}
		if ev.Background != nil && ev.Background.Enabled != nil {
			p.background = *ev.Background.Enabled
		}
		if ev.Mode != "" && ev.Mode != "Kubernetes" {
			p.notYet = "evaluation.mode " + ev.Mode + " is not evaluated yet"
		}
	}
}

// compileMatch compiles what every CEL policy has: matchConstraints, its
// selectors, matchConditions and variables.
func (p *CELPolicy) compileMatch(c *compiler, m *admissionregistrationv1.MatchResources, conds []admissionregistrationv1.MatchCondition, vars []admissionregistrationv1.Variable) {
	p.match = m
	if p.payload {
		p.match = nil
	} else if p.match == nil || len(p.match.ResourceRules) == 0 {
		c.errf("spec.matchConstraints.resourceRules", "a policy needs at least one resource rule")
	} else {
		var err error
		if p.match.NamespaceSelector != nil {
			if p.nsSel, err = metav1.LabelSelectorAsSelector(p.match.NamespaceSelector); err != nil {
				c.errf("spec.matchConstraints.namespaceSelector", "%v", err)
			}
		}
		if p.match.ObjectSelector != nil {
			if p.objSel, err = metav1.LabelSelectorAsSelector(p.match.ObjectSelector); err != nil {
				c.errf("spec.matchConstraints.objectSelector", "%v", err)
			}
		}
	}
	for i, mc := range conds {
		f := fmt.Sprintf("spec.matchConditions[%d].expression", i)
		p.conditions = append(p.conditions, celExpr{field: f, prog: c.celProgram(f, mc.Expression), message: mc.Name})
	}
	for i, v := range vars {
		f := fmt.Sprintf("spec.variables[%d].expression", i)
		p.vars = append(p.vars, celVar{name: v.Name, prog: c.celProgram(f, v.Expression)})
	}
}

// index places the policy: its namespace (a namespaced policy), the
// operations its resource rules name; any kind (rules name resources).
func (p *CELPolicy) index() engine.IndexKeys {
	if p.payload {
		return engine.IndexKeys{Payloads: true}
	}
	ix := engine.IndexKeys{AnyNamespace: p.ns == "", Namespace: p.ns}
	if p.match == nil {
		ix.Kinds = []string{}
		return ix
	}
	for _, r := range p.match.ResourceRules {
		for _, op := range r.Operations {
			if op == admissionregistrationv1.OperationAll {
				ix.Operations |= engine.OpSetOf(rules.Create, rules.Update, rules.Delete, rules.Connect)
			} else {
				ix.Operations |= engine.OpSetOf(rules.Operation(op))
			}
		}
	}
	if p.generating && p.synchronize && ix.Operations&engine.OpSetOf(rules.Create) != 0 {
		ix.Operations |= engine.OpSetOf(rules.Delete) // its objects go with a deleted trigger
	}
	return ix
}

// Match is matchConstraints, as the API server matches an admission
// policy's: the policy's own, else one of its autogen policies'.
func (p *CELPolicy) Match(h *engine.Handle) (bool, error) {
	if p.existingTargets(h) {
		obj, _ := h.Object().(map[string]any)
		return p.isTarget(h, obj)
	}
	_, ok, err := p.matching(h)
	return ok, err
}

// matching is the policy (or autogen policy) whose constraints match.
func (p *CELPolicy) matching(h *engine.Handle) (*CELPolicy, bool, error) {
	if p.payload || h.Request().Payload {
		return p, p.payload && h.Request().Payload, nil
	}
	if ok, err := p.matches(h); err != nil || ok {
		return p, ok, err
	}
	for _, c := range p.autogen {
		if ok, err := c.matches(h); err != nil || ok {
			return c, ok, err
		}
	}
	return nil, false, nil
}

func (p *CELPolicy) matches(h *engine.Handle) (bool, error) {
	if p.match == nil {
		return false, nil
	}
	q := h.Request()
	gvr, sub := requestResource(h)
	name := q.Name
	obj, _ := h.Object().(map[string]any)
	if name == "" {
		name = resourceName(obj)
	}
	clusterScoped := q.Namespace == "" && kinds.IsClusterScoped(h.Kind())
	op := q.Operation
	if op == rules.Delete && p.generating && p.synchronize {
		op = rules.Create // a deleted trigger, matched as created: its objects go with it
	}
	hit := func(rs []admissionregistrationv1.NamedRuleWithOperations) bool {
		return slices.ContainsFunc(rs, func(r admissionregistrationv1.NamedRuleWithOperations) bool {
			return ruleMatches(r, op, gvr, sub, name, clusterScoped)
		})
	}
	if !hit(p.match.ResourceRules) || hit(p.match.ExcludeResourceRules) {
		return false, nil
	}
	if p.objSel != nil {
		old, _ := oldObjectOf(h).(map[string]any)
		if !p.objSel.Matches(labels.Set(kinds.MetadataStrings(obj, "labels"))) &&
			(old == nil || !p.objSel.Matches(labels.Set(kinds.MetadataStrings(old, "labels")))) {
			return false, nil
		}
	}
	if p.nsSel != nil && !p.nsSel.Empty() {
		switch {
		case h.Kind() == "Namespace" && q.Namespace == "":
			if !p.nsSel.Matches(labels.Set(kinds.MetadataStrings(obj, "labels"))) {
				return false, nil
			}
		case clusterScoped:
		default:
			ls, err := stateOf(h).selectorLabels(h, q.Namespace)
			if err != nil {
				return false, engine.InField("spec.matchConstraints.namespaceSelector", err)
			}
			if !p.nsSel.Matches(labels.Set(ls)) {
				return false, nil
			}
		}
	}
	return true, nil
}

// selectorLabels are the namespace's labels as an admission policy's
// namespaceSelector reads them: with the one the API server sets on every
// namespace (kubernetes.io/metadata.name), in a copy made once per
// evaluation (the labels are shared by its policies).
func (st *evalState) selectorLabels(h *engine.Handle, ns string) (map[string]string, error) {
	if st.selLabels != nil {
		return st.selLabels, nil
	}
	ls, err := st.namespaceLabels(h, ns)
	if err != nil && !isNoReader(err) {
		return nil, err
	}
	st.selLabels = maps.Clone(ls)
	if st.selLabels == nil {
		st.selLabels = map[string]string{}
	}
	st.selLabels["kubernetes.io/metadata.name"] = ns
	return st.selLabels, nil
}

// requestResource is the resource the request admits: the webhook's, else
// the kind's plural as the API server names built-in kinds; found once per
// evaluation.
func requestResource(h *engine.Handle) (schema.GroupVersionResource, string) {
	q := h.Request()
	if q.Resource.Resource != "" {
		return schema.GroupVersionResource{Group: q.Resource.Group, Version: q.Resource.Version, Resource: q.Resource.Resource}, q.SubResource
	}
	st := stateOf(h)
	if !st.gvrDone {
		gvk := schema.GroupVersionKind{Group: q.Kind.Group, Version: q.Kind.Version, Kind: q.Kind.Kind}
		if gvk.Kind == "" {
			obj, _ := h.Object().(map[string]any)
			av, _ := obj["apiVersion"].(string)
			gv, _ := schema.ParseGroupVersion(av)
			gvk = gv.WithKind(h.Kind())
		}
		st.gvr, _ = meta.UnsafeGuessKindToResource(gvk)
		st.gvrDone = true
	}
	return st.gvr, q.SubResource
}

// ruleMatches is one resource rule of matchConstraints, with the API
// server's wildcards ("*", "*/*", "pods/*", "*/status") and scope.
func ruleMatches(r admissionregistrationv1.NamedRuleWithOperations, op rules.Operation, gvr schema.GroupVersionResource, sub, name string, clusterScoped bool) bool {
	anyOf := func(list []string, v string) bool { return slices.Contains(list, "*") || slices.Contains(list, v) }
	if !slices.ContainsFunc(r.Operations, func(o admissionregistrationv1.OperationType) bool {
		return o == admissionregistrationv1.OperationAll || string(o) == string(op)
	}) {
		return false
	}
	if !anyOf(r.APIGroups, gvr.Group) || !anyOf(r.APIVersions, gvr.Version) {
		return false
	}
	if !slices.ContainsFunc(r.Resources, func(res string) bool {
		want, wantSub, hasSub := strings.Cut(res, "/")
		if !hasSub {
			return sub == "" && (want == "*" || want == gvr.Resource)
		}
		return (want == "*" || want == gvr.Resource) && (wantSub == "*" || wantSub == sub)
	}) {
		return false
	}
	if r.Scope != nil {
		switch *r.Scope {
		case admissionregistrationv1.ClusterScope:
			if !clusterScoped {
				return false
			}
		case admissionregistrationv1.NamespacedScope:
			if clusterScoped {
				return false
			}
		}
	}
	return len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)
}

// oldObjectOf is the request's old object (nil on CREATE).
func oldObjectOf(h *engine.Handle) any {
	q := h.Request()
	if q.OldObject != nil || q.OldObjectJSON == nil {
		return q.OldObject
	}
	old, err := value.Decode(q.OldObjectJSON)
	if err != nil {
		return nil
	}
	return old
}

// Apply evaluates the policy as Kyverno's CEL engine does and records its
// result.
func (p *CELPolicy) Apply(h *engine.Handle) error {
	q := h.Request()
	// existingOnly: a MutatingPolicy's targets, in the validating phase
	// (once the trigger is admitted as it is stored); its own mutation
	// is the mutating phase's.
	existingOnly := p.mutatesExisting(h) && h.Phase() == engine.Validate
	if (q.Background && !p.background) || (!q.Background && !p.admission && !existingOnly) {
		if tr := h.Trace(); tr != nil {
			tr.Detail = &Trace{}
		}
		return nil
	}
	if existingOnly && p.existingTargets(h) {
		// The policy came, over an object that exists: one of its targets
		// or not (Kyverno mutates every target then, trigger or not).
		return p.mutateExistingTarget(h)
	}
	c, ok, err := p.matching(h)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	var res RuleResult
	switch {
	case existingOnly:
		act, done := c.prepare(h)
		if done != nil {
			return nil // the trigger's match conditions do not hold (or fail): nothing to do
		}
		targets := c.mutateTargets(h, act)
		if len(targets) == 0 {
			return nil
		}
		res, res.more = targets[0], targets[1:]
	case p.mutating:
		res = c.mutate(h)
	case p.generating:
		if res, ok = c.generate(h); !ok {
			return nil // a DELETE: no result
		}
	default:
		res = c.evaluate(h)
	}
	res.Policy = p.info.Key
	if err := h.Context().Err(); err != nil {
		return err
	}
	if res.Status == Fail && p.deny && !q.Background {
		res.Enforced = true
	}
	more := res.more
	res.more = nil
	for i := range more {
		more[i].Policy = p.info.Key
	}
	if tr := h.Trace(); tr != nil {
		tr.Detail = &Trace{Results: append([]RuleResult{res}, more...)}
	}
	if existingOnly {
		// The targets' work never refuses the trigger (Kyverno does it
		// after admission): an error is logged and reported, not denied.
		for _, r := range append([]RuleResult{res}, more...) {
			if r.Status == Error {
				h.Fail("spec", causedError{r.Message, r.cause})
			}
		}
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(res.Properties)) {
		// In the request's audit event, keyed as the API server keys an
		// admission policy's: the policy's name, then the key.
		h.Annotate(p.name+"/"+k, res.Properties[k])
	}
	switch res.Status {
	case Fail:
		if res.Enforced {
			h.Reject(res.Message, nil)
		} else if p.warn {
			h.Warn(fmt.Sprintf("policy %s: %s", p.info.Key, res.Message))
		}
	case Error:
		var err error = causedError{res.Message, res.cause}
		h.Fail("spec", err)
		// Offline, data no reader gives makes the input incomplete: the
		// front end says so rather than report a rejection.
		if p.failClosed && !isNoReader(err) {
			h.Reject(fmt.Sprintf("%s: error (failurePolicy Fail): %s", p.name, res.Message), nil)
		}
	}
	return nil
}

// causedError is a result's message with the error that caused it (nil:
// none) in its chain.
type causedError struct {
	msg   string
	cause error
}

func (e causedError) Error() string { return e.msg }
func (e causedError) Unwrap() error { return e.cause }

// evaluate is the policy's result: skip when a match condition does not
// hold, else the first failing validation's.
func (p *CELPolicy) evaluate(h *engine.Handle) RuleResult {
	ctx := h.Context()
	act, done := p.prepare(h)
	if done != nil {
		return *done
	}
	withAudit := func(res RuleResult) RuleResult {
		props, err := p.auditAnnotations(ctx, act)
		if err != nil {
			return celErrorResult(err, err.Error())
		}
		res.Properties = props
		return res
	}
	for i, v := range p.validations {
		ok, err := v.prog.EvalBool(ctx, act)
		if err != nil {
			return celErrorResult(err, fmt.Sprintf("%s: %v", v.field, err))
		}
		if ok {
			continue
		}
		msg := v.message
		if v.msgExpr != nil {
			out, err := v.msgExpr.Eval(ctx, act)
			switch s, isStr := out.(string); {
			case err != nil:
				msg = fmt.Sprintf("failed to evaluate message expression: %s", err)
			case !isStr:
				msg = fmt.Sprintf("failed to convert message expression to string: %T", out)
			default:
				msg = s
			}
		}
		if msg == "" {
			msg = fmt.Sprintf("CEL expression validation failed at index %d", i)
		}
		return withAudit(RuleResult{Status: Fail, Message: msg})
	}
	return withAudit(RuleResult{Status: Pass, Message: "success"})
}

// prepare is what every CEL policy does before its validations or
// mutations: the activation, the match conditions (skip when one does not
// hold), the variables. done is the result when it ends there.
func (p *CELPolicy) prepare(h *engine.Handle) (act *lang.Activation, done *RuleResult) {
	obj := h.Object()
	old := oldObjectOf(h)
	if h.Request().Operation == rules.Delete {
		obj, old = nil, obj
	}
	return p.prepareWith(h, obj, old, p.conditions)
}

// prepareOver is prepare with obj as the object, as if created.
func (p *CELPolicy) prepareOver(h *engine.Handle, obj any) (act *lang.Activation, done *RuleResult) {
	return p.prepareWith(h, obj, nil, p.conditions)
}

// prepareWith is prepare over obj and old, with conds as the match
// conditions (a MutatingPolicy's target has its own).
func (p *CELPolicy) prepareWith(h *engine.Handle, obj, old any, conds []celExpr) (act *lang.Activation, done *RuleResult) {
	if p.notYet != "" {
		return nil, &RuleResult{Status: Error, Message: p.notYet}
	}
	ctx := h.Context()
	act, err := celActivationOf(h, ctx, obj, old)
	if err != nil {
		res := celErrorResult(err, "failed to load context: "+err.Error())
		return nil, &res
	}
	if p.readsData {
		cel.BindKyvernoData(act.Vars, &celData{h: h, owner: p.ns})
	}
	keys, pass, err := p.celExempted(h, act)
	if err != nil {
		res := celErrorResult(err, "failed to evaluate exceptions: "+err.Error())
		return nil, &res
	}
	if len(keys) > 0 {
		status, verb := Skip, "skipped"
		if pass {
			status, verb = Pass, "passed"
		}
		return nil, &RuleResult{Status: status, Message: "rule is " + verb + " due to policy exception: " + strings.Join(keys, ", ")}
	}
	cv := &celV{vars: p.vars}
	if p.varsFirst {
		if err := cv.evalVars(&scope{ctx: ctx}, act); err != nil {
			res := celErrorResult(err, err.Error())
			return nil, &res
		}
	}
	var errs []string
	for _, mc := range conds {
		ok, err := mc.prog.EvalBool(ctx, act)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", mc.field, err))
			continue
		}
		if !ok {
			return nil, &RuleResult{Status: Skip, Message: "skip"}
		}
	}
	if len(errs) > 0 {
		if !p.failClosed {
			return nil, &RuleResult{Status: Skip, Message: "skip"}
		}
		return nil, &RuleResult{Status: Error, Message: "failed to load context: " + strings.Join(errs, "; ")}
	}
	if !p.varsFirst {
		if err := cv.evalVars(&scope{ctx: ctx}, act); err != nil {
			res := celErrorResult(err, err.Error())
			return nil, &res
		}
	}
	return act, nil
}

// celActivationOf is the input of CEL expressions over the request: the
// object and old object, Kyverno's request, the namespace's object.
func celActivationOf(h *engine.Handle, ctx context.Context, obj, old any) (*lang.Activation, error) {
	q := h.Request()
	act := &lang.Activation{Vars: map[string]any{}, Object: obj, OldObject: old}
	if q.Payload {
		return act, nil // a JSON payload: the object alone, as Kyverno binds it
	}
	act.Vars[celRequest] = stateOf(h).request(h)
	ns := q.Namespace
	if ns == "" {
		if m, ok := obj.(map[string]any); ok {
			md, _ := m["metadata"].(map[string]any)
			ns, _ = md["namespace"].(string)
		}
	}
	if ns != "" && h.Kind() != "Namespace" {
		nsObj, err := namespaceObject(h, ctx, ns)
		if err != nil {
			return nil, err
		}
		act.Vars[celNamespace] = nsObj
	}
	return act, nil
}

// namespaceObject is the Namespace ns, read once per evaluation (offline,
// as kyverno test, the Namespace by its name when none is given).
func namespaceObject(h *engine.Handle, ctx context.Context, ns string) (map[string]any, error) {
	st := stateOf(h)
	if st.nsObj != nil && st.nsObjFor == ns {
		return st.nsObj, nil
	}
	var nsObj map[string]any
	if objs := h.Objects(); objs != nil {
		o, err := objs.Get(ctx, engine.ObjectRef{Kind: "Namespace", Name: ns})
		if err != nil && !isNoReader(err) {
			return nil, err
		}
		nsObj = o
	}
	if nsObj == nil {
		nsObj = map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}
	}
	st.nsObj, st.nsObjFor = nsObj, ns
	return nsObj, nil
}

// kyvernoLibraries are the names Kyverno's CEL environment adds that
// modwright's CEL does not declare (generator outside a GeneratingPolicy,
// gctx). The image and user libraries are declared
// (Language.KyvernoLibs), and those that read data or compute
// (Language.KyvernoData).
const kyvernoLibraries = "generator gctx"

// kyvernoLibrary is the Kyverno library the compile errors are about
// (all undeclared references, one of them to a library's name: a call
// resource.Get(...) names resource and Get), else "".
func kyvernoLibrary(errs []rules.FieldError) string {
	lib := ""
	for _, e := range errs {
		if !strings.Contains(e.Msg, "undeclared reference to '") {
			return ""
		}
		for _, name := range strings.Fields(kyvernoLibraries) {
			if lib == "" && strings.Contains(e.Msg, "undeclared reference to '"+name+"'") {
				lib = name
			}
		}
	}
	return lib
}
