package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/lang/jsonpath"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/rules"
)

// The variables of a policy's CEL expressions, as admission policies name
// them; a validation with a scope also has self and oldSelf.
const (
	varObject          = cel.VarObject
	varOldObject       = cel.VarOldObject
	varRequest         = "request"
	varNamespaceObject = "namespaceObject"
	varVariables       = "variables"
	varSelf            = cel.VarSelf
	varOldSelf         = "oldSelf"
)

// baseEnv is the environment of every expression slot; scopedEnv adds
// self and oldSelf for a validation with a scope.
func baseEnv(name string) *lang.Env {
	return &lang.Env{Name: name, Vars: []lang.Var{
		{Name: varObject, Doc: "the object (null on DELETE)"},
		{Name: varOldObject, Doc: "the existing object (UPDATE, DELETE), else null"},
		{Name: varRequest, Doc: "the admission request's attributes (admission.k8s.io/v1)"},
		{Name: varNamespaceObject, Doc: "the object's Namespace, null for cluster-scoped objects"},
		{Name: varVariables, Doc: "the policy's variables, by name"},
		{Name: cel.VarAuthorizer, Doc: "the API server's authorizer (SubjectAccessReviews), checks for the requesting user; none offline"},
	}}
}

func scopedEnv(name string) *lang.Env {
	env := baseEnv(name)
	env.Vars = append(env.Vars,
		lang.Var{Name: varSelf, Doc: "the value the scope selected"},
		lang.Var{Name: varOldSelf, Doc: "the value at the same place in oldObject, or null"})
	return env
}

// Rule is a compiled ModwrightPolicy or ClusterModwrightPolicy. It is
// immutable.
type Rule struct {
	engine.RuleInfo
	// Spec is the source, kept for explanations and lint.
	Spec *v1alpha1.PolicySpec

	cluster bool
	match   matcher
	exclude *matcher
	// vars are the context entries (the first contextEntries), then the
	// variables; varIndex finds them by name.
	vars           []variable
	contextEntries int
	varIndex       map[string]int
	// progs are the JMESPath programs of the {{ }} variables.
	progs      programs
	nested     []fieldExpr // variables nested in another variable, for lint
	conditions []condition
	validates  []validation
	mutations  []mutation
	audits     []audit
	deny, warn bool
	audit      bool
	// uses says which costly inputs an expression may read (a variable's
	// name in its source): the request map, the namespace, the old object.
	usesRequest, usesNamespace, usesOld, usesAuthz bool
	// usesRoles: a JMESPath expression or {{ }} may read request.roles or
	// request.clusterRoles (the RBAC lookup is made only then).
	usesRoles bool
}

var _ engine.Rule = (*Rule)(nil)

// Info returns the kernel's view of the rule.
func (r *Rule) Info() *engine.RuleInfo { return &r.RuleInfo }

// variable is a context entry (entry) or a variables[] entry (e).
type variable struct {
	name, field string
	e           expr
	entry       *contextEntry
	// memo names the variable's value for a version of the object, when
	// it is the same in every policy that defines it alike: a CEL program
	// reading only the object, the old object, the request, the namespace
	// and variables of such values (memoID). Empty when it is not.
	memo string
	// memoDeps are the variables it reads (their indexes), in the order
	// of the program's Members: a remembered value's reads are replayed
	// (run.celVariable).
	memoDeps []int
}

// condition is an expression or a block of Kyverno conditions.
type condition struct {
	name, field string
	e           expr
	conds       *condSet
}

type validation struct {
	field     string // spec.validations[i]
	e         expr
	deny      *condSet   // a deny block: the validation fails when it holds
	cue       *cueProg   // a CUE program producing validate
	scope     lang.Query // nil: the object
	place     placed     // scope's, when it names its nodes' paths
	message   string
	msgT      *subst.Template // the message's {{ }} variables
	msgExpr   *cel.Program
	reason    string
	code      int
	scopeText string
}

// placed is a scope that gives the full path of a node it selected
// (lang/jsonpath's): where a CRD's schema types self.
type placed interface {
	PathOf(root any, keys []any) ([]any, bool)
	Pattern() ([]any, bool)
}

type mutation struct {
	field string
	m     *cel.Mutation
	patch *staticPatch
	cue   *cueProg
}

type audit struct {
	key, field string
	prog       *cel.Program
}

// resourceFilter is a compiled v1alpha1.ResourceFilter.
type resourceFilter struct {
	groups, kinds, names, namespaces []string // nil: any
}

// matcher is a compiled match or exclude.
type matcher struct {
	resources         []resourceFilter
	namespaceSelector labels.Selector // nil: none
	objectSelector    labels.Selector
}

// The range of executionTier, as ModRule's and the CRDs'.
const (
	minTier = -32767
	maxTier = 32766
)

// reasonCode maps a validation's reason to its HTTP code, as admission
// policies do.
func reasonCode(r metav1.StatusReason) (int, bool) {
	switch r {
	case metav1.StatusReasonInvalid:
		return http.StatusUnprocessableEntity, true
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden, true
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized, true
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge, true
	}
	return 0, false
}

// compiler collects a policy's errors while compiling it.
type compiler struct {
	options
	errs []rules.FieldError
	// varFields are the CEL types of the variables compiled so far, by
	// name: later CEL expressions see `variables` as an object of these
	// fields, as the apiserver types an admission policy's variables (a
	// variable in another language is dyn).
	varFields map[string]*apiservercel.DeclField
	// varsType is the type of `variables` made of varFields when it held
	// varsTypeN fields, and varsKey its name (the fields' names and types):
	// rules whose variables have the same names and types share the
	// environments declaring it, and their programs. typedEnvs holds them
	// when no cache is given (one rule's).
	varsType  *apiservercel.DeclType
	varsTypeN int
	varsKey   string
	typedEnvs *cel.EnvCache
	// refsFailed: a `$( )` reference did not resolve (reported once; the
	// condition blocks holding references are not compiled).
	refsFailed bool
}

func (c *compiler) errorf(field string, pos int, format string, args ...any) {
	c.errs = append(c.errs, rules.FieldError{Field: field, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) diags(field string, ds []lang.Diagnostic) {
	for _, d := range ds {
		c.errs = append(c.errs, rules.FieldError{Field: field, Pos: d.Pos, Msg: d.Msg})
	}
}

// expr compiles an expression slot's union: exactly one language member;
// types, when given, are the types a CEL value may have (a JMESPath value
// is checked when it is evaluated). alt is the number of the slot's other
// members set (a conditions block); union is the error when the slot does
// not have exactly one member; vars are the variables a Rego member may
// read.
func (c *compiler) expr(field string, e v1alpha1.Expression, env *lang.Env, vars []variable, alt int, union string, types ...string) expr {
	n := alt + boolInt(e.Rego != nil)
	if e.CEL != "" {
		n++
	}
	if e.JMESPath != "" {
		n++
	}
	if n != 1 {
		c.errorf(field, -1, "%s", union)
		return expr{field: field}
	}
	if alt > 0 {
		return expr{field: field}
	}
	switch {
	case e.CEL != "":
		return expr{field: field + ".cel", cel: c.cel(field+".cel", e.CEL, env, types...)}
	case e.JMESPath != "":
		jp, ds := compileJP(e.JMESPath)
		c.diags(field+".jmespath", ds)
		return expr{field: field + ".jmespath", jp: jp}
	case e.Rego != nil:
		return expr{field: field + ".rego", rego: c.regoProgram(field+".rego", e.Rego, vars)}
	}
	return expr{field: field}
}

func (c *compiler) cel(field, src string, env *lang.Env, types ...string) *cel.Program {
	var p *cel.Program
	var ds []lang.Diagnostic
	if len(c.varFields) > 0 && env.Has(varVariables) && !env.Has(varSelf) {
		if c.varsType == nil || c.varsTypeN != len(c.varFields) {
			// On a copy: the type is shared, with the environments
			// built on it, by every policy of the kind, and the fields
			// go on growing with this policy's next variables.
			c.varsType, c.varsTypeN = apiservercel.NewObjectType(varsTypeName, maps.Clone(c.varFields)), len(c.varFields)
			c.varsKey = fieldsKey(varsTypeName, c.varFields)
		}
		envs := c.celEnvs
		if envs == nil {
			if c.typedEnvs == nil {
				c.typedEnvs = cel.NewEnvCache()
			}
			envs = c.typedEnvs
		}
		p, ds = cel.Language{Envs: envs}.CompileTypedAs(env, src, map[string]*apiservercel.DeclType{varVariables: c.varsType}, c.varsKey)
	} else {
		p, ds = cel.Language{Envs: c.celEnvs}.CompileExpr(env, src)
	}
	if len(ds) > 0 {
		c.diags(field, ds)
		return nil
	}
	if len(types) > 0 && !p.ResultIs(types...) {
		// As admission policies: a type that can never be the right one
		// is refused when the policy loads.
		want := types[0]
		if len(types) > 1 {
			want = "one of [" + strings.Join(types, " ") + "]"
		}
		c.errorf(field, 0, "must evaluate to %s but got %s", want, p.ResultType())
		return nil
	}
	return p
}

// varsTypeName is the name of the type of `variables`, as the apiserver
// names an admission policy's.
const varsTypeName = "kubernetes.variables"

// fieldsKey names the object type name of fields, each optional and of a
// scalar type or dyn (a variable's DeclType): the fields' names and types,
// in order of name.
func fieldsKey(name string, fields map[string]*apiservercel.DeclField) string {
	names := slices.Sorted(maps.Keys(fields))
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteByte(':')
		b.WriteString(fields[n].Type.CelType().String())
	}
	b.WriteByte('}')
	return b.String()
}

// Compile compiles a policy's spec; kind is "ModwrightPolicy" or
// "ClusterModwrightPolicy" (or a former name of one: v1alpha1.PolicyKind). A
// spec that does not compile gives a rule whose Err is a
// *rules.CompileError listing every problem, with field paths and
// positions.
func Compile(kind string, meta Meta, spec *v1alpha1.PolicySpec, opts ...Option) *Rule {
	_, cluster := v1alpha1.PolicyKind(kind)
	key := rules.Key(meta.Namespace, meta.Name)
	r := &Rule{
		RuleInfo: engine.RuleInfo{Kind: kind, Key: key, Namespace: meta.Namespace, Name: meta.Name, Tier: spec.ExecutionTier},
		Spec:     spec,
		cluster:  cluster,
	}
	var c compiler
	for _, opt := range opts {
		opt(&c.options)
	}
	spec = c.resolveReferences(spec)
	r.Spec = spec
	if !cluster && meta.Namespace == "" {
		c.errorf("metadata.namespace", -1, "a %s needs a namespace (a %s applies cluster-wide)", kind, v1alpha1.KindClusterModwrightPolicy)
	}
	if cluster && meta.Namespace != "" {
		c.errorf("metadata.namespace", -1, "a %s has no namespace", kind)
	}

	if spec.ExecutionTier < minTier || spec.ExecutionTier > maxTier {
		c.errorf("spec.executionTier", -1, "%d is out of range: an executionTier is between %d and %d", spec.ExecutionTier, minTier, maxTier)
	}
	switch spec.FailurePolicy {
	case "", v1alpha1.Fail:
		r.FailurePolicy = engine.FailureFail
	case v1alpha1.Ignore:
		r.FailurePolicy = engine.FailureIgnore
	default:
		c.errorf("spec.failurePolicy", -1, "unknown failure policy %q: use Fail or Ignore", spec.FailurePolicy)
	}
	r.compileActions(&c, spec.ValidationActions)
	r.compileMatch(&c, spec.Match)

	// Context entries and expressions.
	r.varIndex = make(map[string]int, len(spec.Context)+len(spec.Variables))
	r.progs.static, r.progs.fields, r.progs.nested = map[string]*jpExpr{}, map[string]string{}, c.nested
	if r.progs.nested == nil {
		r.progs.nested = NewNestedCache()
	}
	r.compileContext(&c, spec.Context)
	r.compileVariables(&c, spec.Variables)
	r.compileMatchConditions(&c, spec.MatchConditions)
	for i := range spec.Validations {
		r.compileValidation(&c, fmt.Sprintf("spec.validations[%d]", i), &spec.Validations[i])
	}
	for i := range spec.Mutations {
		r.compileMutation(&c, fmt.Sprintf("spec.mutations[%d]", i), &spec.Mutations[i])
	}
	r.compileAudits(&c, spec.AuditAnnotations)

	if len(spec.Validations) == 0 && len(spec.Mutations) == 0 && len(spec.AuditAnnotations) == 0 {
		c.errorf("spec", -1, "a policy needs at least one of validations, mutations and auditAnnotations")
	}
	// Phases: mutations in the rule's tier, the rest on the final object.
	if len(spec.Mutations) > 0 {
		r.Phase |= engine.Mutate
	}
	if len(spec.Validations) > 0 || len(spec.AuditAnnotations) > 0 || r.Phase == 0 {
		r.Phase |= engine.Validate
	}
	r.noteUses(spec)
	r.Index.Fields = r.fields(spec.Match)
	if len(c.errs) > 0 {
		r.Err = &rules.CompileError{Kind: kind, Rule: key, Errors: c.errs}
	}
	return r
}

// compileVariables compiles spec.variables, in order: each may read the
// ones before it.
func (r *Rule) compileVariables(c *compiler, vars []v1alpha1.Variable) {
	for i, v := range vars {
		field := fmt.Sprintf("spec.variables[%d]", i)
		if _, dup := r.varIndex[v.Name]; dup {
			c.errorf(field+".name", -1, "variable %q is defined twice", v.Name)
		} else if !cel.IsIdentifier(v.Name) {
			c.errorf(field+".name", -1, "variable name %q is not an identifier (letters, digits, _; not starting with a digit)", v.Name)
		}
		r.varIndex[v.Name] = len(r.vars)
		e := c.expr(field, v.Expression, baseEnv(field), r.vars, 0, "exactly one language must be set: cel, jmespath or rego")
		memo, deps := r.memoID(e.cel, len(r.vars))
		r.vars = append(r.vars, variable{name: v.Name, field: e.field, e: e, memo: memo, memoDeps: deps})
		dt := apiservercel.DynType
		if e.cel != nil {
			dt = e.cel.DeclType()
		}
		if c.varFields == nil {
			c.varFields = map[string]*apiservercel.DeclField{}
		}
		c.varFields[v.Name] = apiservercel.NewDeclField(v.Name, dt, false, nil, nil)
	}
}

// maxMemoID bounds a variable's memo name (it names the variables it
// reads, and theirs): a longer one is not remembered. maxMemoVars bounds
// the variables of a policy whose values are remembered (the reads of
// one are a bit set).
const (
	maxMemoID   = 512
	maxMemoVars = 64
)

// memoID names the value of p as variable i (see variable.memo): its
// program (shared by every policy compiling the same expression against
// the same variables' types: cel.EnvCache) and the definitions of the
// variables it reads, with their indexes in the order of the program's
// Members; "" when the value may differ between policies.
func (r *Rule) memoID(p *cel.Program, i int) (string, []int) {
	if p == nil || i >= maxMemoVars || !p.Reads(varObject, varOldObject, varRequest, varNamespaceObject, varVariables) {
		return "", nil
	}
	members, whole := p.Members(varVariables)
	if whole {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%p", p)
	deps := make([]int, len(members))
	for n, m := range members {
		j, ok := r.varIndex[m]
		if !ok || j >= i || r.vars[j].memo == "" {
			return "", nil
		}
		deps[n] = j
		fmt.Fprintf(&b, " %s=(%s)", m, r.vars[j].memo)
		if b.Len() > maxMemoID {
			return "", nil
		}
	}
	return b.String(), deps
}

// compileMatchConditions compiles spec.matchConditions.
func (r *Rule) compileMatchConditions(c *compiler, mcs []v1alpha1.MatchCondition) {
	names := map[string]bool{}
	for i, mc := range mcs {
		field := fmt.Sprintf("spec.matchConditions[%d]", i)
		if mc.Name == "" {
			c.errorf(field+".name", -1, "a match condition needs a name")
		} else if errs := k8svalidation.IsQualifiedName(mc.Name); len(errs) > 0 {
			c.errorf(field+".name", -1, "%q is not a qualified name: %s", mc.Name, strings.Join(errs, "; "))
		} else if names[mc.Name] {
			c.errorf(field+".name", -1, "match condition %q is defined twice", mc.Name)
		}
		names[mc.Name] = true
		cond := condition{name: mc.Name}
		if mc.Conditions != nil {
			cond.conds = c.conditions(r, field+".conditions", mc.Conditions)
			cond.field = field + ".conditions"
		}
		if cond.e = c.expr(field, mc.Expression, baseEnv(field), r.vars, boolInt(mc.Conditions != nil), "exactly one of cel, jmespath, rego and conditions must be set", "bool"); cond.conds == nil {
			cond.field = cond.e.field
		}
		r.conditions = append(r.conditions, cond)
	}
}

// compileValidation compiles one of spec.validations (at field).
func (r *Rule) compileValidation(c *compiler, field string, v *v1alpha1.Validation) {
	env := baseEnv(field)
	val := validation{field: field, message: strings.TrimSpace(v.Message), scopeText: v.Scope}
	val.msgT = c.template(r, field+".message", val.message)
	if v.Scope != "" {
		env = scopedEnv(field)
		q, ds := jsonpath.Language{}.CompileQuery(&lang.Env{Name: field + ".scope", Vars: []lang.Var{{Name: jsonpath.VarObject}}}, v.Scope)
		switch {
		case len(ds) > 0:
			c.diags(field+".scope", ds)
		case !q.IsPath():
			c.errorf(field+".scope", -1, "a scope must be a path into the object ($.spec.containers[*]), not a computed expression")
		default:
			val.scope = q
			val.place = q
		}
	}
	val.e = c.expr(field, v.Expression, env, r.vars, boolInt(v.Deny != nil)+boolInt(v.CUE != ""), "exactly one of cel, jmespath, rego, deny and cue must be set", "bool")
	if v.Rego != nil && v.Scope != "" {
		c.errorf(field+".scope", -1, "a rego validation has no scope: its module reads the whole input")
	}
	if v.CUE != "" && v.Deny == nil {
		if v.Scope != "" {
			c.errorf(field+".scope", -1, "a cue validation has no scope: its program reads the whole object")
		}
		val.cue = c.cueProgram(r, field+".cue", v.CUE)
	}
	if v.Deny != nil {
		if v.Scope != "" {
			c.errorf(field+".scope", -1, "a deny block has no scope: its conditions read the whole context")
		}
		val.deny = c.conditions(r, field+".deny.conditions", &v.Deny.Conditions)
	}
	if v.MessageExpression != "" {
		val.msgExpr = c.cel(field+".messageExpression", v.MessageExpression, env, "string")
	}
	val.reason, val.code = string(metav1.StatusReasonInvalid), http.StatusUnprocessableEntity
	if v.Reason != nil {
		code, ok := reasonCode(*v.Reason)
		if !ok {
			c.errorf(field+".reason", -1, "unknown reason %q: use Invalid, Forbidden, Unauthorized or RequestEntityTooLarge", *v.Reason)
		}
		val.reason, val.code = string(*v.Reason), code
	}
	r.validates = append(r.validates, val)
}

// compileMutation compiles one of spec.mutations (at field).
func (r *Rule) compileMutation(c *compiler, field string, m *v1alpha1.Mutation) {
	var (
		kind cel.MutationKind
		src  string
	)
	switch {
	case boolInt(m.JSONPatch != "")+boolInt(m.ApplyConfiguration != "")+boolInt(m.Patch != nil)+boolInt(m.CUE != "") > 1:
		c.errorf(field, -1, "exactly one of jsonPatch, applyConfiguration, patch and cue must be set")
		return
	case m.CUE != "":
		if cp := c.cueProgram(r, field+".cue", m.CUE); cp != nil {
			r.mutations = append(r.mutations, mutation{field: field + ".cue", cue: cp})
		}
		return
	case m.Patch != nil:
		if sp := c.staticPatch(r, field+".patch", m.Patch); sp != nil {
			r.mutations = append(r.mutations, mutation{field: field + ".patch", patch: sp})
		}
		return
	case m.JSONPatch != "":
		kind, src, field = cel.JSONPatch, m.JSONPatch, field+".jsonPatch"
	case m.ApplyConfiguration != "":
		kind, src, field = cel.ApplyConfiguration, m.ApplyConfiguration, field+".applyConfiguration"
	default:
		c.errorf(field, -1, "exactly one of jsonPatch, applyConfiguration, patch and cue must be set")
		return
	}
	mu, ds := cel.Language{Envs: c.celEnvs}.CompileMutation(baseEnv(field), kind, src)
	if len(ds) > 0 {
		c.diags(field, ds)
		return
	}
	r.mutations = append(r.mutations, mutation{field: field, m: mu})
}

// compileAudits compiles spec.auditAnnotations.
func (r *Rule) compileAudits(c *compiler, audits []v1alpha1.AuditAnnotation) {
	keys := map[string]bool{}
	for i, a := range audits {
		field := fmt.Sprintf("spec.auditAnnotations[%d]", i)
		if a.Key == "" {
			c.errorf(field+".key", -1, "an audit annotation needs a key")
		} else if errs := k8svalidation.IsQualifiedName(a.Key); len(errs) > 0 || strings.Contains(a.Key, "/") {
			c.errorf(field+".key", -1, "%q is not a valid key: the name part of a qualified name (letters, digits, '-', '_' and '.', beginning and ending with a letter or digit, at most 63)", a.Key)
		} else if keys[a.Key] {
			c.errorf(field+".key", -1, "audit annotation key %q is defined twice", a.Key)
		}
		keys[a.Key] = true
		var p *cel.Program
		if a.ValueExpression == "" {
			c.errorf(field+".valueExpression", -1, "an audit annotation needs a valueExpression")
		} else {
			p = c.cel(field+".valueExpression", a.ValueExpression, baseEnv(field), "string", "null_type")
		}
		r.audits = append(r.audits, audit{key: a.Key, field: field + ".valueExpression", prog: p})
	}
}

// compileActions checks validationActions (default Deny).
func (r *Rule) compileActions(c *compiler, actions []v1alpha1.ValidationAction) {
	if len(actions) == 0 {
		r.deny = true
		return
	}
	for i, a := range actions {
		switch a {
		case v1alpha1.Deny:
			r.deny = true
		case v1alpha1.Warn:
			r.warn = true
		case v1alpha1.Audit:
			r.audit = true
		default:
			c.errorf(fmt.Sprintf("spec.validationActions[%d]", i), -1, "unknown validation action %q: use Deny, Warn or Audit", a)
		}
	}
	if r.deny && r.warn {
		c.errorf("spec.validationActions", -1, "Deny and Warn cannot be used together (a denial already tells the client)")
	}
}

// compileMatch compiles spec.match into the matcher and the index keys.
func (r *Rule) compileMatch(c *compiler, m *v1alpha1.MatchResources) {
	if m == nil {
		m = &v1alpha1.MatchResources{}
	}
	ops := m.Operations
	if len(ops) == 0 {
		ops = []v1alpha1.Operation{"CREATE", "UPDATE"}
	}
	for i, op := range ops {
		o := rules.Operation(op)
		switch o {
		case rules.Create, rules.Update, rules.Delete, rules.Connect:
			r.Index.Operations |= engine.OpSetOf(o)
		default:
			c.errorf(fmt.Sprintf("spec.match.operations[%d]", i), -1, "unknown operation %q: use CREATE, UPDATE, DELETE or CONNECT", op)
		}
	}
	r.match = r.compileMatcher(c, "spec.match", m.Resources, m.NamespaceSelector, m.ObjectSelector)
	if m.Exclude != nil {
		ex := r.compileMatcher(c, "spec.match.exclude", m.Exclude.Resources, m.Exclude.NamespaceSelector, m.Exclude.ObjectSelector)
		r.exclude = &ex
	}

	// Index: the namespace, the kinds, and whether namespace globs filter.
	if r.cluster {
		r.Index.AnyNamespace = true
	} else {
		r.Index.Namespace = r.Namespace
	}
	for _, f := range r.match.resources {
		if f.namespaces != nil {
			r.Index.Filtered = true
		}
	}
	if len(r.match.resources) > 0 {
		var ks []string
		for _, f := range r.match.resources {
			if f.kinds == nil {
				ks = nil
				break
			}
			ks = append(ks, f.kinds...)
		}
		r.Index.Kinds = ks
	}
}

func (r *Rule) compileMatcher(c *compiler, field string, fs []v1alpha1.ResourceFilter, nsSel, objSel *metav1.LabelSelector) matcher {
	var m matcher
	for i, f := range fs {
		ff := fmt.Sprintf("%s.resources[%d]", field, i)
		rf := resourceFilter{
			groups: anyOf(f.APIGroups),
			kinds:  anyOf(f.Kinds),
			names:  c.globs(ff+".names", f.Names),
		}
		if len(f.Namespaces) > 0 {
			if !r.cluster {
				c.errorf(ff+".namespaces", -1, "namespaces is for %s only: a %s applies to its own namespace", v1alpha1.KindClusterModwrightPolicy, r.Kind)
			}
			rf.namespaces = c.globs(ff+".namespaces", f.Namespaces)
		}
		m.resources = append(m.resources, rf)
	}
	m.namespaceSelector = c.selector(field+".namespaceSelector", nsSel)
	m.objectSelector = c.selector(field+".objectSelector", objSel)
	return m
}

// anyOf is nil (any) for an empty list or one holding "*".
func anyOf(list []string) []string {
	for _, s := range list {
		if s == "*" {
			return nil
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
}

func (c *compiler) globs(field string, list []string) []string {
	for i, g := range list {
		if _, err := path.Match(g, ""); err != nil {
			c.errorf(fmt.Sprintf("%s[%d]", field, i), -1, "bad glob %q: %v", g, err)
		}
	}
	return anyOf(list)
}

func (c *compiler) selector(field string, s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		c.errorf(field, -1, "%v", err)
		return nil
	}
	if sel.Empty() {
		return nil
	}
	return sel
}

// noteUses records which costly inputs the expressions may read: a
// variable's name anywhere in a source (a string literal too) counts, so
// this errs on the side of providing them.
func (r *Rule) noteUses(spec *v1alpha1.PolicySpec) {
	// Everything but CEL reads Kyverno's context, whose request is built
	// as it is read; only the roles cost a lookup of their own.
	if b, err := json.Marshal(spec); err == nil {
		r.usesRoles = bytes.Contains(b, []byte("roles")) || bytes.Contains(b, []byte("Roles"))
	}
	var srcs []string
	for _, v := range spec.Variables {
		srcs = append(srcs, v.CEL)
	}
	for _, m := range spec.MatchConditions {
		srcs = append(srcs, m.CEL)
	}
	for _, v := range spec.Validations {
		srcs = append(srcs, v.CEL, v.MessageExpression)
	}
	for _, m := range spec.Mutations {
		srcs = append(srcs, m.JSONPatch, m.ApplyConfiguration)
	}
	for _, a := range spec.AuditAnnotations {
		srcs = append(srcs, a.ValueExpression)
	}
	for _, s := range srcs {
		r.usesRequest = r.usesRequest || strings.Contains(s, varRequest)
		r.usesNamespace = r.usesNamespace || strings.Contains(s, varNamespaceObject)
		r.usesOld = r.usesOld || strings.Contains(s, varOldObject) || strings.Contains(s, varOldSelf)
		r.usesAuthz = r.usesAuthz || strings.Contains(s, cel.VarAuthorizer)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
