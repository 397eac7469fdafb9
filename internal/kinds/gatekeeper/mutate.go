package gatekeeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// MutatorKind is the adapter of one of Gatekeeper's mutator kinds
// (mutations.gatekeeper.sh: Assign, AssignMetadata, ModifySet,
// AssignImage). It is stateless and safe for concurrent use.
type MutatorKind struct{ name string }

var _ kinds.Kind = (*MutatorKind)(nil)

// NewMutatorKinds returns the adapters of the four mutator kinds.
func NewMutatorKinds() []kinds.Kind {
	return []kinds.Kind{&MutatorKind{gkv1.KindAssign}, &MutatorKind{gkv1.KindAssignMetadata},
		&MutatorKind{gkv1.KindModifySet}, &MutatorKind{gkv1.KindAssignImage}}
}

// Name is the mutator kind.
func (k *MutatorKind) Name() string { return k.name }

// Group is mutations.gatekeeper.sh.
func (k *MutatorKind) Group() string { return gkv1.MutationsGroup }

// Versions are v1, v1beta1 and v1alpha1 (the same schema).
func (k *MutatorKind) Versions() []string { return gkv1.MutationVersions }

// Mutator is a compiled mutator: the rule. It is immutable.
type Mutator struct {
	info    engine.RuleInfo
	kind    string
	loc     location
	applyTo []applyTo // nil: any (AssignMetadata)
	match   *matcher
	tests   pathTests
	set     setter
}

var _ engine.Rule = (*Mutator)(nil)

type applyTo struct {
	groups, kinds, versions []string
	ops                     []rules.Operation // nil: CREATE and UPDATE
}

// Compile decodes and compiles a mutator. One with errors is returned
// with its error, also in Info().Err (a *rules.CompileError).
func (k *MutatorKind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	mu := &Mutator{kind: k.name}
	mu.info = engine.RuleInfo{Kind: k.name, Key: m.Key(), Namespace: m.Namespace(), Name: m.Name(), Phase: engine.Mutate,
		FailurePolicy: engine.FailureIgnore}
	ce := &rules.CompileError{Kind: k.name, Rule: m.Key()}
	errf := func(field string, pos int, format string, args ...any) {
		ce.Errors = append(ce.Errors, rules.FieldError{Field: field, Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	av := m.APIVersion()
	if !slices.Contains(gkv1.MutationVersions, strings.TrimPrefix(av, gkv1.MutationsGroup+"/")) {
		av = gkv1.MutationsGroup + "/" + gkv1.MutationVersions[0]
	}
	var spec gkv1.Mutator
	if err := kinds.Decode(m, k.name, av, &spec); err != nil {
		mu.info.Err = err
		return mu, err
	}
	if len(m.Name()) > 63 {
		errf("metadata.name", -1, "at most 63 characters")
	}
	mu.compile(&spec.Spec, errf)
	if len(ce.Errors) > 0 {
		mu.info.Err = ce
		mu.info.Index.Kinds = []string{}
		return mu, ce
	}
	return mu, nil
}

func (mu *Mutator) compile(s *gkv1.MutatorSpec, errf errfFunc) {
	var err error
	if mu.loc, err = parseLocation(s.Location); err != nil {
		errf("spec.location", -1, "%v", err)
		return
	}
	mu.match = compileMatch("spec.match", &s.Match, errf)
	p := &s.Parameters
	metadata := mu.loc[0].field == "metadata"
	if mu.kind != gkv1.KindAssignMetadata {
		if metadata {
			errf("spec.location", -1, "%s cannot change metadata: write an AssignMetadata", mu.kind)
		}
		mu.compileApplyTo(s.ApplyTo, errf)
		mu.tests = compilePathTests(mu.loc, p.PathTests, errf)
	} else if len(s.ApplyTo) > 0 || len(p.PathTests) > 0 {
		errf("spec", -1, "AssignMetadata takes neither applyTo nor pathTests")
	}
	if len(p.AssignIf) > 0 {
		errf("spec.parameters.assignIf", -1, "assignIf was removed from Gatekeeper (v3.7): write pathTests")
	}
	last := mu.loc[len(mu.loc)-1]
	switch mu.kind {
	case gkv1.KindAssign:
		mu.set = compileAssign(mu.loc, p, errf)
	case gkv1.KindAssignMetadata:
		if len(mu.loc) != 3 || !metadata || (mu.loc[1].field != "labels" && mu.loc[1].field != "annotations") || mu.loc[1].list || last.list {
			errf("spec.location", -1, "must be metadata.labels.<key> or metadata.annotations.<key>")
		}
		// Only added, never changed: the key must not exist.
		mu.tests = pathTests{2: mustNotExist}
		as := compileAssignField(p.Assign, errf)
		if as.value != nil {
			if _, ok := as.value.(string); !ok {
				errf("spec.parameters.assign.value", -1, "must be a string")
			}
		}
		mu.set = as
	case gkv1.KindModifySet:
		if last.list {
			errf("spec.location", -1, "must end with the list's field, not a keyed list")
		}
		mu.set = compileModifySet(p, errf)
	case gkv1.KindAssignImage:
		if last.list {
			errf("spec.location", -1, "must end with the image's field, not a list")
		}
		checkKeyNotChanged(mu.loc, errf)
		mu.set = compileAssignImage(p, errf)
	}
	mu.info.Index = engine.IndexKeys{AnyNamespace: true, Operations: engine.OpSetOf(rules.Create, rules.Update), Kinds: mu.indexKinds()}
	mu.info.Converge = true // applied again until the object stops changing, as Gatekeeper does
}

func (mu *Mutator) indexKinds() []string {
	if mu.applyTo == nil {
		return mu.match.indexKinds()
	}
	var out []string
	for _, a := range mu.applyTo {
		out = append(out, a.kinds...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (mu *Mutator) compileApplyTo(as []gkv1.ApplyTo, errf errfFunc) {
	if len(as) == 0 {
		errf("spec.applyTo", -1, "%s needs applyTo: the groups, versions and kinds it mutates", mu.kind)
		return
	}
	for i, a := range as {
		f := fmt.Sprintf("spec.applyTo[%d]", i)
		if len(a.Groups) == 0 || len(a.Versions) == 0 || len(a.Kinds) == 0 {
			errf(f, -1, "groups, versions and kinds are required")
		}
		for _, v := range slices.Concat(a.Groups, a.Versions, a.Kinds) {
			if strings.Contains(v, "*") {
				errf(f, -1, "applyTo takes no globs: %q", v)
			}
		}
		mu.applyTo = append(mu.applyTo, applyTo{groups: a.Groups, versions: a.Versions, kinds: a.Kinds})
	}
}

// Info is the rule's kernel information.
func (mu *Mutator) Info() *engine.RuleInfo { return &mu.info }

// InScope: mutators are placed by kind alone.
func (mu *Mutator) InScope(string) bool { return true }

// Match is applyTo (the object's exact group, version and kind) and
// spec.match; an object of a namespace Gatekeeper's Config exempts from
// the mutation webhook matches no mutator.
func (mu *Mutator) Match(h *engine.Handle) (bool, error) {
	st := stateOf(h)
	t := st.target
	if st.exempted(h, "mutation-webhook") {
		return false, nil
	}
	if mu.applyTo != nil && !slices.ContainsFunc(mu.applyTo, func(a applyTo) bool {
		return slices.Contains(a.groups, t.gvk.Group) && slices.Contains(a.versions, t.gvk.Version) && slices.Contains(a.kinds, t.gvk.Kind)
	}) {
		return false, nil
	}
	ok, err := mu.match.matches(t)
	return ok, engine.InField("spec.match", err)
}

// Apply mutates a copy of the object at the location and patches the
// difference.
func (mu *Mutator) Apply(h *engine.Handle) error {
	orig := h.Object()
	cp := value.DeepCopy(orig)
	ctx := &mutation{loc: mu.loc, tests: mu.tests, set: mu.set, obj: cp, ns: stateOf(h).target.ns}
	if _, _, err := ctx.walk(0, cp); err != nil {
		h.Fail("spec.location", err)
		return nil
	}
	ops := patch.Diff(orig, cp)
	if len(ops) == 0 {
		return nil
	}
	if err := h.Patch(ops); err != nil {
		h.Fail("spec.location", err)
	}
	return nil
}

// pathTests are the conditions by depth in the location.
type pathTests map[int]string

const (
	mustExist    = "MustExist"
	mustNotExist = "MustNotExist"
)

func (t pathTests) existsOK(d int) bool  { c, ok := t[d]; return !ok || c == mustExist }
func (t pathTests) missingOK(d int) bool { c, ok := t[d]; return !ok || c == mustNotExist }

func compilePathTests(loc location, ts []gkv1.PathTest, errf errfFunc) pathTests {
	out := pathTests{}
	firstNot, lastMust := -1, -1
	for i, pt := range ts {
		f := fmt.Sprintf("spec.parameters.pathTests[%d]", i)
		sub, err := parseLocation(pt.SubPath)
		if err != nil {
			errf(f+".subPath", -1, "%v", err)
			continue
		}
		if len(sub) > len(loc) || !slices.Equal(sub, loc[:len(sub)]) {
			errf(f+".subPath", -1, "%s is not a prefix of the location %s", sub, loc)
			continue
		}
		switch pt.Condition {
		case mustExist:
			lastMust = i
		case mustNotExist:
			if firstNot < 0 {
				firstNot = i
			}
		default:
			errf(f+".condition", -1, "must be MustExist or MustNotExist, not %q", pt.Condition)
			continue
		}
		d := len(sub) - 1
		if prev, ok := out[d]; ok && prev != pt.Condition {
			errf(f, -1, "conflicts with another test of %s", sub)
		}
		out[d] = pt.Condition
	}
	if firstNot >= 0 && lastMust > firstNot {
		errf(fmt.Sprintf("spec.parameters.pathTests[%d]", lastMust), -1, "marked MustExist after a test marked MustNotExist")
	}
	return out
}

// checkKeyNotChanged: the location may not end at the key field of the
// list before it.
func checkKeyNotChanged(loc location, errf errfFunc) {
	if n := len(loc); n >= 2 && loc[n-2].list && !loc[n-1].list && loc[n-1].field == loc[n-2].key {
		errf("spec.location", -1, "cannot change %s, the key of the list", loc[n-1].field)
	}
}

// setter sets the value at the end of a location: in parent[key] (an
// object's member), or as a keyed list's element (setList, Assign only).
type setter interface {
	set(m *mutation, parent map[string]any, key string) error
}

type listSetter interface {
	setElement() (map[string]any, error)
}

// mutation is one mutator applied to one object.
type mutation struct {
	loc   location
	tests pathTests
	set   setter
	obj   any    // the whole object (fromMetadata reads it)
	ns    string // the request's namespace
}

var errMismatch = errors.New("mismatch between the location and the object")

// walk follows the location from step d in cur and returns cur changed
// (a list may grow: the value to keep), whether it changed, or an error.
func (m *mutation) walk(d int, cur any) (any, bool, error) {
	seg := m.loc[d]
	last := d == len(m.loc)-1
	if !seg.list {
		obj, ok := cur.(map[string]any)
		if !ok {
			return cur, false, fmt.Errorf("%w: %s is not an object", errMismatch, m.loc[:d+1])
		}
		child, exists := obj[seg.field]
		if exists && !m.tests.existsOK(d) || !exists && !m.tests.missingOK(d) {
			return cur, false, nil
		}
		if last {
			return cur, true, m.set.set(m, obj, seg.field)
		}
		if !exists {
			if m.loc[d+1].list {
				child = []any{}
			} else {
				child = map[string]any{}
			}
		}
		nv, changed, err := m.walk(d+1, child)
		if err != nil || !changed {
			return cur, false, err
		}
		obj[seg.field] = nv
		return cur, true, nil
	}
	list, ok := cur.([]any)
	if !ok {
		return cur, false, fmt.Errorf("%w: %s is not a list", errMismatch, m.loc[:d])
	}
	list = slices.Clone(list)
	if last {
		return m.setListElement(d, seg, list, cur)
	}
	if seg.glob {
		if _, tested := m.tests[d]; tested && !m.tests.existsOK(d) {
			return cur, false, nil
		}
		changedAny := false
		for i, el := range list {
			if _, ok := el.(map[string]any); !ok {
				return cur, false, fmt.Errorf("%w: an element of %s is not an object", errMismatch, m.loc[:d])
			}
			nv, changed, err := m.walk(d+1, el)
			if err != nil {
				return cur, false, err
			}
			if changed {
				list[i], changedAny = nv, true
			}
		}
		if !changedAny {
			return cur, false, nil
		}
		return list, true, nil
	}
	found, changedAny := false, false
	for i, el := range list {
		em, ok := el.(map[string]any)
		if !ok || !keyMatches(em[seg.key], seg.value) {
			continue
		}
		found = true
		if !m.tests.existsOK(d) {
			return cur, false, nil
		}
		nv, changed, err := m.walk(d+1, em)
		if err != nil {
			return cur, false, err
		}
		if changed {
			list[i], changedAny = nv, true
		}
	}
	if !found {
		if !m.tests.missingOK(d) {
			return cur, false, nil
		}
		el := map[string]any{seg.key: keyValue(seg.value)}
		nv, changed, err := m.walk(d+1, el)
		if err != nil || !changed {
			return cur, false, err
		}
		list, changedAny = append(list, nv), true
	}
	if !changedAny {
		return cur, false, nil
	}
	return list, true, nil
}

// setListElement replaces or appends the element a keyed list's last step
// names (Assign's value is the whole element).
func (m *mutation) setListElement(d int, seg segment, list []any, cur any) (any, bool, error) {
	ls, ok := m.set.(listSetter)
	if !ok || seg.glob {
		return cur, false, fmt.Errorf("%w: cannot set an element of %s", errMismatch, m.loc)
	}
	v, err := ls.setElement()
	if err != nil {
		return cur, false, err
	}
	for i, el := range list {
		em, ok := el.(map[string]any)
		if !ok {
			return cur, false, fmt.Errorf("%w: an element of %s is not an object", errMismatch, m.loc[:d])
		}
		if keyMatches(em[seg.key], seg.value) {
			if !m.tests.existsOK(d) {
				return cur, false, nil
			}
			list[i] = v
			return list, true, nil
		}
	}
	if !m.tests.missingOK(d) {
		return cur, false, nil
	}
	return append(list, v), true, nil
}

// keyMatches compares a list element's key with a selector's value, type
// for type: a string with a string, an integer with an integer.
func keyMatches(got, want any) bool {
	switch w := want.(type) {
	case string:
		s, ok := got.(string)
		return ok && s == w
	case int64:
		n, ok := got.(json.Number)
		if !ok {
			return false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		return err == nil && i == w
	}
	return false
}

func keyValue(v any) any {
	if n, ok := v.(int64); ok {
		return json.Number(strconv.FormatInt(n, 10))
	}
	return v
}

// assignField is Assign's and AssignMetadata's value: given, or the
// object's name or namespace.
type assignField struct {
	value any
	from  string // "name" or "namespace"
}

func compileAssignField(a *gkv1.AssignField, errf errfFunc) *assignField {
	const f = "spec.parameters.assign"
	out := &assignField{}
	if a == nil {
		errf(f, -1, "must set one of value, fromMetadata or externalData")
		return out
	}
	n := 0
	if len(a.Value) > 0 {
		n++
		v, err := value.Decode(a.Value)
		if err != nil {
			errf(f+".value", -1, "%v", err)
		}
		out.value = v
	}
	if a.FromMetadata != nil {
		n++
		switch a.FromMetadata.Field {
		case "name", "namespace":
			out.from = a.FromMetadata.Field
		default:
			errf(f+".fromMetadata.field", -1, "must be name or namespace, not %q", a.FromMetadata.Field)
		}
	}
	if len(a.ExternalData) > 0 {
		n++
		errf(f+".externalData", -1, "external data providers are not supported")
	}
	switch {
	case n == 0:
		errf(f, -1, "must set one of value, fromMetadata or externalData")
	case n > 1:
		errf(f, -1, "must only set one of value, fromMetadata or externalData")
	}
	return out
}

func (a *assignField) get(m *mutation) any {
	switch a.from {
	case "name", "namespace":
		obj, _ := m.obj.(map[string]any)
		md, _ := obj["metadata"].(map[string]any)
		s, _ := md[a.from].(string)
		if a.from == "namespace" && s == "" {
			s = m.ns
		}
		return s
	}
	return value.DeepCopy(a.value)
}

func (a *assignField) set(m *mutation, parent map[string]any, key string) error {
	parent[key] = a.get(m)
	return nil
}

func (a *assignField) setElement() (map[string]any, error) {
	v, ok := value.DeepCopy(a.value).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the value of a list's element must be an object")
	}
	return v, nil
}

func compileAssign(loc location, p *gkv1.MutatorParameters, errf errfFunc) setter {
	checkKeyNotChanged(loc, errf)
	a := compileAssignField(p.Assign, errf)
	if last := loc[len(loc)-1]; last.list {
		switch {
		case last.glob:
			errf("spec.location", -1, "cannot append to a globbed list")
		case a.from != "":
			errf("spec.parameters.assign", -1, "a list's element takes a value, not fromMetadata")
		default:
			v, ok := a.value.(map[string]any)
			if !ok || !keyMatches(v[last.key], last.value) {
				errf("spec.parameters.assign.value", -1, "must be an object whose %s is %v, as the location names it", last.key, last.value)
			}
		}
	}
	return a
}

// modifySet merges values into a list or prunes them from it.
type modifySet struct {
	prune  bool
	values []any
}

func compileModifySet(p *gkv1.MutatorParameters, errf errfFunc) setter {
	out := &modifySet{}
	switch p.Operation {
	case "", "merge":
	case "prune":
		out.prune = true
	default:
		errf("spec.parameters.operation", -1, "must be merge or prune, not %q", p.Operation)
	}
	if p.Values != nil {
		for i, raw := range p.Values.FromList {
			v, err := value.Decode(raw)
			if err != nil {
				errf(fmt.Sprintf("spec.parameters.values.fromList[%d]", i), -1, "%v", err)
			}
			out.values = append(out.values, v)
		}
	}
	return out
}

func (s *modifySet) set(_ *mutation, parent map[string]any, key string) error {
	cur, exists := parent[key]
	if !exists {
		if !s.prune {
			parent[key] = value.DeepCopy(s.values)
		}
		return nil
	}
	list, ok := cur.([]any)
	if !ok {
		return fmt.Errorf("%w: %s is a JSON %s, not a list", errMismatch, key, value.TypeName(cur))
	}
	if s.prune {
		parent[key] = slices.DeleteFunc(slices.Clone(list), func(el any) bool {
			return slices.ContainsFunc(s.values, func(v any) bool { return value.Equal(v, el) })
		})
		return nil
	}
	out := slices.Clone(list)
	for _, v := range s.values {
		if !slices.ContainsFunc(out, func(el any) bool { return value.Equal(v, el) }) {
			out = append(out, value.DeepCopy(v))
		}
	}
	parent[key] = out
	return nil
}

// assignImage replaces the domain, path or tag of an image reference.
type assignImage struct{ domain, path, tag string }

var (
	imageDomain = regexp.MustCompile(`(^\w[\w\-_]*\.[\w\-_\.]*[\w](:\d+)?$)|(^localhost(:\d+)?$)`)
	imagePath   = regexp.MustCompile(`^[a-z0-9]+(?:(?:(?:[._/]|__|[-]*)[a-z0-9]+)+)?$`)
	imageTag    = regexp.MustCompile(`(^:[\w][\w.-]{0,127}$)|(^@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}$)`)
)

func compileAssignImage(p *gkv1.MutatorParameters, errf errfFunc) setter {
	const f = "spec.parameters."
	a := &assignImage{domain: p.AssignDomain, path: p.AssignPath, tag: p.AssignTag}
	if a.domain == "" && a.path == "" && a.tag == "" {
		errf("spec.parameters", -1, "at least one of assignDomain, assignPath and assignTag")
	}
	if a.domain != "" {
		if d, _ := splitDomain(a.domain + "/"); !imageDomain.MatchString(a.domain) || d != a.domain {
			errf(f+"assignDomain", -1, "%q is not a registry domain (a name with a '.', and a port, or localhost)", a.domain)
		}
	}
	if a.path != "" {
		if !imagePath.MatchString(a.path) {
			errf(f+"assignPath", -1, "%q is not an image path (lowercase components separated by '.', '_', '__', '/' or '-')", a.path)
		} else if d, _ := splitDomain(a.path); a.domain == "" && d != "" {
			errf(f+"assignPath", -1, "%q begins with a domain: give it as assignDomain", a.path)
		}
	}
	if a.tag != "" {
		if _, t := splitTag(a.tag); !imageTag.MatchString(a.tag) || t != a.tag {
			errf(f+"assignTag", -1, "%q is not a tag (:tag) or a digest (@algorithm:hex)", a.tag)
		}
	}
	return a
}

// splitDomain splits an image reference's registry domain: the part
// before the first '/' when it has a '.' or a ':' or is localhost.
func splitDomain(s string) (domain, rest string) {
	i := strings.IndexByte(s, '/')
	if i < 0 {
		return "", s
	}
	d := s[:i]
	if !strings.ContainsAny(d, ".:") && d != "localhost" {
		return "", s
	}
	return d, s[i+1:]
}

// splitTag splits a path from its tag: from the first ':' or '@'.
func splitTag(s string) (path, tag string) {
	if i := strings.IndexAny(s, ":@"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

func (a *assignImage) set(_ *mutation, parent map[string]any, key string) error {
	cur := ""
	if v, ok := parent[key]; ok {
		s, isString := v.(string)
		if !isString {
			return fmt.Errorf("%w: %s is a JSON %s, not an image", errMismatch, key, value.TypeName(v))
		}
		cur = s
	}
	domain, rest := splitDomain(cur)
	path, tag := splitTag(rest)
	if a.domain != "" {
		domain = a.domain
	}
	if a.path != "" {
		path = a.path
	}
	if a.tag != "" {
		tag = a.tag
	}
	img := path + tag
	if domain != "" {
		img = domain + "/" + img
	}
	parent[key] = img
	return nil
}
