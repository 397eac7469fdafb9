package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/kinds/kyvernoautogen"
)

// Kyverno translates Kyverno's ValidatingPolicies and MutatingPolicies, as
// Kyverno generates admission policies from them: a ValidatingPolicy gives
// a ValidatingAdmissionPolicy (kyverno-vpol-NAME) with its match
// constraints, match conditions, variables, validations, audit
// annotations and failure policy, and a binding with its validation
// actions; a MutatingPolicy a MutatingAdmissionPolicy (kyverno-mpol-NAME)
// with its match constraints, match conditions, variables, mutations,
// failure policy and reinvocation policy, and a binding; a Pod policy's
// autogen policies for pod controllers one more each (-autogen,
// -autogen-cronjobs), their paths rewritten to the pod template as the
// webhook evaluates them. A namespaced policy's (kyverno-nvpol-NAMESPACE.NAME,
// kyverno-nmpol-...) match only the objects of its namespace (kyvernoScope).
// It is exact only where CEL on the API server reads the policy as
// modwright does: the others are skipped with the reason (one off at
// admission or mutating existing
// objects, a MutatingPolicy with audit annotations, Kyverno's CEL
// libraries or exceptions, x.orValue(y) on a value that may not be
// optional, which Kyverno's CEL accepts and the API server's does not).
// Each policy and binding is loaded as the API server would load it.
func Kyverno(policies []Rule) Result {
	var res Result
	for _, r := range policies {
		var objs []any
		var err error
		if r.Kind == kpoliciesv1.KindMutatingPolicy || r.Kind == kpoliciesv1.KindNamespacedMutatingPolicy {
			objs, err = mpolPolicies(r)
		} else {
			objs, err = vpolPolicies(r)
		}
		var maps []map[string]any
		if err == nil {
			maps, err = toMaps(objs)
		}
		if err == nil {
			set := admissionpolicy.NewSet()
			for _, m := range maps {
				if err = set.Add(m); err != nil {
					err = untranslatable("the API server would refuse the translation: %v", err)
					break
				}
			}
		}
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{Rule: r, Reason: reason(err)})
			continue
		}
		res.Translated = append(res.Translated, Translation{Rules: []Rule{r}, Objects: maps})
	}
	return res
}

// vpolPolicies are a ValidatingPolicy's admission policies and bindings.
func vpolPolicies(r Rule) ([]any, error) {
	if r.Kind != kpoliciesv1.KindValidatingPolicy && r.Kind != kpoliciesv1.KindNamespacedValidatingPolicy {
		return nil, untranslatable("Kyverno's %s is not translated to admission policies (yet): the webhook serves it", r.Kind)
	}
	b, err := json.Marshal(r.Object)
	if err != nil {
		return nil, err
	}
	var vp kpoliciesv1.ValidatingPolicy
	if err := json.Unmarshal(b, &vp); err != nil {
		return nil, err
	}
	spec := &vp.Spec
	if ev := spec.Evaluation; ev != nil && ev.Admission != nil && ev.Admission.Enabled != nil && !*ev.Admission.Enabled {
		return nil, untranslatable("the policy is off at admission (evaluation.admission.enabled: false)")
	}
	if ev := spec.Evaluation; ev != nil && ev.Mode != "" && ev.Mode != "Kubernetes" {
		return nil, untranslatable("evaluation.mode %s", ev.Mode)
	}
	actions := spec.ValidationActions
	if len(actions) == 0 {
		actions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny} // Kyverno's default
	}
	out := []any{}
	add := func(name string, s *kpoliciesv1.ValidatingPolicySpec) error {
		if err := kyvernoCELExact(vpolExprs(s), s.Variables); err != nil {
			return err
		}
		mc, err := kyvernoScope(r, s.MatchConstraints)
		if err != nil {
			return err
		}
		vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
			TypeMeta:   typeMeta("ValidatingAdmissionPolicy"),
			ObjectMeta: kyvernoMeta(name, r),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: mc,
				MatchConditions:  s.MatchConditions,
				Variables:        s.Variables,
				Validations:      s.Validations,
				AuditAnnotations: s.AuditAnnotations,
				FailurePolicy:    s.FailurePolicy,
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   typeMeta("ValidatingAdmissionPolicyBinding"),
			ObjectMeta: kyvernoMeta(name, r),
			Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: actions},
		}
		out = append(out, vap, binding)
		return nil
	}
	if err := withAutogen(kyvernoName("vpol", r), spec, kyvernoautogen.VPol(spec), add); err != nil {
		return nil, err
	}
	return out, nil
}

// kyvernoName is the name of a policy's admission policies (autogen ones
// add a suffix): kyverno-<short kind>-<name>, a namespaced policy's
// kyverno-n<short kind>-<namespace>.<name> (cut with a hash when longer
// than a name may be, room left for the suffixes).
func kyvernoName(short string, r Rule) string {
	md, _ := r.Object["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if ns := r.namespace(); ns != "" {
		return cutName("kyverno-n"+short+"-"+ns+"."+name, 253-len("-autogen-cronjobs"))
	}
	return "kyverno-" + short + "-" + name
}

// kyvernoScope is a policy's matchConstraints as its admission policy's: a
// namespaced policy's confined to the objects of its namespace, as
// Kyverno's namespaced policies are (each rule namespaced in scope, the
// namespace selector ANDed with the namespace's name: the API server
// applies it to no cluster-scoped object, Namespaces included).
func kyvernoScope(r Rule, mc *admissionregistrationv1.MatchResources) (*admissionregistrationv1.MatchResources, error) {
	ns := r.namespace()
	if ns == "" || mc == nil {
		return mc, nil
	}
	out := mc.DeepCopy()
	namespaced := admissionregistrationv1.NamespacedScope
	for i := range out.ResourceRules {
		rule := &out.ResourceRules[i]
		if rule.Scope != nil && *rule.Scope == admissionregistrationv1.ClusterScope {
			return nil, untranslatable("a namespaced policy's matchConstraints.resourceRules[%d] names cluster-scoped objects, which it never applies to", i)
		}
		rule.Scope = &namespaced
	}
	if out.NamespaceSelector == nil {
		out.NamespaceSelector = &metav1.LabelSelector{}
	}
	out.NamespaceSelector.MatchExpressions = append(out.NamespaceSelector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{ns}})
	return out, nil
}

func kyvernoMeta(name string, r Rule) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{ManagedLabel: "true"},
		Annotations: map[string]string{SourceAnnotation: r.Kind + " " + r.Key()},
	}
}

// kyvernoCELExact refuses what the API server's CEL reads otherwise than
// Kyverno's: the exceptions variable (the API server has none), and
// x.orValue(y) where x may not be optional (Kyverno's CEL gives x back;
// the API server's fails). Kyverno's own libraries need no check here: the
// API server's environment does not declare them, so a policy using them
// does not load.
func kyvernoCELExact(exprs []string, variables []admissionregistrationv1.Variable) error {
	env, err := cel.NewEnv(cel.OptionalTypes(),
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType), cel.Variable("request", cel.DynType),
		cel.Variable("params", cel.DynType), cel.Variable("namespaceObject", cel.DynType), cel.Variable("authorizer", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		return err
	}
	// A variable's type is its expression's: an optional one stays
	// optional when read.
	optionalVars := map[string]bool{}
	for _, v := range variables {
		if a, iss := env.Compile(v.Expression); iss.Err() == nil && a.OutputType().Kind() == types.OpaqueKind && a.OutputType().TypeName() == "optional_type" {
			optionalVars[v.Name] = true
		}
	}
	for _, e := range exprs {
		if e == "" {
			continue
		}
		if strings.Contains(e, "exceptions.") {
			return untranslatable("it reads exceptions.allowedImages or allowedValues (Kyverno's PolicyExceptions)")
		}
		a, iss := env.Compile(e)
		if iss.Err() != nil {
			if strings.Contains(e, "orValue(") {
				// An apply configuration's Object{...}: its types are the
				// API server's, not this check's.
				return untranslatable("orValue in an expression this check cannot type (Kyverno's CEL gives a value that is not optional back, the API server's fails)")
			}
			continue // the API server's own check says why
		}
		if bad := nonOptionalOrValue(a, optionalVars); bad != "" {
			return untranslatable("%s: orValue on a value that may not be optional (Kyverno's CEL gives the value back, the API server's fails)", bad)
		}
	}
	return nil
}

// vpolExprs are a ValidatingPolicy's expressions.
func vpolExprs(s *kpoliciesv1.ValidatingPolicySpec) []string {
	exprs := conditionExprs(s.MatchConditions, s.Variables)
	for _, v := range s.Validations {
		exprs = append(exprs, v.Expression, v.MessageExpression)
	}
	for _, a := range s.AuditAnnotations {
		exprs = append(exprs, a.ValueExpression)
	}
	return exprs
}

// conditionExprs are the expressions of match conditions and variables.
func conditionExprs(mcs []admissionregistrationv1.MatchCondition, vars []admissionregistrationv1.Variable) []string {
	var exprs []string
	for _, mc := range mcs {
		exprs = append(exprs, mc.Expression)
	}
	for _, v := range vars {
		exprs = append(exprs, v.Expression)
	}
	return exprs
}

// mpolPolicies are a MutatingPolicy's admission policies and bindings.
func mpolPolicies(r Rule) ([]any, error) {
	b, err := json.Marshal(r.Object)
	if err != nil {
		return nil, err
	}
	var mp kpoliciesv1.MutatingPolicy
	if err := json.Unmarshal(b, &mp); err != nil {
		return nil, err
	}
	spec := &mp.Spec
	if ev := spec.Evaluation; ev != nil {
		if ev.Admission != nil && ev.Admission.Enabled != nil && !*ev.Admission.Enabled {
			return nil, untranslatable("the policy is off at admission (evaluation.admission.enabled: false)")
		}
		if ev.MutateExisting != nil && ev.MutateExisting.Enabled != nil && *ev.MutateExisting.Enabled {
			return nil, untranslatable("it mutates existing objects too (evaluation.mutateExisting), which an admission policy does not")
		}
		if ev.Mode != "" && ev.Mode != "Kubernetes" {
			return nil, untranslatable("evaluation.mode %s", ev.Mode)
		}
	}
	if len(spec.AuditAnnotations) > 0 {
		return nil, untranslatable("a MutatingAdmissionPolicy has no audit annotations")
	}
	out := []any{}
	add := func(name string, s *kpoliciesv1.MutatingPolicySpec) error {
		exprs := conditionExprs(s.MatchConditions, s.Variables)
		for _, m := range s.Mutations {
			if m.ApplyConfiguration != nil {
				exprs = append(exprs, m.ApplyConfiguration.Expression)
			}
			if m.JSONPatch != nil {
				exprs = append(exprs, m.JSONPatch.Expression)
			}
		}
		if err := kyvernoCELExact(exprs, s.Variables); err != nil {
			return err
		}
		reinvocation := s.ReinvocationPolicy
		if reinvocation == "" {
			reinvocation = admissionregistrationv1.NeverReinvocationPolicy
		}
		mc, err := kyvernoScope(r, s.MatchConstraints)
		if err != nil {
			return err
		}
		p := &admissionregistrationv1.MutatingAdmissionPolicy{
			TypeMeta:   typeMeta("MutatingAdmissionPolicy"),
			ObjectMeta: kyvernoMeta(name, r),
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConstraints:   mc,
				MatchConditions:    s.MatchConditions,
				Variables:          s.Variables,
				Mutations:          s.Mutations,
				FailurePolicy:      s.FailurePolicy,
				ReinvocationPolicy: reinvocation,
			},
		}
		binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   typeMeta("MutatingAdmissionPolicyBinding"),
			ObjectMeta: kyvernoMeta(name, r),
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
		}
		out = append(out, p, binding)
		return nil
	}
	if err := withAutogen(kyvernoName("mpol", r), spec, kyvernoautogen.MPol(spec), add); err != nil {
		return nil, err
	}
	return out, nil
}

// withAutogen adds a policy's admission policy (name) through add, then
// its autogen policies' (name-autogen for the controllers with a pod
// template, name-autogen-cronjobs).
func withAutogen[S any](name string, spec S, gens []kyvernoautogen.Generated[S], add func(string, S) error) error {
	if err := add(name, spec); err != nil {
		return err
	}
	for _, g := range gens {
		suffix := "-autogen"
		if g.Name == "cronjobs" {
			suffix = "-autogen-cronjobs"
		}
		if err := add(name+suffix, g.Spec); err != nil {
			return fmt.Errorf("%w (its autogen policy for %s)", err, g.Name)
		}
	}
	return nil
}

// nonOptionalOrValue is the source of the first x.orValue(y) whose x the
// checker does not type as optional (nor a variable whose expression is),
// else "".
func nonOptionalOrValue(a *cel.Ast, optionalVars map[string]bool) string {
	checked := a.NativeRep()
	var found string
	ast.PostOrderVisit(checked.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if found != "" || e.Kind() != ast.CallKind || e.AsCall().FunctionName() != "orValue" || !e.AsCall().IsMemberFunction() {
			return
		}
		target := e.AsCall().Target()
		t := checked.GetType(target.ID())
		if t != nil && t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" {
			return
		}
		if target.Kind() == ast.SelectKind && !target.AsSelect().IsTestOnly() {
			if op := target.AsSelect().Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == "variables" && optionalVars[target.AsSelect().FieldName()] {
				return
			}
		}
		found = "an orValue call"
		if src, ok := a.Source().Snippet(checked.SourceInfo().GetStartLocation(e.ID()).Line()); ok {
			found = strings.TrimSpace(src)
		}
	}))
	return found
}

// KyvernoKinds are Kyverno's CEL policy kinds Kyverno translates.
func KyvernoKinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, k := range []string{kpoliciesv1.KindValidatingPolicy, kpoliciesv1.KindNamespacedValidatingPolicy, kpoliciesv1.KindMutatingPolicy, kpoliciesv1.KindNamespacedMutatingPolicy} {
		out = append(out, schema.GroupVersionKind{Group: kpoliciesv1.Group, Version: kpoliciesv1.Version, Kind: k})
	}
	return out
}

// CompileAll compiles rules of every kind translated: Kyverno's CEL
// policies with Kyverno, the others with Compile.
func CompileAll(rules []Rule, o Options) Result {
	var own, kyverno []Rule
	for _, r := range rules {
		if slices.ContainsFunc(KyvernoKinds(), func(k schema.GroupVersionKind) bool { return k.Kind == r.Kind }) {
			kyverno = append(kyverno, r)
		} else {
			own = append(own, r)
		}
	}
	res, ky := Compile(own, o), Kyverno(kyverno)
	res.Translated = append(res.Translated, ky.Translated...)
	res.Skipped = append(res.Skipped, ky.Skipped...)
	return res
}

// RuleRef names a rule: its kind and key (namespace/name, or name).
type RuleRef struct{ Kind, Key string }

// celExceptionKind is the PolicyException of Kyverno's CEL policies.
var celExceptionKind = schema.GroupVersionKind{Group: kpoliciesv1.Group, Version: kpoliciesv1.Version, Kind: kpoliciesv1.KindPolicyException}

// ExceptionKinds are the kinds of the exceptions that may name rules of
// the kinds given (a policies.kyverno.io PolicyException, for Kyverno's
// CEL policies), whose rules the webhook keeps.
func ExceptionKinds(ruleKinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	if slices.ContainsFunc(ruleKinds, func(k schema.GroupVersionKind) bool { return k.Group == kpoliciesv1.Group }) {
		return []schema.GroupVersionKind{celExceptionKind}
	}
	return nil
}

// ExceptionRefs are the rules an exception of kind names, as the webhook
// honours it: a namespaced policy only from the exception's namespace.
func ExceptionRefs(kind schema.GroupVersionKind, exception map[string]any) []RuleRef {
	if kind != celExceptionKind {
		return nil
	}
	md, _ := exception["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	spec, _ := exception["spec"].(map[string]any)
	refs, _ := spec["policyRefs"].([]any)
	var out []RuleRef
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		k, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		if strings.HasPrefix(k, "Namespaced") {
			name = ns + "/" + name
		}
		out = append(out, RuleRef{Kind: k, Key: name})
	}
	return out
}
