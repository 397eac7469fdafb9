package tonative

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/internal/nativepolicy"
)

// ErrUntranslatable: a rule CEL cannot express exactly (Skip.Reason says
// why).
var ErrUntranslatable = errors.New("not translatable to an admission policy")

// Labels and annotations of the policies and bindings made.
const (
	// SourceAnnotation names the rule a policy was compiled from: "Kind
	// namespace/name".
	SourceAnnotation = "modwright.io/compiled-from"
	// ManagedLabel marks what the compiler made (the operator prunes by it).
	ManagedLabel = "modwright.io/compiled"
)

// Rule is a rule to translate: its kind, where it came from and its
// manifest.
type Rule struct {
	Kind   string // ModRule, Policy or ClusterPolicy
	Origin string // file, document
	Object map[string]any
}

// Key is namespace/name, or name.
func (r Rule) Key() string {
	md, _ := r.Object["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

// Translation is a translated rule: the policies and bindings, in order.
type Translation struct {
	Rule    Rule
	Objects []map[string]any
}

// Skip is a rule left to the webhook, with the reason.
type Skip struct {
	Rule   Rule
	Reason string
}

// Result is what Compile made of a set of rules.
type Result struct {
	Translated []Translation
	Skipped    []Skip
}

// Options are the compiler's settings.
type Options struct {
	// ClusterRulesNamespace is the namespace whose ModRules are
	// cluster-wide (the engine's --cluster-rules-namespace).
	ClusterRulesNamespace string
}

// Compile translates every rule it can; the others are skipped with the
// reason. Every translation is loaded as the API server would load it
// (nativepolicy): one it would refuse is skipped too.
func Compile(rules []Rule, o Options) Result {
	var res Result
	for _, r := range rules {
		var objs []any
		var err error
		switch r.Kind {
		case "ModRule":
			objs, err = modRule(r, o)
		case "Policy", "ClusterPolicy":
			objs, err = policy(r)
		default:
			err = fmt.Errorf("%w: a %s", ErrUntranslatable, r.Kind)
		}
		var out []map[string]any
		if err == nil {
			out, err = toMaps(objs)
		}
		if err == nil {
			set := nativepolicy.NewSet()
			for _, m := range out {
				if err = set.Add(m); err != nil {
					err = fmt.Errorf("%w: the API server would refuse the translation: %v", ErrUntranslatable, err)
					break
				}
			}
		}
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{Rule: r, Reason: strings.TrimPrefix(err.Error(), ErrUntranslatable.Error()+": ")})
			continue
		}
		res.Translated = append(res.Translated, Translation{Rule: r, Objects: out})
	}
	return ordered(rules, res, o)
}

// untranslatable is ErrUntranslatable with the reason.
func untranslatable(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUntranslatable}, args...)...)
}

func toMaps(objs []any) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		md, _ := m["metadata"].(map[string]any)
		delete(md, "creationTimestamp")
		delete(m, "status")
		out = append(out, m)
	}
	return out, nil
}

// policyName is the name of what rule r compiles to: modwright.<kind>.<namespace>.<name>
// (lower case; names of rules are DNS subdomains already).
func policyName(r Rule) string {
	return "modwright." + strings.ToLower(r.Kind) + "." + strings.ReplaceAll(r.Key(), "/", ".")
}

func objectMeta(r Rule) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        policyName(r),
		Labels:      map[string]string{ManagedLabel: "true"},
		Annotations: map[string]string{SourceAnnotation: r.Kind + " " + r.Key()},
	}
}

var typeMeta = func(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: kind}
}

// match is a translated rule's scope: what the policy's matchConstraints
// and matchConditions say.
type match struct {
	constraints admissionregistrationv1.MatchResources
	conditions  []admissionregistrationv1.MatchCondition
}

// validating is a ValidatingAdmissionPolicy and its binding.
func validating(r Rule, m match, fail admissionregistrationv1.FailurePolicyType, vars []admissionregistrationv1.Variable,
	vs []admissionregistrationv1.Validation, audits []admissionregistrationv1.AuditAnnotation, actions []admissionregistrationv1.ValidationAction) []any {
	meta := objectMeta(r)
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{TypeMeta: typeMeta("ValidatingAdmissionPolicy"), ObjectMeta: meta,
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail, MatchConstraints: &m.constraints, MatchConditions: m.conditions,
			Variables: vars, Validations: vs, AuditAnnotations: audits,
		}}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{TypeMeta: typeMeta("ValidatingAdmissionPolicyBinding"), ObjectMeta: meta,
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: meta.Name, ValidationActions: actions}}
	return []any{p, b}
}

// mutating is a MutatingAdmissionPolicy and its binding.
func mutating(r Rule, m match, fail admissionregistrationv1.FailurePolicyType, vars []admissionregistrationv1.Variable,
	ms []admissionregistrationv1.Mutation) []any {
	meta := objectMeta(r)
	p := &admissionregistrationv1.MutatingAdmissionPolicy{TypeMeta: typeMeta("MutatingAdmissionPolicy"), ObjectMeta: meta,
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy: &fail, MatchConstraints: &m.constraints, MatchConditions: m.conditions,
			Variables: vars, Mutations: ms, ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		}}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{TypeMeta: typeMeta("MutatingAdmissionPolicyBinding"), ObjectMeta: meta,
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: meta.Name}}
	return []any{p, b}
}
