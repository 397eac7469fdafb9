package translate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes/scheme"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/modwright/modwright/api/v1alpha1"
)

// The object a rule's scope looks at: the old object on DELETE.
const scopeObject = "(request.operation == 'DELETE' ? oldObject : object)"

// policy translates a ModwrightPolicy or ClusterModwrightPolicy whose expressions are all CEL
// (and which reads no context): its scope becomes one match condition
// (kinds, groups, names, namespaces, selectors, exclusions, exactly as the
// policy decides them), its variables, match conditions, validations,
// audit annotations and CEL mutations carry over as they are.
func policy(r Rule) ([]any, error) {
	b, err := json.Marshal(r.Object)
	if err != nil {
		return nil, err
	}
	var p v1alpha1.ModwrightPolicy // every policy kind has the same spec
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	s := &p.Spec
	if len(s.Context) > 0 {
		return nil, untranslatable("spec.context: context entries (ConfigMaps, API calls, the graph) have no admission policy equivalent")
	}
	m, err := policyMatch(r.Kind, p.Namespace, s.Match)
	if err != nil {
		return nil, err
	}
	for i, mc := range s.MatchConditions {
		if mc.CEL == "" {
			return nil, untranslatable("spec.matchConditions[%d] is not CEL", i)
		}
		if strings.Contains(mc.CEL, "variables") {
			return nil, untranslatable("spec.matchConditions[%d] reads variables: an admission policy's match conditions do not see them", i)
		}
		m.conditions = append(m.conditions, admissionregistrationv1.MatchCondition{Name: mc.Name, Expression: mc.CEL})
	}
	var vars []admissionregistrationv1.Variable
	for i, v := range s.Variables {
		if v.CEL == "" {
			return nil, untranslatable("spec.variables[%d] (%s) is not CEL", i, v.Name)
		}
		vars = append(vars, admissionregistrationv1.Variable{Name: v.Name, Expression: v.CEL})
	}
	fail := admissionregistrationv1.Fail
	if s.FailurePolicy == v1alpha1.FailurePolicy("Ignore") {
		// A Policy that fails is skipped as a whole (its mutations are
		// atomic, an error skips its later validations); an admission
		// policy skips only the expression that failed.
		if len(s.Validations)+len(s.Mutations) > 1 {
			return nil, untranslatable("failurePolicy Ignore with several validations or mutations: a ModwrightPolicy that fails is skipped as a whole, an admission policy skips only the failed expression")
		}
		fail = admissionregistrationv1.Ignore
	}
	var out []any
	if len(s.Mutations) > 0 {
		var ms []admissionregistrationv1.Mutation
		for i, mu := range s.Mutations {
			switch {
			case mu.JSONPatch != "":
				ms = append(ms, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{Expression: mu.JSONPatch}})
			case mu.ApplyConfiguration != "":
				ms = append(ms, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: mu.ApplyConfiguration}})
			case len(mu.Patch) > 0:
				return nil, untranslatable("spec.mutations[%d].patch: a static patch creates missing parents and ignores missing paths (Kyverno's semantics), JSON Patch does not", i)
			default:
				return nil, untranslatable("spec.mutations[%d] is CUE", i)
			}
		}
		out = append(out, mutating(r, m, fail, vars, ms)...)
	}
	if len(s.Validations) > 0 || len(s.AuditAnnotations) > 0 {
		denyOnly := len(s.ValidationActions) == 0 || len(s.ValidationActions) == 1 && s.ValidationActions[0] == "Deny"
		var vs []admissionregistrationv1.Validation
		for i, v := range s.Validations {
			field := fmt.Sprintf("spec.validations[%d]", i)
			switch {
			case v.CEL == "":
				return nil, untranslatable("%s is not CEL", field)
			case strings.Contains(v.Message, "{{"):
				return nil, untranslatable("%s.message has {{ }} variables", field)
			case v.Reason != nil && *v.Reason == metav1.StatusReasonUnauthorized:
				return nil, untranslatable("%s.reason Unauthorized: admission policies take Forbidden, Invalid or RequestEntityTooLarge", field)
			case v.Scope != "":
				sv, err := scopedValidation(field, v, denyOnly, builtinOnly(s.Match))
				if err != nil {
					return nil, err
				}
				vs = append(vs, sv)
				continue
			}
			vs = append(vs, admissionregistrationv1.Validation{Expression: strings.TrimSpace(v.CEL), Message: strings.TrimSpace(v.Message),
				MessageExpression: v.MessageExpression, Reason: v.Reason})
		}
		var audits []admissionregistrationv1.AuditAnnotation
		for _, a := range s.AuditAnnotations {
			audits = append(audits, admissionregistrationv1.AuditAnnotation{Key: a.Key, ValueExpression: a.ValueExpression})
		}
		actions := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
		if len(s.ValidationActions) > 0 {
			actions = actions[:0]
			for _, a := range s.ValidationActions {
				actions = append(actions, admissionregistrationv1.ValidationAction(a))
			}
		}
		out = append(out, validating(r, m, fail, vars, vs, audits, actions)...)
	}
	return out, nil
}

// scopedValidation is a validation with a scope as one admission policy
// validation: the condition holds for every value the scope selects
// (self bound to each by a comprehension), any error failing it as in
// the Policy; the message, when it is computed, is the first failing
// value's (a Policy lists each failing value's). Not translated: oldSelf
// (the value at the same place in the old object), and Warn or Audit
// actions (a Policy warns once per failing value).
func scopedValidation(field string, v v1alpha1.Validation, denyOnly, builtin bool) (admissionregistrationv1.Validation, error) {
	var none admissionregistrationv1.Validation
	if !builtin {
		return none, untranslatable("%s.scope on custom resources: the ModwrightPolicy types self by their CRD's schema (where the operator knows it), an admission policy does not", field)
	}
	if !denyOnly {
		return none, untranslatable("%s.scope with Warn or Audit: a ModwrightPolicy reports each failing value, an admission policy once", field)
	}
	steps, err := parseSelect(v.Scope)
	if err != nil {
		return none, untranslatable("%s.scope: %v", field, err)
	}
	cond, m := strings.TrimSpace(v.CEL), strings.TrimSpace(v.MessageExpression)
	out := admissionregistrationv1.Validation{Message: strings.TrimSpace(v.Message), Reason: v.Reason}
	if out.Message == "" {
		// The Policy's own default names its expression.
		out.Message = "failed expression: " + cond
	}
	if !oldSelf.MatchString(cond) && !oldSelf.MatchString(m) {
		list, err := selected(scopeObject, steps)
		if err != nil {
			return none, untranslatable("%s.scope: %v", field, err)
		}
		out.Expression = fmt.Sprintf("%s.map(self, %s).all(b, b)", list, cond)
		if m != "" {
			out.MessageExpression = fmt.Sprintf("string(%s.filter(self, !(%s)).map(self, %s)[0])", list, cond, m)
		}
		return out, nil
	}
	// With oldSelf: pairs of each value and the value at the same place
	// in the old object (null where there is none), bound by one-element
	// comprehensions.
	pairs, err := selectedPairs(scopeObject, steps)
	if err != nil {
		return none, untranslatable("%s.scope: %v", field, err)
	}
	bind := func(body string) string {
		return fmt.Sprintf("[p[0]].map(self, [p[1]].map(oldSelf, %s)[0])[0]", body)
	}
	out.Expression = fmt.Sprintf("%s.map(p, %s).all(b, b)", pairs, bind(cond))
	if m != "" {
		out.MessageExpression = fmt.Sprintf("string(%s.filter(p, !(%s)).map(p, %s)[0])", pairs, bind(cond), bind(m))
	}
	return out, nil
}

// selectedPairs is the CEL list of [value, old value] for the values the
// steps select from base, the old value being the one the same steps
// select at the same place (list index or map key) in oldObject, null
// where they select none (as a Policy's oldSelf).
func selectedPairs(base string, steps []step) (string, error) {
	const old = "oldObject"
	w := slices.IndexFunc(steps, func(s step) bool { return s.wildcard })
	if w < 0 {
		cond, acc := walk(base, steps)
		oc, oa := walk(old, steps)
		return fmt.Sprintf("(%s ? [[%s, %s != null && %s ? %s : null]] : [])", cond, acc, old, oc, oa), nil
	}
	cond1, acc1 := walk(base, steps[:w])
	oc1, oa1 := walk(old, steps[:w])
	kc, ka, err := kept(acc1+"[i]", base, steps, w)
	if err != nil {
		return "", err
	}
	okc, oka, err := kept(oa1+"[i]", old, steps, w)
	if err != nil {
		return "", err
	}
	at := func(isList string) string {
		return fmt.Sprintf("(%s != null && %s && %s && (%s) ? %s : null)", old, oc1, isList, okc, oka)
	}
	list := fmt.Sprintf("lists.range(size(%[1]s)).filter(i, %[2]s).map(i, [%[3]s, %[4]s])", acc1, kc, ka,
		at(fmt.Sprintf("type(%[1]s) == list && size(%[1]s) > i", oa1)))
	mp := fmt.Sprintf("%[1]s.map(k, k).filter(i, %[2]s).map(i, [%[3]s, %[4]s])", acc1, kc, ka,
		at(fmt.Sprintf("type(%[1]s) == map && i in %[1]s", oa1)))
	return fmt.Sprintf("(%[1]s && type(%[2]s) == list ? %[3]s : %[1]s && type(%[2]s) == map ? %[4]s : [])", cond1, acc1, list, mp), nil
}

// builtinOnly reports whether a match names only built-in kinds (those of
// client-go's scheme): their values are typed the same in a Policy and an
// admission policy.
func builtinOnly(m *v1alpha1.MatchResources) bool {
	if m == nil || len(m.Resources) == 0 {
		return false
	}
	known := map[string]bool{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		known[gvk.Kind] = true
	}
	for _, f := range m.Resources {
		if len(f.Kinds) == 0 {
			return false
		}
		for _, k := range f.Kinds {
			if !known[k] {
				return false
			}
		}
	}
	return true
}

// oldSelf finds the identifier oldSelf in CEL text.
var oldSelf = regexp.MustCompile(`(^|[^A-Za-z0-9_])oldSelf([^A-Za-z0-9_]|$)`)

// selected is the CEL list of the values the steps select from base, in
// order (a wildcard's or filter's elements, each followed by the steps
// after it; at most one of them).
func selected(base string, steps []step) (string, error) {
	w := slices.IndexFunc(steps, func(s step) bool { return s.wildcard })
	if w < 0 {
		cond, acc := walk(base, steps)
		return fmt.Sprintf("(%s ? [%s] : [])", cond, acc), nil
	}
	cond1, elems, cond2, acc2, err := wildcard(base, steps, w)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("(%s ? %s.filter(e0, %s).map(e0, %s) : [])", cond1, elems, cond2, acc2), nil
}

// policyMatch is a policy's scope: its operations in the match
// constraints (a Policy's own namespace there too), the rest in one match
// condition.
func policyMatch(kind, namespace string, pm *v1alpha1.MatchResources) (match, error) {
	if pm == nil {
		pm = &v1alpha1.MatchResources{}
	}
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	if len(pm.Operations) > 0 {
		ops = ops[:0]
		for _, o := range pm.Operations {
			if o == "CONNECT" {
				return match{}, untranslatable("spec.match.operations: CONNECT")
			}
			ops = append(ops, admissionregistrationv1.OperationType(o))
		}
	}
	m := match{constraints: admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}},
	}}}}
	// The namespace selector is the API server's (match conditions do not
	// see namespaceObject): the same on namespaced objects and Namespaces.
	scope := admissionregistrationv1.AllScopes
	nsSel := emptyAsNil(pm.NamespaceSelector)
	if nsSel != nil {
		nsSel = nsSel.DeepCopy()
	}
	var clusterScoped string
	if _, cluster := v1alpha1.PolicyKind(kind); !cluster {
		// Its own namespace only, never a cluster-scoped object.
		scope = admissionregistrationv1.NamespacedScope
		if nsSel == nil {
			nsSel = &metav1LabelSelector{}
		}
		nsSel.MatchExpressions = append(nsSel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{namespace}})
	} else if nsSel != nil {
		// A ClusterModwrightPolicy decides other cluster-scoped objects on no
		// labels, where the API server's selector lets them through.
		ls, err := metav1.LabelSelectorAsSelector(nsSel)
		if err != nil {
			return match{}, untranslatable("spec.match.namespaceSelector: %v", err)
		}
		if !ls.Matches(labels.Set{}) {
			clusterScoped = "(has(request.namespace) && request.namespace != '') || (request.kind.group == '' && request.kind.kind == 'Namespace')"
		}
	}
	m.constraints.NamespaceSelector = nsSel
	m.constraints.ResourceRules[0].Scope = &scope
	inc, err := policyScope(pm.Resources, pm.ObjectSelector, false)
	if err != nil {
		return match{}, err
	}
	inc = and(clusterScoped, inc)
	exc := "false"
	if x := pm.Exclude; x != nil {
		if emptyAsNil(x.NamespaceSelector) != nil {
			return match{}, untranslatable("spec.match.exclude.namespaceSelector: admission policies exclude no namespaces by labels")
		}
		if exc, err = policyScope(x.Resources, x.ObjectSelector, true); err != nil {
			return match{}, err
		}
	}
	cond := inc
	if exc != "false" {
		cond = and(inc, "!("+exc+")")
	}
	if cond != "true" {
		m.conditions = append(m.conditions, admissionregistrationv1.MatchCondition{Name: "modwright-scope", Expression: cond})
	}
	return m, nil
}

// policyScope is the CEL condition of a match (or exclude) section.
func policyScope(rs []v1alpha1.ResourceFilter, obj *metav1LabelSelector, exclude bool) (string, error) {
	obj = emptyAsNil(obj)
	if exclude && len(rs) == 0 && obj == nil {
		return "false", nil
	}
	var parts []string
	if len(rs) > 0 {
		var any []string
		for _, f := range rs {
			c, err := resourceFilter(f)
			if err != nil {
				return "", err
			}
			any = append(any, c)
		}
		if slices.Contains(any, "true") {
			any = []string{"true"}
		}
		parts = append(parts, or(any...))
	}
	if obj != nil {
		c, err := selector(obj, "l")
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s.all(l, %s)", "["+labelsOf(scopeObject)+"]", c))
	}
	return and(parts...), nil
}

// resourceFilter is the CEL condition of one resource filter.
func resourceFilter(f v1alpha1.ResourceFilter) (string, error) {
	var parts []string
	if len(f.APIGroups) > 0 && !slices.Contains(f.APIGroups, "*") {
		parts = append(parts, "request.kind.group in "+quoteList(f.APIGroups))
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, "*") {
		parts = append(parts, "request.kind.kind in "+quoteList(f.Kinds))
	}
	if len(f.Names) > 0 {
		name := fmt.Sprintf("(has(%[1]s.metadata) && has(%[1]s.metadata.name) && %[1]s.metadata.name != '' ? %[1]s.metadata.name : (has(request.name) ? request.name : ''))", scopeObject)
		c, err := globs(f.Names, name)
		if err != nil {
			return "", err
		}
		parts = append(parts, c)
	}
	if len(f.Namespaces) > 0 {
		c, err := globs(f.Namespaces, "(has(request.namespace) ? request.namespace : '')")
		if err != nil {
			return "", err
		}
		parts = append(parts, c)
	}
	return and(parts...), nil
}
