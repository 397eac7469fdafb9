package admissionpolicy

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/applyconfigurations"

	celmutation "github.com/modwright/modwright/internal/lang/cel"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

type mutatingPolicy struct {
	p         *admissionregistrationv1.MutatingAdmissionPolicy
	evaluator mutating.PolicyEvaluator
}

// compileMutating compiles a policy as the API server's mutating
// admission policy plugin does: variables, match conditions, then each
// mutation (JSONPatch or ApplyConfiguration) with the patch types.
func compileMutating(p *admissionregistrationv1.MutatingAdmissionPolicy) mutating.PolicyEvaluator {
	vars := cel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	c, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return mutating.PolicyEvaluator{Error: fmt.Errorf("failed to initialize CEL compiler: %w", err)}
	}
	matcher := compileShared(c, vars, p.Spec.Variables, p.Spec.MatchConditions, p.Spec.FailurePolicy, p.Name)
	patchVars := vars
	patchVars.HasPatchTypes = true
	var patchers []patch.Patcher
	for _, m := range p.Spec.Mutations {
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			patchers = append(patchers, patch.NewJSONPatcher(c.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchVars, environment.StoredExpressions)))
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			patchers = append(patchers, patch.NewApplyConfigurationPatcher(c.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchVars, environment.StoredExpressions)))
		}
	}
	return mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: c}
}

// defaultMutating sets the defaults the API server sets when a mutating
// policy is stored (failurePolicy Fail, the match constraints') and refuses
// what it refuses for want of a default: a policy without
// reinvocationPolicy.
func defaultMutating(p *admissionregistrationv1.MutatingAdmissionPolicy) error {
	if p.Spec.FailurePolicy == nil {
		fail := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &fail
	}
	switch p.Spec.ReinvocationPolicy {
	case admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy:
	case "":
		return fmt.Errorf("%w: MutatingAdmissionPolicy %q: spec.reinvocationPolicy: Required value", ErrInvalid, p.Name)
	default:
		return fmt.Errorf("%w: MutatingAdmissionPolicy %q: spec.reinvocationPolicy: Unsupported value: %q: supported values: \"IfNeeded\", \"Never\"", ErrInvalid, p.Name, p.Spec.ReinvocationPolicy)
	}
	if p.Spec.MatchConstraints != nil {
		defaultMatch(p.Spec.MatchConstraints)
	}
	return nil
}

// typeConverters are the structured-merge type converters of
// ApplyConfiguration mutations: the built-in types' (client-go's
// schemas), and for other kinds one deduced from the object.
type typeConverters struct{ builtin managedfields.TypeConverter }

var _ patch.TypeConverterManager = typeConverters{}

func (t typeConverters) GetTypeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if clientgoscheme.Scheme.Recognizes(gvk) {
		return t.builtin
	}
	return managedfields.NewDeducedTypeConverter()
}

func (typeConverters) Run(context.Context) {}

// Validates reports whether the set has ValidatingAdmissionPolicies.
func (s *Set) Validates() bool { return s != nil && len(s.policies) > 0 }

// Mutates reports whether the set has MutatingAdmissionPolicies.
func (s *Set) Mutates() bool { return s != nil && len(s.mutating) > 0 }

// Mutate runs the MutatingAdmissionPolicies of the set on a request, as
// the API server's mutating admission does: the policies, then between
// (the rest of the mutating chain: our rules), then, when an object
// changed, the policies whose reinvocationPolicy is IfNeeded again. It
// returns the object as mutated, or the refusal. between may be nil.
func (s *Set) Mutate(ctx context.Context, r Request, between func(obj map[string]any) (map[string]any, error)) (map[string]any, error) {
	if len(s.mutating) == 0 {
		if between == nil {
			return r.Object, nil
		}
		return between(r.Object)
	}
	orig := r.Object
	r, err := r.normalized() // a copy: r.Object is not changed
	if err != nil {
		return nil, err
	}
	// A built-in kind is mutated in its Go form, as the API server holds
	// it; what the policies do not change keeps the object's own form
	// (its nulls included).
	form, err := goForm(r.Object)
	if err != nil {
		return nil, err
	}
	r.Object = runtime.DeepCopyJSON(form)
	if r.OldObject, err = goForm(r.OldObject); err != nil {
		return nil, err
	}
	env := s.prepare(r)
	obj := &unstructured.Unstructured{Object: r.Object}
	attrs := env.attributes(r, obj)
	hooks := s.mutatingHooks(r)
	d := mutating.NewDispatcher(env.authz, env.matcher, typeConverters{builtin: applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)})
	o := admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme)
	if err := d.Dispatch(ctx, attrs, o, hooks); err != nil {
		return nil, err
	}
	if between != nil {
		before := runtime.DeepCopyJSON(obj.Object)
		out, err := between(runtime.DeepCopyJSON(obj.Object))
		if err != nil || out == nil {
			return out, err
		}
		obj.Object = out
		if !equality.Semantic.DeepEqual(before, out) {
			attrs.GetReinvocationContext().SetShouldReinvoke()
		}
	}
	if rc := attrs.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		if err := d.Dispatch(ctx, attrs, o, hooks); err != nil {
			return nil, err
		}
	}
	return celmutation.Restore(obj.Object, form, orig), nil
}

func (s *Set) mutatingHooks(r Request) []mutating.PolicyHook {
	return policyHooks(s.mutating, func(p *mutatingPolicy) (*admissionregistrationv1.MutatingAdmissionPolicy, mutating.PolicyEvaluator, *admissionregistrationv1.ParamKind) {
		return p.p, p.evaluator, p.p.Spec.ParamKind
	}, s.mutatingBindings, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) string { return b.Spec.PolicyName }, r.params)
}
