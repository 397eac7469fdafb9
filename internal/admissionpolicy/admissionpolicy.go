package admissionpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	celmutation "github.com/modwright/modwright/internal/lang/cel"
)

// ErrInvalid: a document that is not a valid policy or binding.
var ErrInvalid = errors.New("invalid admission policy")

const group = "admissionregistration.k8s.io/v1"

// Set is Validating and MutatingAdmissionPolicies (compiled once) and
// their bindings.
type Set struct {
	policies         map[string]*policy
	bindings         []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	mutating         map[string]*mutatingPolicy
	mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

type policy struct {
	p         *admissionregistrationv1.ValidatingAdmissionPolicy
	evaluator validating.Validator
}

// NewSet is an empty set.
func NewSet() *Set {
	return &Set{policies: map[string]*policy{}, mutating: map[string]*mutatingPolicy{}}
}

// Len is the number of policies and bindings.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.policies) + len(s.bindings) + len(s.mutating) + len(s.mutatingBindings)
}

// ValidatingPolicies are the set's ValidatingAdmissionPolicies each as a
// set of its own with its bindings, by name: what each one alone says of an
// object (an audit reports per policy).
func (s *Set) ValidatingPolicies() (names []string, sets []*Set) {
	if s == nil {
		return nil, nil
	}
	for name := range s.policies {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		one := NewSet()
		one.policies[name] = s.policies[name]
		for _, b := range s.bindings {
			if b.Spec.PolicyName == name {
				one.bindings = append(one.bindings, b)
			}
		}
		sets = append(sets, one)
	}
	return names, sets
}

// ValidationFailureAnnotation is the audit annotation the API server adds
// for a validation that failed under the Audit action.
const ValidationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// Handles reports whether a document is one of the kinds the set takes.
func Handles(obj map[string]any) bool {
	if obj["apiVersion"] != group {
		return false
	}
	switch obj["kind"] {
	case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
		return true
	}
	return false
}

// Add adds a ValidatingAdmissionPolicy (compiled now) or a binding.
func (s *Set) Add(obj map[string]any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	switch obj["kind"] {
	case "ValidatingAdmissionPolicy":
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := json.Unmarshal(b, p); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		defaultPolicy(p)
		if err := checkValidating(p); err != nil {
			return err
		}
		s.policies[p.Name] = &policy{p: p, evaluator: compile(p)}
	case "ValidatingAdmissionPolicyBinding":
		pb := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := json.Unmarshal(b, pb); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if pb.Spec.MatchResources != nil {
			defaultMatch(pb.Spec.MatchResources)
		}
		s.bindings = append(s.bindings, pb)
	case "MutatingAdmissionPolicy":
		p := &admissionregistrationv1.MutatingAdmissionPolicy{}
		if err := json.Unmarshal(b, p); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if err := defaultMutating(p); err != nil {
			return err
		}
		if err := checkMutating(p); err != nil {
			return err
		}
		s.mutating[p.Name] = &mutatingPolicy{p: p, evaluator: compileMutating(p)}
	case "MutatingAdmissionPolicyBinding":
		pb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		if err := json.Unmarshal(b, pb); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if pb.Spec.MatchResources != nil {
			defaultMatch(pb.Spec.MatchResources)
		}
		s.mutatingBindings = append(s.mutatingBindings, pb)
	default:
		return fmt.Errorf("%w: a %v", ErrInvalid, obj["kind"])
	}
	return nil
}

// defaultPolicy sets the defaults the API server sets when a policy is
// stored (admissionregistration/v1's defaulting): failurePolicy Fail, and
// the match constraints'.
func defaultPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		fail := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &fail
	}
	if p.Spec.MatchConstraints != nil {
		defaultMatch(p.Spec.MatchConstraints)
	}
}

// defaultMatch: matchPolicy Equivalent, empty selectors (everything), the
// rules' scope "*".
func defaultMatch(m *admissionregistrationv1.MatchResources) {
	if m.MatchPolicy == nil {
		eq := admissionregistrationv1.Equivalent
		m.MatchPolicy = &eq
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := admissionregistrationv1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}

// compile compiles a policy as the API server's validating admission
// policy plugin does: one composited compiler holding the variables, then
// the match conditions, validations, audit annotations and message
// expressions (these without the authorizer).
func compile(p *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	withParams := p.Spec.ParamKind != nil
	vars := cel.OptionalVariableDeclarations{HasParams: withParams, HasAuthorizer: true}
	messageVars := cel.OptionalVariableDeclarations{HasParams: withParams}
	fp := p.Spec.FailurePolicy
	c, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, fp, err)
	}
	matcher := compileShared(c, vars, p.Spec.Variables, p.Spec.MatchConditions, fp, p.Name)
	checks := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		checks[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	audits := make([]cel.ExpressionAccessor, len(p.Spec.AuditAnnotations))
	for i, a := range p.Spec.AuditAnnotations {
		audits[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return validating.NewValidator(c.CompileCondition(checks, vars, environment.StoredExpressions), matcher,
		c.CompileCondition(audits, vars, environment.StoredExpressions),
		c.CompileCondition(messages, messageVars, environment.StoredExpressions), fp, nil)
}

// compileShared compiles what both kinds of policy have, as the API
// server's plugins do: the variables (stored in c for the expressions
// compiled after them) and the match conditions (nil: none).
func compileShared(c *cel.CompositedCompiler, vars cel.OptionalVariableDeclarations, vs []admissionregistrationv1.Variable,
	mcs []admissionregistrationv1.MatchCondition, fp *admissionregistrationv1.FailurePolicyType, name string) matchconditions.Matcher {
	named := make([]cel.NamedExpressionAccessor, len(vs))
	for i, v := range vs {
		named[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(named, vars, environment.StoredExpressions)
	if len(mcs) == 0 {
		return nil
	}
	conds := make([]cel.ExpressionAccessor, len(mcs))
	for i := range mcs {
		conds[i] = (*matchconditions.MatchCondition)(&mcs[i])
	}
	return matchconditions.NewMatcher(c.CompileCondition(conds, vars, environment.StoredExpressions), fp, "policy", "validate", name)
}

// Request is one admission request.
type Request struct {
	Operation string         // CREATE, UPDATE, DELETE or CONNECT
	Object    map[string]any // the object; on DELETE the one being deleted
	OldObject map[string]any // UPDATE
	// Namespace is the request's namespace ("" for a cluster-scoped
	// object); its object, when the objects hold it, serves
	// namespaceSelector and namespaceObject.
	Namespace string
	// Objects are the objects params and namespaces are looked up in, in
	// the form Normalize gives (once for all the requests that share them).
	Objects []map[string]any
	User    user.Info
	// Authorizer answers CEL's authorizer checks; nil: every check is
	// denied (no opinion), as offline there is no cluster to ask.
	Authorizer authorizer.Authorizer
	// ClusterScoped reports whether a built-in kind has no namespace (the
	// front end's knowledge); nil: none is known.
	ClusterScoped func(kind string) bool
	// DefaultNamespace is where a namespaced object that names no
	// namespace is (as kubectl creates it): "" means "default".
	DefaultNamespace string
	// Prepared, when set, stands for Objects, ClusterScoped and
	// DefaultNamespace, indexed once (PrepareObjects) for every request
	// that shares them, instead of at each request.
	Prepared *Objects
}

// Objects are the objects params and namespaces are looked up in,
// indexed once for the requests that share them: the namespaces at once,
// a paramKind's params when a policy first reads them. It is safe for
// concurrent use.
type Objects struct {
	objs   []map[string]any
	place  placement
	ns     cache.Indexer
	client *fake.Clientset
	mu     sync.Mutex
	params map[admissionregistrationv1.ParamKind]preparedParams
}

type preparedParams struct {
	inf   paramInformer
	scope meta.RESTScope
}

// PrepareObjects indexes objs (in the form Normalize gives) for requests
// that share them; clusterScoped and defaultNS are Request's.
func PrepareObjects(objs []map[string]any, clusterScoped func(kind string) bool, defaultNS string) *Objects {
	o := &Objects{objs: objs, place: Request{ClusterScoped: clusterScoped, DefaultNamespace: defaultNS}.placement(),
		ns: namespaceIndex(objs), client: fake.NewClientset(), params: map[admissionregistrationv1.ParamKind]preparedParams{}}
	return o
}

// params serves a paramKind's objects: from r.Prepared, indexed once, or
// from r.Objects.
func (r Request) params(pk *admissionregistrationv1.ParamKind) (paramInformer, meta.RESTScope) {
	o := r.Prepared
	if o == nil {
		return paramsOf(pk, r.Objects, r.placement())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.params[*pk]
	if !ok {
		p.inf, p.scope = paramsOf(pk, o.objs, o.place)
		o.params[*pk] = p
	}
	return p.inf, p.scope
}

// normalized is r with its objects copied into the form the API server's
// code takes (int64 and float64 numbers: an object decoded with
// json.Number is not convertible to a typed object; null members absent).
func (r Request) normalized() (Request, error) {
	var err error
	norm := func(m map[string]any) map[string]any {
		if m == nil || err != nil {
			return m
		}
		m, err = Normalize(m)
		return m
	}
	r.Object, r.OldObject = norm(r.Object), norm(r.OldObject)
	return r, err
}

// Normalize copies m with int64 and float64 numbers and without null
// members (absent, as in the API server's decoded objects): what a JSON
// round trip through the API server's decoder gives (an integral float
// within int64 becomes an int64), walked rather than encoded and decoded
// again; a tree holding a value of another type takes the round trip.
func Normalize(m map[string]any) (map[string]any, error) {
	if out, ok := normalizeTree(m).(map[string]any); ok {
		return out, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	dropNulls(out)
	return out, nil
}

// normalizeTree is Normalize of a JSON tree, nil when it holds a value no
// JSON tree holds.
func normalizeTree(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if e == nil {
				continue
			}
			n := normalizeTree(e)
			if n == nil {
				return nil
			}
			out[k] = n
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			if e == nil {
				continue // null stays null in a list
			}
			if out[i] = normalizeTree(e); out[i] == nil {
				return nil
			}
		}
		return out
	case string, bool, int64:
		return v
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil // no JSON number: the round trip's error
		}
		// As encoding/json writes it (the shortest decimal, without an
		// exponent below 1e21) and the API server's decoder reads it back:
		// an integer when that text is one that fits int64.
		if v == math.Trunc(v) && math.Abs(v) < 1e21 {
			if i, err := strconv.ParseInt(strconv.FormatFloat(v, 'f', -1, 64), 10, 64); err == nil {
				return i
			}
		}
		return v
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
	}
	return nil
}

// goForm is m in its Go type's form when its kind is built in, else m.
func goForm(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	form, builtin, err := celmutation.GoForm(m)
	if err != nil || !builtin {
		return m, err
	}
	return Normalize(form)
}

func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				dropNulls(e)
			}
		}
	case []any:
		for _, e := range v {
			dropNulls(e)
		}
	}
}

// Result is the API server's answer.
type Result struct {
	// Err is the refusal (an API status error, as the API server returns
	// it), nil when admitted.
	Err         error
	Warnings    []string
	Annotations map[string]string
}

// Validate evaluates every policy of the set, through its bindings, as the
// API server's validating admission policy plugin does for a request.
func (s *Set) Validate(ctx context.Context, r Request) *Result {
	res := &Result{Annotations: map[string]string{}}
	if len(s.policies) == 0 {
		return res
	}
	r, err := r.normalized()
	if err == nil {
		// A built-in kind as the API server holds it: its Go form.
		r.Object, err = goForm(r.Object)
	}
	if err == nil {
		r.OldObject, err = goForm(r.OldObject)
	}
	if err != nil {
		res.Err = err
		return res
	}
	env := s.prepare(r)
	attrs := env.attributes(r, &unstructured.Unstructured{Object: r.Object})
	attrs.annotations = res.Annotations
	hooks := policyHooks(s.policies, func(p *policy) (*admissionregistrationv1.ValidatingAdmissionPolicy, validating.Validator, *admissionregistrationv1.ParamKind) {
		return p.p, p.evaluator, p.p.Spec.ParamKind
	}, s.bindings, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string { return b.Spec.PolicyName }, r.params)
	rec := &warnings{}
	wctx := warning.WithWarningRecorder(ctx, rec)
	dispatcher := validating.NewDispatcher(env.authz, generic.NewPolicyMatcher(env.matcher))
	res.Err = dispatcher.Dispatch(wctx, attrs, admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme), hooks)
	res.Warnings = rec.list
	return res
}

// policyHooks are the dispatcher's hooks of a set's policies, in name
// order (the API server's order is its informer's; ours is stable), each
// with its bindings and params.
func policyHooks[W any, P runtime.Object, B runtime.Object, E any](policies map[string]W, of func(W) (P, E, *admissionregistrationv1.ParamKind),
	bindings []B, policyName func(B) string, params func(*admissionregistrationv1.ParamKind) (paramInformer, meta.RESTScope)) []generic.PolicyHook[P, B, E] {
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	slices.Sort(names)
	hooks := make([]generic.PolicyHook[P, B, E], 0, len(names))
	for _, n := range names {
		p, e, pk := of(policies[n])
		h := generic.PolicyHook[P, B, E]{Policy: p, Evaluator: e}
		for _, b := range bindings {
			if policyName(b) == n {
				h.Bindings = append(h.Bindings, b)
			}
		}
		if pk != nil {
			h.ParamInformer, h.ParamScope = params(pk)
		}
		hooks = append(hooks, h)
	}
	return hooks
}

// env is what a request's evaluation needs beyond the policies.
type env struct {
	matcher *matching.Matcher
	authz   authorizer.Authorizer
}

// prepare builds the matcher over the namespaces among r.Objects (and the
// request's own when it is not given: offline it is unknown, not absent),
// each with the kubernetes.io/metadata.name label the API server sets, and
// the authorizer.
func (s *Set) prepare(r Request) env {
	var lister listersv1.NamespaceLister
	var client *fake.Clientset
	if o := r.Prepared; o != nil {
		lister, client = listersv1.NewNamespaceLister(o.ns), o.client
	} else {
		lister, client = listersv1.NewNamespaceLister(namespaceIndex(r.Objects)), fake.NewClientset()
	}
	if r.Namespace != "" {
		if _, err := lister.Get(r.Namespace); err != nil {
			lister = withNamespace{lister, r.Namespace}
		}
	}
	e := env{matcher: matching.NewMatcher(lister, client), authz: r.Authorizer}
	if e.authz == nil {
		e.authz = noOpinion
	}
	return e
}

// namespaceIndex indexes the Namespaces among objs, each with the
// kubernetes.io/metadata.name label the API server sets.
func namespaceIndex(objs []map[string]any) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range objs {
		if o["kind"] == "Namespace" && o["apiVersion"] == "v1" {
			ns := &corev1.Namespace{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, ns); err == nil {
				withNameLabel(ns)
				_ = idx.Add(ns)
			}
		}
	}
	return idx
}

// withNamespace is a lister that also has a request's namespace when the
// objects do not (offline it is unknown, not absent): with its name label
// only.
type withNamespace struct {
	listersv1.NamespaceLister
	name string
}

func (w withNamespace) namespace() *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.name}}
	withNameLabel(ns)
	return ns
}

func (w withNamespace) Get(name string) (*corev1.Namespace, error) {
	if name == w.name {
		return w.namespace(), nil
	}
	return w.NamespaceLister.Get(name)
}

func (w withNamespace) List(sel labels.Selector) ([]*corev1.Namespace, error) {
	out, err := w.NamespaceLister.List(sel)
	if ns := w.namespace(); err == nil && sel.Matches(labels.Set(ns.Labels)) {
		out = append(out, ns)
	}
	return out, err
}

// withNameLabel sets the label the API server sets on every namespace,
// kubernetes.io/metadata.name: its name.
func withNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// attributes are the request's admission attributes around obj (on
// DELETE the old object).
func (e env) attributes(r Request, obj *unstructured.Unstructured) *recordingAttributes {
	var old runtime.Object
	if r.OldObject != nil {
		old = &unstructured.Unstructured{Object: r.OldObject}
	}
	var attrObj runtime.Object = obj
	op := admission.Operation(r.Operation)
	if op == admission.Delete {
		attrObj, old = nil, obj
	}
	gvk := obj.GroupVersionKind()
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	u := r.User
	if u == nil {
		u = &user.DefaultInfo{}
	}
	var opts runtime.Object = &metav1.CreateOptions{}
	switch op {
	case admission.Update:
		opts = &metav1.UpdateOptions{}
	case admission.Delete:
		opts = &metav1.DeleteOptions{}
	}
	return &recordingAttributes{Attributes: admission.NewAttributesRecord(attrObj, old, gvk, r.Namespace, obj.GetName(), gvr, "", op, opts, false, u),
		annotations: map[string]string{}}
}

// noOpinion is the authorizer offline: no opinion on anything.
var noOpinion = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "no authorizer offline", nil
})

type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// recordingAttributes keeps the audit annotations the policies add.
type recordingAttributes struct {
	admission.Attributes
	mu          sync.Mutex
	annotations map[string]string
}

func (a *recordingAttributes) AddAnnotation(k, v string) error {
	a.mu.Lock()
	a.annotations[k] = v
	a.mu.Unlock()
	return a.Attributes.AddAnnotation(k, v)
}

// placement says where objects are: whether a kind is cluster-scoped and
// the namespace of a namespaced object that names none.
type placement struct {
	clusterScoped func(kind string) bool
	defaultNS     string
}

func (r Request) placement() placement {
	p := placement{clusterScoped: r.ClusterScoped, defaultNS: r.DefaultNamespace}
	if p.defaultNS == "" {
		p.defaultNS = metav1.NamespaceDefault
	}
	return p
}

// scope is the scope of the kind of objs (those of one apiVersion and
// kind), as the API server's REST mapping gives it: a built-in kind's is
// known (a ConfigMap is namespaced even when a file names no namespace);
// another kind is namespaced when one of its objects has a namespace.
func (p placement) scope(gvk schema.GroupVersionKind, objs []*unstructured.Unstructured) meta.RESTScope {
	if clientgoscheme.Scheme.Recognizes(gvk) && p.clusterScoped != nil {
		if p.clusterScoped(gvk.Kind) {
			return meta.RESTScopeRoot
		}
		return meta.RESTScopeNamespace
	}
	for _, u := range objs {
		if u.GetNamespace() != "" {
			return meta.RESTScopeNamespace
		}
	}
	return meta.RESTScopeRoot
}

// paramsOf serves a paramKind's objects among objs as the plugin's param
// informer does (typed built-ins lose their apiVersion and kind there;
// unstructured ones keep them). A namespaced param that names no
// namespace is in place's default namespace, as kubectl would create it:
// a binding's paramRef finds it there and nowhere else.
func paramsOf(pk *admissionregistrationv1.ParamKind, objs []map[string]any, place placement) (paramInformer, meta.RESTScope) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	gv, _ := schema.ParseGroupVersion(pk.APIVersion)
	gvk := gv.WithKind(pk.Kind)
	var of []*unstructured.Unstructured
	for _, o := range objs {
		if o["apiVersion"] == pk.APIVersion && o["kind"] == pk.Kind {
			of = append(of, &unstructured.Unstructured{Object: o})
		}
	}
	scope := place.scope(gvk, of)
	for _, u := range of {
		if scope == meta.RESTScopeNamespace && u.GetNamespace() == "" {
			u = u.DeepCopy() // never modify a given object
			u.SetNamespace(place.defaultNS)
		} else if scope == meta.RESTScopeRoot && u.GetNamespace() != "" {
			u = u.DeepCopy()
			u.SetNamespace("")
		}
		var stored runtime.Object = u
		if typed, err := clientgoscheme.Scheme.New(gvk); err == nil {
			if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed) == nil {
				if acc, err := meta.TypeAccessor(typed); err == nil {
					acc.SetAPIVersion("")
					acc.SetKind("")
				}
				stored = typed
			}
		}
		_ = idx.Add(stored)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return paramInformer{idx: idx, gr: gvr.GroupResource()}, scope
}

type paramInformer struct {
	idx cache.Indexer
	gr  schema.GroupResource
}

func (p paramInformer) Informer() cache.SharedIndexInformer { return synced{} }
func (p paramInformer) Lister() cache.GenericLister         { return cache.NewGenericLister(p.idx, p.gr) }

// synced is an informer that has listed everything (the params are given).
type synced struct{ cache.SharedIndexInformer }

func (synced) HasSynced() bool { return true }

// Resources are the group and resource names the set's validating
// policies can match (their matchConstraints' resourceRules; a binding
// only narrows them); all: one names every group or resource ("*").
// Subresources are left out: only objects are audited.
func (s *Set) Resources() (grs []schema.GroupResource, all bool) {
	if s == nil {
		return nil, false
	}
	seen := map[schema.GroupResource]bool{}
	for _, p := range s.policies {
		mc := p.p.Spec.MatchConstraints
		if mc == nil {
			return nil, true
		}
		for _, r := range mc.ResourceRules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if g == "*" || res == "*" || strings.HasPrefix(res, "*/") {
						return nil, true
					}
					if strings.Contains(res, "/") {
						continue
					}
					gr := schema.GroupResource{Group: g, Resource: res}
					if !seen[gr] {
						seen[gr] = true
						grs = append(grs, gr)
					}
				}
			}
		}
	}
	slices.SortFunc(grs, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
	return grs, false
}
