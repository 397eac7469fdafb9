package admissionpolicy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// expressionChecker type-checks a policy's expressions as the API server
// does when the policy is created (the expressions as new ones: only what
// the compatibility version offers), collecting field errors.
type expressionChecker struct {
	c    *cel.CompositedCompiler
	errs field.ErrorList
}

// newPolicyChecker is a checker that has checked a policy's variables and
// match conditions, with the declarations and the path of its spec.
func newPolicyChecker(pk *admissionregistrationv1.ParamKind, vs []admissionregistrationv1.Variable, mcs []admissionregistrationv1.MatchCondition) (*expressionChecker, cel.OptionalVariableDeclarations, *field.Path, error) {
	vars := cel.OptionalVariableDeclarations{HasParams: pk != nil, HasAuthorizer: true}
	spec := field.NewPath("spec")
	k, err := newExpressionChecker()
	if err != nil {
		return nil, vars, spec, err
	}
	k.variables(spec.Child("variables"), vs, vars)
	k.matchConditions(spec.Child("matchConditions"), mcs, vars)
	return k, vars, spec, nil
}

func newExpressionChecker() (*expressionChecker, error) {
	c, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, err
	}
	return &expressionChecker{c: c}, nil
}

// add records a compilation error at path as the API server reports it.
func (k *expressionChecker) add(path *field.Path, expression string, err *apiservercel.Error) {
	if err == nil {
		return
	}
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		k.errs = append(k.errs, field.Required(path, err.Detail))
	case apiservercel.ErrorTypeInvalid:
		k.errs = append(k.errs, field.Invalid(path, expression, err.Detail))
	default:
		k.errs = append(k.errs, field.InternalError(path, errors.New(err.Detail)))
	}
}

func (k *expressionChecker) check(path *field.Path, a cel.ExpressionAccessor, vars cel.OptionalVariableDeclarations) {
	k.add(path, a.GetExpression(), k.c.CompileCELExpression(a, vars, environment.NewExpressions).Error)
}

func (k *expressionChecker) variables(path *field.Path, vs []admissionregistrationv1.Variable, vars cel.OptionalVariableDeclarations) {
	for i, v := range vs {
		r := k.c.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, vars, environment.NewExpressions)
		k.add(path.Index(i).Child("expression"), v.Expression, r.Error)
	}
}

// matchConditions checks match conditions as the API server does: without
// the policy's variables.
func (k *expressionChecker) matchConditions(path *field.Path, mcs []admissionregistrationv1.MatchCondition, vars cel.OptionalVariableDeclarations) {
	plain := cel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	for i := range mcs {
		a := (*matchconditions.MatchCondition)(&mcs[i])
		k.add(path.Index(i).Child("expression"), a.GetExpression(), plain.CompileCELExpression(a, vars, environment.NewExpressions).Error)
	}
}

// err is the policy's refusal, nil when every expression compiles.
func (k *expressionChecker) err(kind, name string) error {
	if len(k.errs) == 0 {
		return nil
	}
	return &InvalidError{Kind: kind, Name: name, Fields: k.errs}
}

// InvalidError is a policy the API server refuses to store, with a field
// error for each problem (errors.Is(err, ErrInvalid)).
type InvalidError struct {
	Kind, Name string
	Fields     field.ErrorList
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("%v: %s %q is invalid: %v", ErrInvalid, e.Kind, e.Name, e.Fields.ToAggregate())
}

func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// celPosition is where a CEL compilation message places its first error.
var celPosition = regexp.MustCompile(`ERROR: <input>:(\d+):(\d+):`)

// Column is the 1-based column of a field error's first CEL error in its
// expression (counting lines), 0 when it has none.
func Column(fe *field.Error) int {
	m := celPosition.FindStringSubmatch(fe.Detail)
	if m == nil {
		return 0
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	if line > 1 {
		if expr, ok := fe.BadValue.(string); ok {
			lines := strings.SplitN(expr, "\n", line)
			for _, l := range lines[:len(lines)-1] {
				col += len(l) + 1
			}
		}
	}
	return col
}

// checkValidating type-checks a ValidatingAdmissionPolicy's expressions:
// an invalid one is refused as the API server refuses to store it.
func checkValidating(p *admissionregistrationv1.ValidatingAdmissionPolicy) error {
	k, vars, spec, err := newPolicyChecker(p.Spec.ParamKind, p.Spec.Variables, p.Spec.MatchConditions)
	if err != nil {
		return err
	}
	for i, v := range p.Spec.Validations {
		path := spec.Child("validations").Index(i)
		k.check(path.Child("expression"), &validating.ValidationCondition{Expression: v.Expression}, vars)
		if v.MessageExpression != "" {
			k.check(path.Child("messageExpression"), &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, vars)
		}
		if r := v.Reason; r != nil {
			supported := []string{string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge)}
			if !slices.Contains(supported, string(*r)) {
				k.errs = append(k.errs, field.NotSupported(path.Child("reason"), *r, supported))
			}
		}
	}
	for i, a := range p.Spec.AuditAnnotations {
		k.check(spec.Child("auditAnnotations").Index(i).Child("valueExpression"), &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, vars)
	}
	return k.err("ValidatingAdmissionPolicy", p.Name)
}

// checkMutating type-checks a MutatingAdmissionPolicy's expressions.
func checkMutating(p *admissionregistrationv1.MutatingAdmissionPolicy) error {
	k, vars, spec, err := newPolicyChecker(p.Spec.ParamKind, p.Spec.Variables, p.Spec.MatchConditions)
	if err != nil {
		return err
	}
	patchVars := vars
	patchVars.HasPatchTypes = true
	for i, m := range p.Spec.Mutations {
		path := spec.Child("mutations").Index(i)
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			k.check(path.Child("jsonPatch", "expression"), &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchVars)
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			k.check(path.Child("applyConfiguration", "expression"), &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchVars)
		default:
			k.errs = append(k.errs, field.Required(path, fmt.Sprintf("a patchType (JSONPatch or ApplyConfiguration) with its expression, not %q", m.PatchType)))
		}
	}
	return k.err("MutatingAdmissionPolicy", p.Name)
}
