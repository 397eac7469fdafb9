package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/admissionpolicy"
)

// Gatekeeper's ValidatingAdmissionPolicy generation, as Gatekeeper does it
// without a webhook configuration to copy its scope from: a policy per
// template with K8sNativeValidation code (named gatekeeper-<template>,
// params the constraint itself, Gatekeeper's match conditions reading the
// constraint's spec.match), and a binding per constraint of such a
// template (named gatekeeper-<kind>-<name>).

// The match conditions Gatekeeper adds, reading params.spec.match (each
// unset level matches).
var gatekeeperMatchConditions = []admissionregistrationv1.MatchCondition{
	{Name: "gatekeeper_internal_match_excluded_namespaces", Expression: gkGuard("excludedNamespaces",
		`[object, oldObject].exists(obj, obj != null && (!has(obj.metadata.namespace) || obj.metadata.namespace == "" ? true : !params.spec.match.excludedNamespaces.exists(nsMatcher, (string(obj.metadata.namespace).matches("^" + string(nsMatcher).replace("*", ".*") + "$")))))`)},
	{Name: "gatekeeper_internal_match_namespaces", Expression: gkGuard("namespaces",
		`[object, oldObject].exists(obj, obj != null && (!has(obj.metadata.namespace) || obj.metadata.namespace == "" ? true : params.spec.match.namespaces.exists(nsMatcher, (string(obj.metadata.namespace).matches("^" + string(nsMatcher).replace("*", ".*") + "$")))))`)},
	{Name: "gatekeeper_internal_match_name", Expression: gkGuard("name",
		`[object, oldObject].exists(obj, obj != null && ((has(obj.metadata.generateName) && obj.metadata.generateName != "" && params.spec.match.name.endsWith("*") && string(obj.metadata.generateName).matches("^" + string(params.spec.match.name).replace("*", ".*") + "$")) || (has(obj.metadata.name) && string(obj.metadata.name).matches("^" + string(params.spec.match.name).replace("*", ".*") + "$"))))`)},
	{Name: "gatekeeper_internal_match_kinds", Expression: gkGuard("kinds",
		`params.spec.match.kinds.exists(groupskinds, (!has(groupskinds.kinds) || size(groupskinds.kinds) == 0 || "*" in groupskinds.kinds || request.kind.kind in groupskinds.kinds) && (!has(groupskinds.apiGroups) || size(groupskinds.apiGroups) == 0 || "*" in groupskinds.apiGroups || request.kind.group in groupskinds.apiGroups))`)},
}

func gkGuard(field, expr string) string {
	return "!has(params.spec) ? true : (!has(params.spec.match) ? true : (!has(params.spec.match." + field + ") ? true : (" + expr + ")))"
}

// The variables Gatekeeper puts before the template's.
var gatekeeperVariables = []admissionregistrationv1.Variable{
	{Name: "anyObject", Expression: `has(request.operation) && request.operation == "DELETE" && object == null ? oldObject : object`},
	{Name: "params", Expression: `!has(params.spec) ? null : !has(params.spec.parameters) ? null: params.spec.parameters`},
}

// Gatekeeper translates Gatekeeper's ConstraintTemplates (templates) and
// constraints: a template with K8sNativeValidation code (unless its
// generateVAP is false) gives a policy, each constraint of its kind a
// binding; the others are skipped with the reason. Each policy and its
// bindings are loaded as the API server would load them.
func Gatekeeper(templates, constraints []Rule) Result {
	var res Result
	policies := map[string]map[string]any{} // by constraint kind
	for _, t := range templates {
		kind, vap, err := templatePolicy(t)
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{Rule: t, Reason: reason(err)})
			continue
		}
		objs, err := toMaps([]any{vap})
		if err == nil {
			err = admissionpolicy.NewSet().Add(objs[0])
		}
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{Rule: t, Reason: reason(untranslatable("the API server would refuse the policy: %v", err))})
			continue
		}
		policies[kind] = objs[0]
		res.Translated = append(res.Translated, Translation{Rules: []Rule{t}, Objects: objs})
	}
	for _, c := range constraints {
		if policies[c.Kind] == nil {
			res.Skipped = append(res.Skipped, Skip{Rule: c, Reason: "its ConstraintTemplate gives no admission policy (no K8sNativeValidation code, generateVAP false, or not given)"})
			continue
		}
		b, err := constraintBinding(c)
		var objs []map[string]any
		if err == nil {
			objs, err = toMaps([]any{b})
		}
		if err == nil {
			set := admissionpolicy.NewSet()
			if err = set.Add(policies[c.Kind]); err == nil {
				err = set.Add(objs[0])
			}
			if err != nil {
				err = untranslatable("the API server would refuse the binding: %v", err)
			}
		}
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{Rule: c, Reason: reason(err)})
			continue
		}
		res.Translated = append(res.Translated, Translation{Rules: []Rule{c}, Objects: objs})
	}
	return res
}

// templatePolicy is a template's policy and its constraint kind.
func templatePolicy(t Rule) (string, *admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	b, err := json.Marshal(t.Object)
	if err != nil {
		return "", nil, err
	}
	var ct gkv1.ConstraintTemplate
	if err := json.Unmarshal(b, &ct); err != nil {
		return "", nil, err
	}
	kind := ct.Spec.CRD.Spec.Names.Kind
	if len(ct.Spec.Targets) != 1 {
		return kind, nil, untranslatable("a template has one target")
	}
	var raw json.RawMessage
	for _, c := range ct.Spec.Targets[0].Code {
		if c.Engine == gkv1.EngineCEL {
			raw = c.Source
			break
		}
	}
	if raw == nil {
		return kind, nil, untranslatable("the template has no K8sNativeValidation code (Rego has no admission policy equivalent)")
	}
	var src gkv1.CELSource
	if err := json.Unmarshal(raw, &src); err != nil {
		return kind, nil, untranslatable("its K8sNativeValidation source: %v", err)
	}
	if src.GenerateVAP != nil && !*src.GenerateVAP {
		return kind, nil, untranslatable("its K8sNativeValidation source says generateVAP: false")
	}
	fail := admissionregistrationv1.Fail
	if fp := src.FailurePolicy; fp != nil {
		switch *fp {
		case "Fail":
		case "Ignore":
			fail = admissionregistrationv1.Ignore
		default:
			return kind, nil, untranslatable("failurePolicy %q", *fp)
		}
	}
	spec := admissionregistrationv1.ValidatingAdmissionPolicySpec{
		ParamKind: &admissionregistrationv1.ParamKind{APIVersion: gkv1.ConstraintsGroup + "/" + gkv1.ConstraintVersion, Kind: kind},
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}},
			}}}},
		FailurePolicy: &fail,
		Validations:   []admissionregistrationv1.Validation{},
	}
	for _, mc := range src.MatchCondition {
		if strings.HasPrefix(mc.Name, "gatekeeper_internal_") {
			return kind, nil, untranslatable("match condition %s: names beginning gatekeeper_internal_ are Gatekeeper's", mc.Name)
		}
		spec.MatchConditions = append(spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: mc.Name, Expression: mc.Expression})
	}
	spec.MatchConditions = append(spec.MatchConditions, gatekeeperMatchConditions...)
	spec.Variables = append(spec.Variables, gatekeeperVariables...)
	for _, v := range src.Variables {
		if v.Name == "params" || v.Name == "anyObject" || strings.HasPrefix(v.Name, "gatekeeper_internal_") {
			return kind, nil, untranslatable("variable %s: the name is Gatekeeper's", v.Name)
		}
		spec.Variables = append(spec.Variables, admissionregistrationv1.Variable{Name: v.Name, Expression: v.Expression})
	}
	for _, v := range src.Validations {
		spec.Validations = append(spec.Validations, admissionregistrationv1.Validation{Expression: v.Expression, Message: v.Message, MessageExpression: v.MessageExpression})
	}
	return kind, &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta("ValidatingAdmissionPolicy"),
		ObjectMeta: gatekeeperMeta("gatekeeper-"+ct.Name, t),
		Spec:       spec,
	}, nil
}

// constraintBinding is a constraint's binding.
func constraintBinding(c Rule) (*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	b, err := json.Marshal(c.Object)
	if err != nil {
		return nil, err
	}
	var con gkv1.Constraint
	if err := json.Unmarshal(b, &con); err != nil {
		return nil, err
	}
	actions, err := vapActions(&con.Spec)
	if err != nil {
		return nil, err
	}
	allow := admissionregistrationv1.AllowAction
	spec := admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
		PolicyName:        "gatekeeper-" + strings.ToLower(c.Kind),
		ParamRef:          &admissionregistrationv1.ParamRef{Name: con.Name, ParameterNotFoundAction: &allow},
		ValidationActions: actions,
		MatchResources:    &admissionregistrationv1.MatchResources{},
	}
	if ls := con.Spec.Match.LabelSelector; ls != nil {
		spec.MatchResources.ObjectSelector = ls
	}
	if ns := con.Spec.Match.NamespaceSelector; ns != nil {
		spec.MatchResources.NamespaceSelector = ns
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   typeMeta("ValidatingAdmissionPolicyBinding"),
		ObjectMeta: gatekeeperMeta(bindingName(c.Kind, con.Name), c),
		Spec:       spec,
	}, nil
}

// vapActions maps a constraint's enforcement actions at the vap.k8s.io
// enforcement point to validationActions.
func vapActions(s *gkv1.ConstraintSpec) ([]admissionregistrationv1.ValidationAction, error) {
	var names []string
	switch s.EnforcementAction {
	case "", gkv1.EnforcementDeny:
		names = []string{gkv1.EnforcementDeny}
	case gkv1.EnforcementScoped:
		for _, sa := range s.ScopedEnforcementActions {
			for _, p := range sa.EnforcementPoints {
				if p.Name == "vap.k8s.io" || p.Name == "*" {
					names = append(names, sa.Action)
					break
				}
			}
		}
		if len(names) == 0 {
			return nil, untranslatable("its scopedEnforcementActions name no vap.k8s.io enforcement point")
		}
	default:
		names = []string{s.EnforcementAction}
	}
	var out []admissionregistrationv1.ValidationAction
	for _, n := range names {
		switch n {
		case gkv1.EnforcementDeny:
			out = append(out, admissionregistrationv1.Deny)
		case gkv1.EnforcementWarn:
			out = append(out, admissionregistrationv1.Warn)
		case gkv1.EnforcementDryrun:
			out = append(out, admissionregistrationv1.Audit)
		default:
			return nil, untranslatable("enforcement action %q (deny, warn or dryrun)", n)
		}
	}
	return out, nil
}

// bindingName is gatekeeper-<kind>-<name>, cut to a DNS subdomain's 253
// bytes with a hash of the whole when longer.
func bindingName(kind, name string) string {
	return subdomainName("gatekeeper-" + strings.ToLower(kind) + "-" + name)
}

// subdomainName is n cut to a DNS subdomain's 253 bytes with a hash of
// the whole when longer.
func subdomainName(n string) string { return cutName(n, 253) }

// cutName is n cut to most bytes with a hash of the whole when longer.
func cutName(n string, most int) string {
	if len(n) <= most {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return strings.TrimRight(n[:most-9], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
}

func gatekeeperMeta(name string, r Rule) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{ManagedLabel: "true"},
		Annotations: map[string]string{SourceAnnotation: r.Kind + " " + r.Key()},
	}
}
