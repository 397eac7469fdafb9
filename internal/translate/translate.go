package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/rules"
)

// Kinds are the rule kinds Compile translates (the rest it skips).
func Kinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{
		{Group: v1beta1.Group, Version: v1beta1.GroupVersion.Version, Kind: "ModRule"},
		{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: v1alpha1.KindModwrightPolicy},
		{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: v1alpha1.KindClusterModwrightPolicy},
		{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: v1alpha1.KindPolicy},
		{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: v1alpha1.KindClusterPolicy},
	}
}

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
	Kind   string // ModRule, ModwrightPolicy or ClusterModwrightPolicy (or a former name)
	Origin string // file:line of the document
	Object map[string]any
}

// namespace is the rule's namespace, "" for none.
func (r Rule) namespace() string {
	md, _ := r.Object["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	return ns
}

// Key is namespace/name, or name.
func (r Rule) Key() string {
	md, _ := r.Object["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return rules.Key(ns, name)
}

// Translation is what some rules translate into: the policies and
// bindings, in order (one rule's, or the ModRules' of one scope and type).
type Translation struct {
	Rules   []Rule
	Objects []map[string]any
}

// Skip is a rule left to the webhook, with the reason.
type Skip struct {
	Rule   Rule
	Reason string
	// Kept: the rule translates, but Place kept it in the webhook, where
	// it runs faster.
	Kept bool
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
// reason. The ModRules of one scope and type make one policy. Every
// translation is loaded as the API server would load it (admissionpolicy):
// one it would refuse is skipped too.
func Compile(rules []Rule, o Options) Result {
	// A policy written under its kind's former name is its kind: one name
	// for the policies made and the rules they name.
	rules = slices.Clone(rules)
	for i := range rules {
		rules[i].Kind = v1alpha1.CurrentKind(rules[i].Kind)
	}
	var res Result
	var cands []candidate
	for _, r := range rules {
		c := candidate{rule: r}
		var err error
		switch policyKind, _ := v1alpha1.PolicyKind(r.Kind); {
		case r.Kind == "ModRule":
			c.part, err = modRule(r, o)
		case policyKind:
			c.objs, err = policy(r)
		default:
			err = fmt.Errorf("%w: a %s", ErrUntranslatable, r.Kind)
		}
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{Rule: r, Reason: reason(err)})
			continue
		}
		cands = append(cands, c)
	}
	cands, res.Skipped = ordered(rules, cands, res.Skipped, o)
	var parts []*modRulePart
	type unit struct {
		rules []Rule
		objs  []any
	}
	var units []unit
	for _, c := range cands {
		if c.part != nil {
			parts = append(parts, c.part)
			continue
		}
		units = append(units, unit{rules: []Rule{c.rule}, objs: c.objs})
	}
	for _, g := range modRuleGroups(parts) {
		units = append(units, unit{rules: g.rules, objs: g.objects})
	}
	for _, u := range units {
		out, err := toMaps(u.objs)
		if err == nil {
			set := admissionpolicy.NewSet()
			for _, m := range out {
				if err = set.Add(m); err != nil {
					err = fmt.Errorf("%w: the API server would refuse the translation: %v", ErrUntranslatable, err)
					break
				}
			}
		}
		if err != nil {
			for _, r := range u.rules {
				res.Skipped = append(res.Skipped, Skip{Rule: r, Reason: reason(err)})
			}
			continue
		}
		res.Translated = append(res.Translated, Translation{Rules: u.rules, Objects: out})
	}
	return res
}

// candidate is a rule that translates, before the order check.
type candidate struct {
	rule Rule
	objs []any        // a Policy's policies and bindings
	part *modRulePart // a ModRule's part of its group's policy
}

func reason(err error) string {
	return strings.TrimPrefix(err.Error(), ErrUntranslatable.Error()+": ")
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
	return validatingNamed(objectMeta(r), m, fail, vars, vs, audits, actions)
}

func validatingNamed(meta metav1.ObjectMeta, m match, fail admissionregistrationv1.FailurePolicyType, vars []admissionregistrationv1.Variable,
	vs []admissionregistrationv1.Validation, audits []admissionregistrationv1.AuditAnnotation, actions []admissionregistrationv1.ValidationAction) []any {
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
	return mutatingNamed(objectMeta(r), m, fail, vars, ms)
}

func mutatingNamed(meta metav1.ObjectMeta, m match, fail admissionregistrationv1.FailurePolicyType, vars []admissionregistrationv1.Variable,
	ms []admissionregistrationv1.Mutation) []any {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{TypeMeta: typeMeta("MutatingAdmissionPolicy"), ObjectMeta: meta,
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy: &fail, MatchConstraints: &m.constraints, MatchConditions: m.conditions,
			Variables: vars, Mutations: ms, ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		}}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{TypeMeta: typeMeta("MutatingAdmissionPolicyBinding"), ObjectMeta: meta,
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: meta.Name}}
	return []any{p, b}
}
