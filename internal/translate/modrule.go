package translate

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/jsonpath"
)

// modRulePart is a translated ModRule, before the rules of one scope and
// type are grouped into one policy (one match, one conversion of the
// object in the API server, for all of them).
type modRulePart struct {
	rule     Rule
	reject   bool
	m        match  // the scope
	key      string // the group: type and scope
	criteria string
	message  string    // Reject
	pre      string    // Patch: the condition under which no operation fails
	ops      []patchOp // Patch
}

// patchOp is one operation of a Patch rule.
type patchOp struct {
	op     v1beta1.PatchOperationType
	tokens []string
	value  string     // a CEL literal (add, replace)
	sel    *selection // an operation per selected member (tokens: the list or map)
	// position: the last token is an array position (position.go).
	position bool
}

// modRule translates a ModRule whose criteria select by names, indices and
// at most one wildcard, and whose patch operations have static values and
// paths: a Reject rule becomes a validation, a Patch rule JSON Patch
// operations (parents created as the ModRule creates them), grouped with
// the other rules of its scope by modRuleGroups.
func modRule(r Rule, o Options) (*modRulePart, error) {
	b, err := json.Marshal(r.Object)
	if err != nil {
		return nil, err
	}
	var mr v1beta1.ModRule
	if err := json.Unmarshal(b, &mr); err != nil {
		return nil, err
	}
	s := &mr.Spec
	if bytesContain(b, "syntheticRefs") {
		return nil, untranslatable("syntheticRefs: the namespace, node and graph edges the webhook adds")
	}
	m, err := modRuleScope(mr.Namespace, s, o)
	if err != nil {
		return nil, err
	}
	// The object a criterion reads: on DELETE the old one.
	root := "object"
	if slices.Contains(m.constraints.ResourceRules[0].Operations, admissionregistrationv1.Delete) && s.Type == v1beta1.ModRuleTypeReject {
		root = "(request.operation == 'DELETE' ? oldObject : object)"
	}
	var crit []string
	for i, c := range s.Match {
		e, err := criterion(c, root)
		if err != nil {
			return nil, untranslatable("spec.match[%d]: %v", i, err)
		}
		crit = append(crit, e)
	}
	part := &modRulePart{rule: r, criteria: and(crit...)}
	switch s.Type {
	case v1beta1.ModRuleTypeReject:
		part.reject = true
		part.message = "rejected by ModRule " + r.Key()
		if s.RejectMessage != nil && *s.RejectMessage != "" {
			if strings.Contains(*s.RejectMessage, "{{") {
				return nil, untranslatable("spec.rejectMessage is a Go template")
			}
			part.message = strings.TrimSpace(*s.RejectMessage)
		}
		if strings.ContainsAny(part.message, "\r\n") {
			return nil, untranslatable("spec.rejectMessage has line breaks")
		}
	case v1beta1.ModRuleTypePatch:
		// A Patch rule never runs on DELETE.
		ops := m.constraints.ResourceRules[0].Operations
		m.constraints.ResourceRules[0].Operations = slices.DeleteFunc(ops, func(o admissionregistrationv1.OperationType) bool { return o == admissionregistrationv1.Delete })
		if len(m.constraints.ResourceRules[0].Operations) == 0 {
			return nil, untranslatable("a Patch rule for DELETE only never runs")
		}
		if part.ops, part.pre, err = patchOps(s.Patch); err != nil {
			return nil, err
		}
	default:
		return nil, untranslatable("a rule of type %q", s.Type)
	}
	part.m = m
	key, _ := json.Marshal(struct {
		Reject      bool
		Constraints admissionregistrationv1.MatchResources
		Conditions  []admissionregistrationv1.MatchCondition
	}{part.reject, m.constraints, m.conditions})
	part.key = string(key)
	return part, nil
}

// modRuleGroups makes one policy of the rules of each scope and type: a
// ValidatingAdmissionPolicy with a validation per Reject rule, a
// MutatingAdmissionPolicy with one JSON Patch for all the Patch rules
// (each rule's criteria and applicability a variable, evaluated on the
// object as the rules find it; missing parents created once).
func modRuleGroups(parts []*modRulePart) []modRuleGroup {
	var keys []string
	groups := map[string][]*modRulePart{}
	for _, p := range parts {
		if _, ok := groups[p.key]; !ok {
			keys = append(keys, p.key)
		}
		groups[p.key] = append(groups[p.key], p)
	}
	var out []modRuleGroup
	for _, k := range keys {
		ps := groups[k]
		g := modRuleGroup{}
		var sources []string
		for _, p := range ps {
			g.rules = append(g.rules, p.rule)
			sources = append(sources, p.rule.Kind+" "+p.rule.Key())
		}
		h := fnv.New32a()
		h.Write([]byte(k))
		scope := ps[0].rule.namespace()
		if scope == "" {
			scope = "all"
		}
		kind := "patch"
		if ps[0].reject {
			kind = "reject"
		}
		meta := metav1.ObjectMeta{
			Name:        fmt.Sprintf("modwright.modrules.%s.%s-%08x", scope, kind, h.Sum32()),
			Labels:      map[string]string{ManagedLabel: "true"},
			Annotations: map[string]string{SourceAnnotation: strings.Join(sources, ", ")},
		}
		m := ps[0].m
		if ps[0].reject {
			forbidden := metav1.StatusReasonForbidden
			var vs []admissionregistrationv1.Validation
			for _, p := range ps {
				vs = append(vs, admissionregistrationv1.Validation{Expression: "!(" + p.criteria + ")", Message: p.message, Reason: &forbidden})
			}
			g.objects = validatingNamed(meta, m, admissionregistrationv1.Fail, nil, vs, nil, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny})
			out = append(out, g)
			continue
		}
		var vars []admissionregistrationv1.Variable
		for i, p := range ps {
			vars = append(vars, admissionregistrationv1.Variable{Name: fmt.Sprintf("r%d", i), Expression: and(p.criteria, p.pre)})
		}
		// Objects kubectl apply manages: the webhook mirrors the patch into
		// their last-applied-configuration, which no policy can do; they
		// stay with the webhook.
		m.conditions = append(slices.Clone(m.conditions), admissionregistrationv1.MatchCondition{Name: "modwright-not-last-applied",
			Expression: "!(has(object.metadata.annotations) && 'kubectl.kubernetes.io/last-applied-configuration' in object.metadata.annotations)"})
		// A Patch rule that fails is skipped, the object admitted.
		g.objects = mutatingNamed(meta, m, admissionregistrationv1.Ignore, vars, []admissionregistrationv1.Mutation{jsonPatch(groupPatch(ps))})
		out = append(out, g)
	}
	return out
}

// modRuleGroup is the policy and binding of some rules.
type modRuleGroup struct {
	rules   []Rule
	objects []any
}

// groupPatch is the JSON Patch of a group of Patch rules: the parents the
// applying rules' additions need, created once (shallow first), then each
// rule's operations when it applies (variables.rN).
func groupPatch(ps []*modRulePart) string {
	const object = "object"
	type parent struct {
		tokens []string
		rules  []string
	}
	var parents []*parent
	find := func(t []string) *parent {
		for _, p := range parents {
			if slices.Equal(p.tokens, t) {
				return p
			}
		}
		p := &parent{tokens: t}
		parents = append(parents, p)
		return p
	}
	var leaves []string
	for i, p := range ps {
		v := fmt.Sprintf("variables.r%d", i)
		for _, op := range p.ops {
			if op.sel != nil {
				leaves = append(leaves, fmt.Sprintf("(%s ? %s : [])", v, op.sel.patches(op)))
				continue
			}
			if op.position {
				// Its missing parents but the list, which it creates.
				for k := 1; k < len(op.tokens)-1 && op.op == v1beta1.PatchOperationTypeAdd; k++ {
					pa := find(op.tokens[:k])
					if !slices.Contains(pa.rules, v) {
						pa.rules = append(pa.rules, v)
					}
				}
				leaves = append(leaves, fmt.Sprintf("(%s ? %s : [])", v, positionPatch(op)))
				continue
			}
			path := quote(pointerOf(op.tokens))
			switch op.op {
			case v1beta1.PatchOperationTypeRemove:
				cond, _ := walkTokens(object, op.tokens)
				leaves = append(leaves, fmt.Sprintf("(%s && %s ? [JSONPatch{op: 'remove', path: %s}] : [])", v, cond, path))
			case v1beta1.PatchOperationTypeReplace:
				leaves = append(leaves, fmt.Sprintf("(%s ? [JSONPatch{op: 'replace', path: %s, value: %s}] : [])", v, path, op.value))
			default:
				for k := 1; k < len(op.tokens); k++ {
					pa := find(op.tokens[:k])
					if !slices.Contains(pa.rules, v) {
						pa.rules = append(pa.rules, v)
					}
				}
				leaves = append(leaves, fmt.Sprintf("(%s ? [JSONPatch{op: 'add', path: %s, value: %s}] : [])", v, path, op.value))
			}
		}
	}
	slices.SortStableFunc(parents, func(a, b *parent) int { return len(a.tokens) - len(b.tokens) })
	var all []string
	for _, pa := range parents {
		cond, acc := walkTokens(object, pa.tokens)
		missing := fmt.Sprintf("(!(%s) || type(%s) == null_type)", cond, acc)
		all = append(all, fmt.Sprintf("(%s && (%s) ? [JSONPatch{op: 'add', path: %s, value: {}}] : [])", missing, strings.Join(pa.rules, " || "), quote(pointerOf(pa.tokens))))
	}
	return strings.Join(append(all, leaves...), " + ")
}

func bytesContain(b []byte, s string) bool { return strings.Contains(string(b), s) }

// modRuleScope is where a ModRule applies: its namespace's objects (none:
// everywhere, as offline); in the cluster-rules namespace, cluster-scoped objects, or with
// targetNamespaceRegex the objects of the namespaces it matches (a
// Namespace counts as cluster-scoped, as in the webhook).
func modRuleScope(namespace string, s *v1beta1.ModRuleSpec, o Options) (match, error) {
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	if len(s.AdmissionOperations) > 0 {
		ops = ops[:0]
		for _, op := range s.AdmissionOperations {
			ops = append(ops, admissionregistrationv1.OperationType(op))
		}
	}
	m := match{constraints: admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}},
	}}}}
	clusterNS := o.ClusterRulesNamespace
	if clusterNS == "" {
		clusterNS = "kubemod-system"
	}
	scope := admissionregistrationv1.NamespacedScope
	switch re := s.TargetNamespaceRegex; {
	case namespace == "":
		// Offline, a rule without a namespace applies everywhere (in a
		// cluster every rule has one).
		scope = admissionregistrationv1.AllScopes
	case namespace != clusterNS:
		m.constraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}}
	case re == nil || *re == "":
		scope = admissionregistrationv1.ClusterScope
	default:
		if _, err := regexp.Compile(*re); err != nil {
			return match{}, untranslatable("spec.targetNamespaceRegex: %v", err)
		}
		scope = admissionregistrationv1.AllScopes
		ns := "(request.kind.group == '' && request.kind.kind == 'Namespace' ? '' : (has(request.namespace) ? request.namespace : ''))"
		m.conditions = append(m.conditions, admissionregistrationv1.MatchCondition{Name: "modwright-namespace", Expression: ns + ".matches(" + quote(*re) + ")"})
	}
	m.constraints.ResourceRules[0].Scope = &scope
	return m, nil
}

// A select's steps: a member name, an index, or the wildcard.
type step struct {
	name     string
	index    int
	isIndex  bool
	wildcard bool
	// filter keeps, of a wildcard's elements, those it holds for (nil:
	// all).
	filter *jsonpath.Tree
}

var (
	ident      = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	arrayIndex = regexp.MustCompile(`^-?[0-9]+$`)
)

// parseSelect reads the subset of KubeMod's JSONPath CEL can walk exactly:
// $ then names (.name, ['name']), indices ([n]) and at most one wildcard
// ([*] or .*) or filter ([?(...)], a wildcard keeping the elements its
// condition holds for).
func parseSelect(sel string) ([]step, error) {
	e, err := jsonpath.Parse(strings.TrimSpace(sel))
	if err != nil {
		return nil, fmt.Errorf("select %q: %v", sel, err)
	}
	t := e.Tree()
	if t.Kind != jsonpath.TreePath || t.Current {
		return nil, fmt.Errorf("select %q: a computed expression", sel)
	}
	var steps []step
	wild := 0
	for _, s := range t.Steps {
		switch s.Kind {
		case jsonpath.StepName:
			steps = append(steps, step{name: s.Name})
		case jsonpath.StepIndex:
			steps = append(steps, step{index: s.Index, isIndex: true})
		case jsonpath.StepWildcard:
			steps = append(steps, step{wildcard: true})
			wild++
		case jsonpath.StepFilter:
			steps = append(steps, step{wildcard: true, filter: s.Filter})
			wild++
		default:
			return nil, fmt.Errorf("select %q: slices, unions and recursive descent are not translated", sel)
		}
	}
	if wild > 1 {
		return nil, fmt.Errorf("select %q: more than one wildcard or filter", sel)
	}
	// Rules do not see metadata.managedFields; admission policies do.
	for i, s := range steps {
		if s.wildcard && (i == 0 || i == 1 && steps[0].name == "metadata") || s.name == "managedFields" && i == 1 && steps[0].name == "metadata" {
			return nil, fmt.Errorf("select %q: rules do not see metadata.managedFields, admission policies do", sel)
		}
	}
	return steps, nil
}

// wildcard splits steps at their wildcard or filter w: the condition that
// the steps before it exist from base, the CEL list of its elements (a
// list's, a map's values), and, for an element e0, the condition that it
// is kept (the filter) and the steps after it exist, and what they reach.
func wildcard(base string, steps []step, w int) (cond1, elems, cond2, acc2 string, err error) {
	cond1, acc1 := walk(base, steps[:w])
	elems = fmt.Sprintf("(type(%[1]s) == list ? %[1]s : (type(%[1]s) == map ? %[1]s.map(k, %[1]s[k]) : []))", acc1)
	cond2, acc2, err = kept("e0", base, steps, w)
	return cond1, elems, cond2, acc2, err
}

// kept is, for element e of the wildcard or filter w of steps (root: the
// object its filter's '$' is), the condition that it is selected (the
// filter, and the steps after it exist) and what those steps reach.
func kept(e, root string, steps []step, w int) (cond, acc string, err error) {
	cond, acc = walk(e, steps[w+1:])
	if f := steps[w].filter; f != nil {
		fc, err := filterCond(f, e, root)
		if err != nil {
			return "", "", err
		}
		cond = and("("+fc+")", cond)
	}
	return cond, acc, nil
}

// definiteSteps are a path's steps when they are names and indices only.
func definiteSteps(ts []jsonpath.TreeStep) ([]step, bool) {
	var steps []step
	for _, s := range ts {
		switch s.Kind {
		case jsonpath.StepName:
			steps = append(steps, step{name: s.Name})
		case jsonpath.StepIndex:
			steps = append(steps, step{index: s.Index, isIndex: true})
		default:
			return nil, false
		}
	}
	return steps, true
}

// isRoot reports whether base is the object (or the old one).
func isRoot(base string) bool {
	return base == "object" || base == "oldObject" || strings.HasPrefix(base, "(request.operation")
}

// walk is the CEL condition that the definite steps exist from base, and
// the expression of what they reach.
func walk(base string, steps []step) (cond, acc string) {
	cond, acc = "true", base
	var cs []string
	for i, s := range steps {
		if isRoot(base) && i == 0 && !s.isIndex && !s.wildcard {
			// The object is an object; it has metadata.
			if s.name != "metadata" {
				cs = append(cs, fmt.Sprintf("%s in %s", quote(s.name), acc))
			}
			acc = fmt.Sprintf("%s[%s]", acc, quote(s.name))
			continue
		}
		switch {
		case s.isIndex && s.index >= 0:
			cs = append(cs, fmt.Sprintf("type(%s) == list && size(%s) > %d", acc, acc, s.index))
			acc = fmt.Sprintf("%s[%d]", acc, s.index)
		case s.isIndex:
			cs = append(cs, fmt.Sprintf("type(%s) == list && size(%s) >= %d", acc, acc, -s.index))
			acc = fmt.Sprintf("%s[size(%s) - %d]", acc, acc, -s.index)
		default:
			cs = append(cs, fmt.Sprintf("type(%s) == map && %s in %s", acc, quote(s.name), acc))
			acc = fmt.Sprintf("%s[%s]", acc, quote(s.name))
		}
	}
	if len(cs) > 0 {
		cond = strings.Join(cs, " && ")
	}
	return cond, acc
}

// criterion is a match item as a CEL condition deciding exactly as the
// ModRule does.
func criterion(c v1beta1.MatchItem, root string) (string, error) {
	if e, err := jsonpath.Parse(strings.TrimSpace(c.Select)); err == nil && !e.IsQuery() {
		// A computed condition: its boolean decides alone (the matchers
		// are not used); one that may fail or give another type is not
		// translated.
		cond, err := filterCond(e.Tree(), root, root)
		if err != nil {
			return "", fmt.Errorf("select %q: %v", c.Select, err)
		}
		if c.Negate {
			return "!(" + cond + ")", nil
		}
		return "(" + cond + ")", nil
	}
	steps, err := parseSelect(c.Select)
	if err != nil {
		return "", err
	}
	w := slices.IndexFunc(steps, func(s step) bool { return s.wildcard })
	str := w < 0 && knownString(steps)
	test, err := matcher(c, str)
	if err != nil {
		return "", err
	}
	// test1 tests one value, any expression, bound once.
	test1 := func(v string) string {
		if isIdent(v) {
			return test(v)
		}
		return fmt.Sprintf("[%s].all(t, %s)", v, test("t"))
	}
	all := c.MatchFor != nil && *c.MatchFor == v1beta1.MatchForTypeAll
	// values tests a list of selected values (all defined).
	values := func(l, e string) string {
		switch {
		case test == nil:
			return fmt.Sprintf("size(%s) > 0", l)
		case all:
			return fmt.Sprintf("size(%s) > 0 && %s.all(%s, %s)", l, l, e, test(e))
		}
		return fmt.Sprintf("%s.exists(%s, %s)", l, e, test(e))
	}
	var expr string
	switch {
	case str:
		// A string wherever it is present (object metadata): its text.
		cond, v := walk(root, steps)
		expr = cond
		if test != nil {
			expr = and(cond, test1(v))
		}
	case w < 0:
		// One value at most: a boolean decides alone, null does not
		// match, a list's elements are the values.
		cond, v := walk(root, steps)
		single := "true"
		if test != nil {
			single = test("t")
		}
		expr = fmt.Sprintf("%s && [%s].all(t, type(t) == bool ? t == true : type(t) == null_type ? false : type(t) == list ? (%s) : (%s))",
			cond, v, values("t", "e0"), single)
	default:
		cond1, elems, cond2, acc2, err := wildcard(root, steps, w)
		if err != nil {
			return "", fmt.Errorf("select %q: %v", c.Select, err)
		}
		defined := fmt.Sprintf("%s.exists(e0, %s)", elems, cond2)
		switch {
		case test == nil:
			expr = fmt.Sprintf("%s && %s", cond1, defined)
		case all:
			expr = fmt.Sprintf("%s && %s && %s.all(e0, !(%s) || %s)", cond1, defined, elems, cond2, test1(acc2))
		default:
			expr = fmt.Sprintf("%s && %s.exists(e0, (%s) && %s)", cond1, elems, cond2, test1(acc2))
		}
	}
	if c.Negate {
		return "!(" + expr + ")", nil
	}
	return "(" + expr + ")", nil
}

func isIdent(s string) bool { return ident.MatchString(s) }

// knownString reports whether the definite steps reach a string wherever
// present, in any object the API server holds: kind, apiVersion, the
// object metadata's strings, a label or an annotation.
func knownString(steps []step) bool {
	var names []string
	for _, s := range steps {
		if s.isIndex || s.wildcard {
			return false
		}
		names = append(names, s.name)
	}
	p := strings.Join(names, ".")
	switch {
	case p == "kind" || p == "apiVersion":
		return true
	case len(names) == 2 && names[0] == "metadata":
		return slices.Contains([]string{"name", "namespace", "generateName", "uid", "resourceVersion"}, names[1])
	case len(names) == 3 && names[0] == "metadata":
		return names[1] == "labels" || names[1] == "annotations"
	}
	return false
}

// text is the CEL expression of a scalar value's text as ModRules compare
// it (objects and lists have none in CEL: matcher refuses what could
// match their JSON text).
func text(v string) string {
	return fmt.Sprintf("(type(%[1]s) == string ? %[1]s : type(%[1]s) == bool ? (%[1]s ? 'true' : 'false') : type(%[1]s) == int || type(%[1]s) == uint ? string(%[1]s) : type(%[1]s) == double ? (%[1]s == double(int(%[1]s)) ? string(int(%[1]s)) : string(%[1]s)) : type(%[1]s) == null_type ? 'null' : '')", v)
}

// scalar is the CEL condition that v is not an object or a list.
func scalar(v string) string {
	return fmt.Sprintf("type(%[1]s) != map && type(%[1]s) != list", v)
}

// matcher is the CEL test of one value (nil: no matcher); str: the value
// is a string wherever present (knownString), never an object's or a
// list's JSON text.
func matcher(c v1beta1.MatchItem, str bool) (func(v string) string, error) {
	var accepted []string
	switch {
	case c.MatchValue != nil:
		accepted = []string{*c.MatchValue}
	case len(c.MatchValues) > 0:
		accepted = c.MatchValues
	case c.MatchRegex != nil:
		re := *c.MatchRegex
		if _, err := regexp.Compile(re); err != nil {
			return nil, err
		}
		// Objects and lists are tested as their JSON text, which CEL
		// cannot write: only a regex that cannot match such a text
		// translates.
		if !str && !cannotStartJSON(re) {
			return nil, fmt.Errorf("matchRegex %q may match the JSON text of an object or a list, which CEL cannot write (anchor it: ^ and what cannot be { or [)", re)
		}
		return func(v string) string {
			return fmt.Sprintf("(%s && %s.matches(%s))", scalar(v), text(v), quote(re))
		}, nil
	default:
		return nil, nil
	}
	for _, a := range accepted {
		if strings.HasPrefix(a, "{") || strings.HasPrefix(a, "[") {
			return nil, fmt.Errorf("a matchValue %q that may be the JSON text of an object or a list", a)
		}
	}
	return func(v string) string {
		if len(accepted) == 1 {
			return fmt.Sprintf("(%s && %s == %s)", scalar(v), text(v), quote(accepted[0]))
		}
		return fmt.Sprintf("(%s && %s in %s)", scalar(v), text(v), quoteList(accepted))
	}, nil
}

// patchOps are a Patch rule's operations, and the condition under which
// none fails (the rule is atomic: when one would fail, none applies).
func patchOps(ops []v1beta1.PatchOperation) ([]patchOp, string, error) {
	var out []patchOp
	var pre []string
	for i, op := range ops {
		field := fmt.Sprintf("spec.patch[%d]", i)
		if op.Select != nil && *op.Select != "" {
			po, cond, err := selectedOp(field, op)
			if err != nil {
				return nil, "", err
			}
			for _, p := range out {
				if related(p.tokens, po.tokens) {
					return nil, "", untranslatable("%s.path: operations on the same or nested paths", field)
				}
			}
			out, pre = append(out, po), append(pre, cond)
			continue
		}
		tokens, err := pointer(op.Path)
		names, pos, atPosition := splitPosition(op.Path)
		if err != nil && !atPosition {
			return nil, "", untranslatable("%s.path: %v", field, err)
		}
		if atPosition {
			tokens = append(names, pos)
		}
		for _, p := range out {
			if related(p.tokens, tokens) || atPosition && related(p.tokens, names) {
				return nil, "", untranslatable("%s.path: operations on the same or nested paths", field)
			}
		}
		po := patchOp{op: op.Operation, tokens: tokens, position: atPosition}
		if atPosition {
			if op.Operation != v1beta1.PatchOperationTypeRemove {
				if po.value, err = staticValue(op.Value); err != nil {
					return nil, "", untranslatable("%s.value: %v", field, err)
				}
			}
			cond, err := positionPre(op.Operation, names, pos)
			if err != nil {
				return nil, "", untranslatable("%s.path: %v", field, err)
			}
			out, pre = append(out, po), append(pre, cond)
			continue
		}
		switch op.Operation {
		case v1beta1.PatchOperationTypeRemove:
		case v1beta1.PatchOperationTypeReplace, v1beta1.PatchOperationTypeAdd:
			if po.value, err = staticValue(op.Value); err != nil {
				return nil, "", untranslatable("%s.value: %v", field, err)
			}
			if op.Operation == v1beta1.PatchOperationTypeReplace {
				cond, _ := walkTokens("object", tokens)
				pre = append(pre, cond)
				break
			}
			// The parents that exist must be objects (or null: replaced).
			for k := 1; k < len(tokens); k++ {
				cond, acc := walkTokens("object", tokens[:k])
				pre = append(pre, fmt.Sprintf("!(%s) || type(%s) == map || type(%s) == null_type", cond, acc, acc))
			}
		default:
			return nil, "", untranslatable("%s.op %q", field, op.Operation)
		}
		out = append(out, po)
	}
	return out, and(pre...), nil
}

func jsonPatch(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
}

// pointer splits an RFC 6901 path into member names; array positions are
// not translated.
func pointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "#") {
		return nil, fmt.Errorf("%q: a path with placeholders", p)
	}
	var tokens []string
	for _, t := range strings.Split(p[1:], "/") {
		if t == "-" || arrayIndex.MatchString(t) {
			return nil, fmt.Errorf("%q: array positions are not translated", p)
		}
		if strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(t), "~") {
			return nil, fmt.Errorf("%q: a bad escape", p)
		}
		tokens = append(tokens, strings.NewReplacer("~1", "/", "~0", "~").Replace(t))
	}
	if slices.Contains(tokens, "managedFields") || len(tokens) > 0 && (tokens[0] == "status" || tokens[0] == "syntheticRefs") {
		return nil, fmt.Errorf("%q: status, managedFields and syntheticRefs are not translated", p)
	}
	return tokens, nil
}

func pointerOf(tokens []string) string {
	r := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + r.Replace(t))
	}
	return b.String()
}

// related reports whether one path is the other or under it.
func related(a, b []string) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[:n], b[:n])
}

func walkTokens(base string, tokens []string) (cond, acc string) {
	steps := make([]step, len(tokens))
	for i, t := range tokens {
		steps[i] = step{name: t}
	}
	return walk(base, steps)
}

// staticTree parses a value without template actions as the ModRule does
// (YAML 1.1 as kubectl; absent: null).
func staticTree(v *string) (any, error) {
	if v == nil {
		return nil, nil
	}
	if strings.Contains(*v, "{{") {
		return nil, fmt.Errorf("a Go template (Sprig functions, .Target)")
	}
	var out any
	if err := yaml.Unmarshal([]byte(*v), &out); err != nil {
		return nil, err
	}
	return out, nil
}

func staticValue(v *string) (string, error) {
	t, err := staticTree(v)
	if err != nil {
		return "", err
	}
	return celLiteral(t)
}

// celLiteral is a JSON value as a CEL literal.
func celLiteral(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(v), nil
	case string:
		return quote(v), nil
	case float64:
		if v == float64(int64(v)) && !strings.ContainsAny(strconv.FormatFloat(v, 'g', -1, 64), "e.") {
			return strconv.FormatInt(int64(v), 10), nil
		}
		return "", fmt.Errorf("a non-integer number %v", v)
	case int64:
		return strconv.FormatInt(v, 10), nil
	case []any:
		items := make([]string, len(v))
		for i, e := range v {
			s, err := celLiteral(e)
			if err != nil {
				return "", err
			}
			items[i] = s
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		items := make([]string, len(keys))
		for i, k := range keys {
			s, err := celLiteral(v[k])
			if err != nil {
				return "", err
			}
			items[i] = quote(k) + ": " + s
		}
		return "{" + strings.Join(items, ", ") + "}", nil
	}
	return "", fmt.Errorf("a value of type %T", v)
}

// cannotStartJSON reports whether the regex is anchored at the start of
// the text and what follows cannot begin with { or [: it can then never
// match the JSON text of an object or a list.
func cannotStartJSON(re string) bool {
	t, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return false
	}
	t = t.Simplify()
	if t.Op != syntax.OpConcat || len(t.Sub) < 2 || t.Sub[0].Op != syntax.OpBeginText && t.Sub[0].Op != syntax.OpBeginLine {
		return false
	}
	ok, _ := firstExcludes(t.Sub[1], '{', '[')
	return ok
}

// firstExcludes reports whether no text t matches can start with one of
// rs; empty is whether t can match the empty text (then the answer is
// false: what follows decides).
func firstExcludes(t *syntax.Regexp, rs ...rune) (ok, empty bool) {
	switch t.Op {
	case syntax.OpLiteral:
		if len(t.Rune) == 0 {
			return false, true
		}
		r := t.Rune[0]
		return !slices.Contains(rs, r) && (t.Flags&syntax.FoldCase == 0 || !slices.Contains(rs, unicode.SimpleFold(r))), false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(t.Rune); i += 2 {
			for _, r := range rs {
				if t.Rune[i] <= r && r <= t.Rune[i+1] {
					return false, false
				}
			}
		}
		return true, false
	case syntax.OpCapture, syntax.OpPlus:
		return firstExcludes(t.Sub[0], rs...)
	case syntax.OpRepeat:
		if t.Min == 0 {
			return false, true
		}
		return firstExcludes(t.Sub[0], rs...)
	case syntax.OpConcat:
		if len(t.Sub) == 0 {
			return false, true
		}
		return firstExcludes(t.Sub[0], rs...)
	case syntax.OpAlternate:
		for _, s := range t.Sub {
			if ok, _ := firstExcludes(s, rs...); !ok {
				return false, false
			}
		}
		return true, false
	}
	return false, false
}
