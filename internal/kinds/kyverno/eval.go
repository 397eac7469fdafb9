package kyverno

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/images"
	"github.com/modwright/modwright/internal/kinds/kyvernoreq"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/conditions"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/pattern"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// evalState is what every policy of one evaluation shares: Kyverno's
// context document for the object's version, the namespace's labels.
type evalState struct {
	version  uint64
	doc      map[string]any
	req      map[string]any // Kyverno's request (JSON form), for CEL
	reqDone  bool
	nsDone   bool
	nsLabels map[string]string
	nsErr    error
	// The CEL policies': the resource admitted (guessed from the kind
	// offline), the namespace's object.
	gvrDone  bool
	gvr      schema.GroupVersionResource
	nsObjFor string
	nsObj    map[string]any
	// selLabels: nsLabels with kubernetes.io/metadata.name (the request's
	// namespace is one per evaluation).
	selLabels map[string]string
}

func stateOf(h *engine.Handle) *evalState { return engine.KindStateOf[evalState](h) }

// document is Kyverno's context: request (with object and oldObject),
// serviceAccountName/Namespace, images; in the library's form.
func (st *evalState) document(h *engine.Handle) (map[string]any, error) {
	if st.doc != nil && st.version == h.ObjectVersion() {
		return st.doc, nil
	}
	q := h.Request()
	libReq, err := jmespath.Prepare(st.request(h))
	if err != nil {
		return nil, err
	}
	// A copy: Prepare shares maps without numbers, and the request gets the
	// objects here while CEL reads it as it is.
	req := maps.Clone(libReq.(map[string]any))
	obj := h.Object()
	libObj, err := jmespath.Prepare(obj)
	if err != nil {
		return nil, err
	}
	req["object"] = libObj
	req["oldObject"] = nil
	switch q.Operation {
	case rules.Delete:
		req["oldObject"] = libObj
	case rules.Update:
		old := q.OldObject
		if old == nil && q.OldObjectJSON != nil {
			if old, err = value.Decode(q.OldObjectJSON); err != nil {
				return nil, err
			}
		}
		if req["oldObject"], err = jmespath.Prepare(old); err != nil {
			return nil, err
		}
	}
	if q.UserInfo.Username == "" && len(q.UserInfo.Groups) == 0 {
		delete(req, "userInfo") // offline without a user, as kyverno test
	}
	doc := map[string]any{"request": req}
	if rest, ok := strings.CutPrefix(q.UserInfo.Username, "system:serviceaccount:"); ok {
		if ns, name, ok := strings.Cut(rest, ":"); ok {
			doc["serviceAccountNamespace"], doc["serviceAccountName"] = ns, name
		}
	}
	if m, ok := obj.(map[string]any); ok {
		if imgs, err := images.Extract(h.Kind(), m); err == nil && imgs != nil {
			if doc["images"], err = jmespath.Prepare(imgs); err != nil {
				return nil, err
			}
		}
	}
	st.doc, st.version = doc, h.ObjectVersion()
	return doc, nil
}

// request is Kyverno's request of the evaluation, built once.
func (st *evalState) request(h *engine.Handle) map[string]any {
	if !st.reqDone {
		st.req, st.reqDone = kyvernoreq.Request(h.Request(), h.Kind()), true
	}
	return st.req
}

// namespaceLabels are the labels of the object's namespace: none when it
// is not found or cannot be read offline (as kyverno test without values).
func (st *evalState) namespaceLabels(h *engine.Handle, ns string) (map[string]string, error) {
	if st.nsDone {
		return st.nsLabels, st.nsErr
	}
	st.nsDone = true
	obj, err := kinds.ReadNamespace(h, ns)
	if err != nil {
		st.nsErr = err
		return nil, err
	}
	st.nsLabels = stringMap(obj, "labels")
	return st.nsLabels, nil
}

func stringMap(obj any, member string) map[string]string { return kinds.MetadataStrings(obj, member) }

// target is what the rules' match reads of the request.
func (p *Policy) target(h *engine.Handle) *target {
	q := h.Request()
	obj, _ := h.Object().(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	t := &target{gvk: q.Kind, sub: q.SubResource, op: q.Operation, user: q.UserInfo,
		labels: stringMap(obj, "labels"), annotations: stringMap(obj, "annotations")}
	if t.gvk.Kind == "" {
		av, _ := obj["apiVersion"].(string)
		t.gvk.Kind, _ = obj["kind"].(string)
		if g, v, ok := strings.Cut(av, "/"); ok {
			t.gvk.Group, t.gvk.Version = g, v
		} else {
			t.gvk.Version = av
		}
	}
	t.name, _ = md["name"].(string)
	if t.name == "" {
		if t.name, _ = md["generateName"].(string); t.name == "" {
			t.name = q.Name
		}
	}
	t.ns = q.Namespace
	if t.ns == "" {
		t.ns, _ = md["namespace"].(string)
	}
	if t.gvk.Kind == "Namespace" && t.gvk.Group == "" {
		t.ns = t.name
	}
	ns := t.ns
	t.nsLabels = func() (map[string]string, error) { return stateOf(h).namespaceLabels(h, ns) }
	t.roles = func() ([]string, []string, error) {
		rr := h.Roles()
		if rr == nil {
			return nil, nil, nil
		}
		return rr.Roles(h.Context(), q.UserInfo, q.Namespace)
	}
	return t
}

// applies is a rule's match and exclude (a synchronizing generate rule's,
// on a DELETE, as for the trigger's creation).
func (r *rule) applies(t *target) (bool, error) {
	if t.op == rules.Delete && r.syncsOnDelete() {
		created := *t
		created.op = rules.Create
		t = &created
	}
	ok, err := r.match.matches(t)
	if !ok || err != nil {
		return false, err
	}
	if r.exclude != nil {
		ex, err := r.exclude.excludes(t)
		if ex || err != nil {
			return false, err
		}
	}
	return true, nil
}

// Match reports whether a rule of the policy matches the object.
func (p *Policy) Match(h *engine.Handle) (bool, error) {
	t := p.target(h)
	for _, r := range p.rules {
		ok, err := r.applies(t)
		if err != nil {
			return false, engine.InField(r.field+".match", err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// Apply evaluates every rule that matches, records their results, and
// rejects (Enforce), warns (Audit) or fails (an error) as Kyverno's
// admission does.
func (p *Policy) Apply(h *engine.Handle) error {
	if h.Request().Background && !p.background {
		// background: false: admission only, as Kyverno (no results).
		if tr := h.Trace(); tr != nil {
			tr.Detail = &Trace{}
		}
		return nil
	}
	t := p.target(h)
	var base *scope
	var results []RuleResult
	var evaluated []*rule // the rule of each result
	mutating := h.Phase() == engine.Mutate
	for _, r := range p.rules {
		if r.mutatesObject() != mutating {
			continue // mutate rules run when mutating, the others when validating
		}
		if (r.typ == "generate" || r.m.existing()) && h.Request().Background {
			continue // a background scan reports; it generates and mutates nothing
		}
		ok, err := r.applies(t)
		if err != nil {
			return engine.InField(r.field+".match", err)
		}
		if !ok {
			continue
		}
		if base == nil {
			if base, err = p.base(h, stateOf(h)); err != nil {
				return err
			}
		}
		res, ok := p.evalRule(h, r, t, base)
		if err := h.Context().Err(); err != nil {
			return err
		}
		if !ok {
			continue // no result (a foreach with no element, a pattern on DELETE)
		}
		res.Policy = p.info.Key
		for i := range res.more {
			res.more[i].Policy = p.info.Key
		}
		if r.mutatesObject() && res.Status == Pass {
			// The rules after it see the object as it left it.
			base, t = nil, p.target(h)
		}
		if res.Status == Fail && !p.scored {
			res.Status = Warn
		}
		if res.Status == Fail {
			res.Enforced = p.enforced(h, r, t)
		}
		more := res.more
		res.more = nil
		results = append(results, res)
		evaluated = append(evaluated, r)
		for _, m := range more {
			results = append(results, m)
			evaluated = append(evaluated, r)
		}
		if p.applyOne && (res.Status == Pass || res.Status == Fail) {
			break
		}
	}
	if tr := h.Trace(); tr != nil {
		tr.Detail = &Trace{Results: results}
	}
	p.opts.metrics.record(p, h.Request(), results, evaluated)
	for i, res := range results {
		switch res.Status {
		case Fail:
			if res.Enforced {
				h.Reject(res.Rule+": "+res.Message, nil)
			} else {
				h.Warn(fmt.Sprintf("policy %s, rule %s (Audit): %s", p.info.Key, res.Rule, res.Message))
			}
		case Warn:
			h.Warn(fmt.Sprintf("policy %s, rule %s: %s", p.info.Key, res.Rule, res.Message))
		case Error:
			h.Fail(evaluated[i].field, errors.New(res.Message))
			if p.failClosed {
				h.Reject(fmt.Sprintf("%s: error (failurePolicy Fail): %s", res.Rule, res.Message), nil)
			}
		}
	}
	return nil
}

// enforced is the failure action of a failing rule: the rule's overrides,
// the rule's action, the policy's overrides, the policy's action.
func (p *Policy) enforced(h *engine.Handle, r *rule, t *target) bool {
	for _, ovs := range [][]override{r.overrides} {
		if e, ok := p.override(h, ovs, t); ok {
			return e
		}
	}
	if r.action != "" {
		return enforce(r.action)
	}
	if e, ok := p.override(h, p.overrides, t); ok {
		return e
	}
	return p.enforce
}

func (p *Policy) override(h *engine.Handle, ovs []override, t *target) (enforced, ok bool) {
	for _, o := range ovs {
		if len(o.namespaces) > 0 {
			found := false
			for _, n := range o.namespaces {
				if lang.MatchWildcard(n, t.ns) {
					found = true
				}
			}
			if !found {
				continue
			}
		}
		if o.selector != nil {
			ls, err := t.nsLabels()
			if err != nil || !o.selector.Matches(labels.Set(ls)) {
				continue
			}
		}
		return o.enforce, true
	}
	return false, false
}

// evalRule evaluates one matching rule; ok is false when Kyverno gives no
// result.
func (p *Policy) evalRule(h *engine.Handle, r *rule, t *target, base *scope) (res RuleResult, ok bool) {
	res.Rule = r.name
	if r.notYet != "" {
		return RuleResult{Rule: r.name, Status: Error, Message: r.notYet}, true
	}
	s := base
	if vals := p.opts.values; vals != nil {
		for _, kv := range vals.ForRule(p.name, r.name) {
			lib, err := jmespath.Prepare(kv.Value)
			if err != nil {
				return errorResult(r, "failed to load context", err), true
			}
			s = s.with(kv.Name, lib)
		}
	}
	s, err := s.load(h, r.context)
	if err != nil {
		return errorResult(r, "failed to load context", err), true
	}
	if r.pre != nil {
		pass, msg, err := r.pre.Eval(s.ctx, s, nil)
		if err != nil {
			return errorResult(r, "failed to evaluate preconditions", err), true
		}
		if !pass {
			return RuleResult{Rule: r.name, Status: Skip, Message: joinNonEmpty("; ", "preconditions not met", msg)}, true
		}
	}
	// pssEx are the matching exceptions of a podSecurity rule when each
	// has podSecurity controls: they exclude those controls, as Kyverno.
	var pssEx []*Exception
	if len(p.opts.exceptions) > 0 || p.opts.exceptionSource != nil {
		exs, err := p.exempted(h, r, t, s)
		if err != nil {
			return errorResult(r, "failed to get exceptions", err), true
		}
		switch {
		case len(exs) == 0:
		case r.v != nil && r.v.pss != nil && !slices.ContainsFunc(exs, func(ex *Exception) bool { return len(ex.pss) == 0 }):
			pssEx = exs
		default:
			return exceptionSkip(r, exceptionKeys(exs)), true
		}
	}
	if r.m.existing() {
		rs := p.mutateExisting(h, r, s)
		if len(rs) == 0 {
			return RuleResult{}, false // no target: no result, as Kyverno
		}
		rs[0].more = rs[1:]
		return rs[0], true
	}
	if r.m != nil {
		return p.mutateRule(h, r, s), true
	}
	if r.g != nil {
		return p.generateRule(h, r, s)
	}
	if r.v == nil {
		return RuleResult{Rule: r.name, Status: Error, Message: "the rule has no validate"}, true
	}
	res, ok = p.validateRule(h, r, s, pssEx)
	if ok && res.Status == Fail && p.existingViolation(h, r, s, pssEx) {
		return RuleResult{Rule: r.name, Status: Skip, Message: "skipping the rule evaluation as pre-existing violations are allowed"}, true
	}
	return res, ok
}

// existingViolation: an UPDATE of an object that already failed an
// Enforce rule is not blocked by it (validate.allowExistingViolations,
// true by default): the old object is validated as if created.
func (p *Policy) existingViolation(h *engine.Handle, r *rule, s *scope, pssEx []*Exception) bool {
	if h.Request().Operation != rules.Update || !r.allowExisting {
		return false
	}
	if (r.action != "" && !enforce(r.action)) || (r.action == "" && !p.enforce) {
		return false
	}
	req, _ := s.doc["request"].(map[string]any)
	old := req["oldObject"]
	if old == nil {
		return false
	}
	os := s.with("request.object", old).with("request.operation", "CREATE")
	os.obj = jmespath.Result(old)
	if r.pre != nil {
		if pass, _, err := r.pre.Eval(os.ctx, os, nil); err != nil || !pass {
			return false // the old object does not match: its result is a skip
		}
	}
	res, ok := p.validateRule(h, r, os, pssEx)
	return ok && res.Status == Fail
}

// validateRule is a rule's validate: validate.cel, podSecurity, or
// Kyverno's validator (deny, pattern, anyPattern, foreach).
func (p *Policy) validateRule(h *engine.Handle, r *rule, s *scope, pssEx []*Exception) (RuleResult, bool) {
	switch {
	case r.v.cel != nil:
		return p.validateCEL(h, r, s), true
	case r.v.pss != nil:
		return p.validatePSS(h, r, s, pssEx)
	}
	return p.validate(h, r, s, r.v.deny, r.v.pattern, r.v.anyPattern, r.v.foreach, nil, 0)
}

func errorResult(r *rule, what string, err error) RuleResult {
	return RuleResult{Rule: r.name, Status: Error, Message: what + ": " + err.Error()}
}

func joinNonEmpty(sep string, ss ...string) string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}

// validate is Kyverno's validator at one level: deny, else pattern, else
// anyPattern, else foreach. element is the foreach element validated in
// place of the object (nil: the object).
func (p *Policy) validate(h *engine.Handle, r *rule, s *scope, deny *conditions.Set, pat *patternSlot, anyPat []*patternSlot, fe []*foreachV, element any, nesting int) (RuleResult, bool) {
	switch {
	case deny != nil:
		return p.deny(r, s, deny), true
	case pat != nil:
		target, ok := p.patternTarget(h, s, element)
		if !ok {
			return RuleResult{}, false
		}
		return p.matchPattern(r, s, pat, target), true
	case anyPat != nil:
		target, ok := p.patternTarget(h, s, element)
		if !ok {
			return RuleResult{}, false
		}
		return p.matchAnyPattern(r, s, anyPat, target), true
	case fe != nil:
		return p.foreach(h, r, s, fe, nesting)
	}
	return RuleResult{}, false
}

// patternTarget is what a pattern validates: the foreach element, or the
// object (none on DELETE).
func (p *Policy) patternTarget(h *engine.Handle, s *scope, element any) (any, bool) {
	if element != nil {
		return element, true
	}
	if s.delete {
		return nil, false
	}
	return s.obj, true
}

func (p *Policy) deny(r *rule, s *scope, deny *conditions.Set) RuleResult {
	denied, msg, err := deny.Eval(s.ctx, s, nil)
	if err != nil {
		return errorResult(r, "failed to check deny conditions", err)
	}
	if !denied {
		return RuleResult{Rule: r.name, Status: Pass, Message: fmt.Sprintf("validation rule '%s' passed.", r.name)}
	}
	if r.v.rawMessage == "" && msg == "" {
		return RuleResult{Rule: r.name, Status: Fail, Message: fmt.Sprintf("validation error: rule %s failed", r.name)}
	}
	// The rule's message through its template compiled at load, then the
	// conditions' messages (rendered by the conditions already: text an
	// object's values made is never read as variables again).
	m, err := p.message(r, s)
	if err != nil {
		return RuleResult{Rule: r.name, Status: Fail, Message: msg}
	}
	return RuleResult{Rule: r.name, Status: Fail, Message: joinNonEmpty("; ", m, msg)}
}

// message is the rule's validate.message with its variables.
func (p *Policy) message(r *rule, s *scope) (string, error) {
	if r.v.message == nil {
		return r.v.rawMessage, nil
	}
	return r.v.message.RenderEscaped(s.ctx, s, nil)
}

func (p *Policy) compilePattern(s *scope, ps *patternSlot) (*pattern.Pattern, error) {
	if ps.p != nil {
		return ps.p, nil
	}
	v, err := ps.doc.Substitute(s.ctx, s)
	if err != nil {
		return nil, err
	}
	return pattern.Compile(v)
}

func (p *Policy) matchPattern(r *rule, s *scope, ps *patternSlot, target any) RuleResult {
	pt, err := p.compilePattern(s, ps)
	if err != nil {
		return errorResult(r, "variable substitution failed", err)
	}
	f := pt.Match(target)
	switch {
	case f == nil:
		return RuleResult{Rule: r.name, Status: Pass, Message: fmt.Sprintf("validation rule '%s' passed.", r.name)}
	case f.Skip:
		return RuleResult{Rule: r.name, Status: Skip, Message: f.Msg}
	case f.Path == "":
		return RuleResult{Rule: r.name, Status: Error, Message: p.failureMessage(r, s, f, "")}
	}
	return RuleResult{Rule: r.name, Status: Fail, Message: p.failureMessage(r, s, f, f.Path)}
}

// failureMessage is Kyverno's message of a failed pattern.
func (p *Policy) failureMessage(r *rule, s *scope, f *pattern.Failure, path string) string {
	if r.v.rawMessage == "" {
		if path != "" {
			return fmt.Sprintf("validation error: rule %s failed at path %s", r.name, path)
		}
		return fmt.Sprintf("validation error: rule %s execution error: %s", r.name, f.Msg)
	}
	m, err := p.message(r, s)
	if err != nil {
		return fmt.Sprintf("validation error: variables substitution error in rule %s execution error: %s", r.name, f.Msg)
	}
	if !strings.HasSuffix(m, ".") {
		m += "."
	}
	if path != "" {
		return fmt.Sprintf("validation error: %s rule %s failed at path %s", m, r.name, path)
	}
	return fmt.Sprintf("validation error: %s rule %s execution error: %s", m, r.name, f.Msg)
}

func (p *Policy) matchAnyPattern(r *rule, s *scope, pats []*patternSlot, target any) RuleResult {
	var failures, skips []string
	for i, ps := range pats {
		pt, err := p.compilePattern(s, ps)
		if err != nil {
			return errorResult(r, "variable substitution failed", err)
		}
		f := pt.Match(target)
		switch {
		case f == nil:
			return RuleResult{Rule: r.name, Status: Pass, Message: fmt.Sprintf("validation rule '%s' anyPattern[%d] passed.", r.name, i)}
		case f.Skip:
			skips = append(skips, fmt.Sprintf("rule %s[%d] skipped: %s", r.name, i, f.Msg))
		case f.Path == "":
			failures = append(failures, fmt.Sprintf("rule %s[%d] failed: %s", r.name, i, f.Msg))
		default:
			failures = append(failures, fmt.Sprintf("rule %s[%d] failed at path %s", r.name, i, f.Path))
		}
	}
	if len(failures) == 0 && len(skips) > 0 {
		return RuleResult{Rule: r.name, Status: Skip, Message: strings.Join(skips, " ")}
	}
	if len(failures) > 0 {
		errs := strings.Join(failures, " ")
		if r.v.rawMessage == "" {
			return RuleResult{Rule: r.name, Status: Fail, Message: "validation error: " + errs}
		}
		m, err := p.message(r, s)
		if err != nil {
			return RuleResult{Rule: r.name, Status: Fail, Message: fmt.Sprintf("validation error: variables substitution error in rule %s execution error: %s", r.name, errs)}
		}
		if strings.HasSuffix(m, ".") {
			return RuleResult{Rule: r.name, Status: Fail, Message: fmt.Sprintf("validation error: %s %s", m, errs)}
		}
		return RuleResult{Rule: r.name, Status: Fail, Message: fmt.Sprintf("validation error: %s. %s", m, errs)}
	}
	return RuleResult{Rule: r.name, Status: Pass, Message: r.v.rawMessage}
}

// foreach is Kyverno's validate.foreach: each list's elements validated
// in turn; the first element that does not pass decides; no element
// validated gives no result.
func (p *Policy) foreach(h *engine.Handle, r *rule, s *scope, fes []*foreachV, nesting int) (RuleResult, bool) {
	applied := 0
	var listErr error
	for _, fe := range fes {
		if fe.list == nil {
			continue
		}
		v, err := s.search(fe.list)
		if err != nil {
			if errors.Is(err, subst.ErrUndefined) {
				continue
			}
			listErr = err
			continue
		}
		var elems []any
		switch t := v.(type) {
		case []any:
			elems = t
		default:
			elems = []any{t}
		}
		res, n, ok := p.elements(h, r, s, fe, elems, nesting)
		if ok && res.Status != Pass {
			return res, true
		}
		applied += n
	}
	if applied == 0 {
		if listErr != nil {
			return errorResult(r, "failed to evaluate list", listErr), true
		}
		return RuleResult{}, false
	}
	return RuleResult{Rule: r.name, Status: Pass, Message: "rule passed"}, true
}

func (p *Policy) elements(h *engine.Handle, r *rule, s *scope, fe *foreachV, elems []any, nesting int) (RuleResult, int, bool) {
	applied := 0
	for i, el := range elems {
		if el == nil {
			continue
		}
		_, isMap := el.(map[string]any)
		if fe.elementScope != nil && *fe.elementScope && !isMap {
			return errorResult(r, "failed to process foreach", fmt.Errorf("cannot use elementScope=true foreach rules for elements that are not maps, expected type=map got type=%T", el)), applied, true
		}
		es := s.with("element", el).with("elementIndex", float64(i)).
			with(fmt.Sprintf("element%d", nesting), el).with(fmt.Sprintf("elementIndex%d", nesting), float64(i))
		var element any
		if isMap && (fe.elementScope == nil || *fe.elementScope) {
			element = jmespath.Result(el)
		}
		es, err := es.load(h, fe.context)
		if err != nil {
			return errorResult(r, "failed to load context", err), applied, true
		}
		if fe.pre != nil {
			pass, _, err := fe.pre.Eval(es.ctx, es, nil)
			if err != nil || !pass {
				continue
			}
		}
		res, ok := p.validate(h, r, es, fe.deny, fe.pattern, fe.anyPattern, fe.foreach, element, nesting+1)
		if !ok || res.Status == Skip {
			continue
		}
		if res.Status != Pass {
			res.Message = "validation failure: " + res.Message
			return res, applied, true
		}
		applied++
	}
	return RuleResult{Rule: r.name, Status: Pass}, applied, true
}

// jsonOf is a value of the library's form as a JSON value tree.
func jsonOf(v any) any { return jmespath.Result(v) }

func isNoReader(err error) bool { return errors.Is(err, lang.ErrNoReader) }
