package gatekeeper

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyvernoreq"
	"github.com/modwright/modwright/internal/lang/rego"
	"github.com/modwright/modwright/internal/value"
)

// Enforcement points, as Gatekeeper names them.
const (
	pointWebhook = "validation.gatekeeper.sh"
	pointAudit   = "audit.gatekeeper.sh"
	pointGator   = "gator.gatekeeper.sh"
)

// actions are a constraint's enforcement actions at the admission webhook
// and in the audit, and whether gator verify counts its violations.
type actions struct {
	action         string // spec.enforcementAction (deny when not given)
	webhook, audit []string
	gator          bool
}

func compileActions(s *gkv1.ConstraintSpec, errf errfFunc) actions {
	switch s.EnforcementAction {
	case "", gkv1.EnforcementDeny, gkv1.EnforcementDryrun, gkv1.EnforcementWarn:
		a := s.EnforcementAction
		if a == "" {
			a = gkv1.EnforcementDeny
		}
		if len(s.ScopedEnforcementActions) > 0 {
			errf("spec.scopedEnforcementActions", -1, "only with enforcementAction scoped")
		}
		return actions{action: a, webhook: []string{a}, audit: []string{a}, gator: true}
	case gkv1.EnforcementScoped:
	default:
		errf("spec.enforcementAction", -1, "must be deny, dryrun, warn or scoped, not %q", s.EnforcementAction)
		return actions{}
	}
	if len(s.ScopedEnforcementActions) == 0 {
		errf("spec.scopedEnforcementActions", -1, "enforcementAction scoped needs scopedEnforcementActions")
	}
	out := actions{action: gkv1.EnforcementScoped}
	for i, sa := range s.ScopedEnforcementActions {
		f := fmt.Sprintf("spec.scopedEnforcementActions[%d]", i)
		switch sa.Action {
		case gkv1.EnforcementDeny, gkv1.EnforcementDryrun, gkv1.EnforcementWarn:
		default:
			errf(f+".action", -1, "must be deny, dryrun or warn, not %q", sa.Action)
			continue
		}
		for j, p := range sa.EnforcementPoints {
			switch p.Name {
			case "*":
				out.webhook, out.audit, out.gator = append(out.webhook, sa.Action), append(out.audit, sa.Action), true
			case pointWebhook:
				out.webhook = append(out.webhook, sa.Action)
			case pointAudit:
				out.audit = append(out.audit, sa.Action)
			case pointGator:
				out.gator = true
			case "vap.k8s.io":
			default:
				errf(fmt.Sprintf("%s.enforcementPoints[%d].name", f, j), -1, "unknown enforcement point %q", p.Name)
			}
		}
	}
	return out
}

// Constraint is a compiled constraint: the rule. It is immutable.
type Constraint struct {
	info   engine.RuleInfo
	name   string
	t      *Template
	match  *matcher
	params any // input.parameters ({} without parameters)
	// paramsVal is params converted for Rego.
	paramsVal rego.Value
	// prog is the template's Rego specialized for params (rego's
	// Specialize), or the template's own where that was not done.
	prog *rego.Program
	// celParams is variables.params (null without parameters), celConst
	// the template's constant variables for them (celCode.constVars).
	celParams any
	celConst  []varValue
	actions   actions
	inv       *inventoryCache
}

var _ engine.Rule = (*Constraint)(nil)

// Info is the rule's kernel information.
func (c *Constraint) Info() *engine.RuleInfo { return &c.info }

// InScope: constraints are placed by kind alone.
func (c *Constraint) InScope(string) bool { return true }

// Match is the constraint's spec.match. A namespaceSelector that cannot
// be decided (the object's Namespace is unknown) matches: Apply answers
// with Gatekeeper's autoreject violation. An object of a namespace
// Gatekeeper's Config exempts from the webhook (at admission) or the
// audit (in a background scan) matches no constraint.
func (c *Constraint) Match(h *engine.Handle) (bool, error) {
	st := stateOf(h)
	process := "webhook"
	if h.Request().Background {
		process = "audit"
	}
	if st.exempted(h, process) {
		return false, nil
	}
	ok, err := c.match.matches(st.target)
	if errors.Is(err, errMissingNamespace) {
		return true, nil
	}
	return ok, engine.InField("spec.match", err)
}

func targetOf(h *engine.Handle, st *evalState) *target {
	q := h.Request()
	obj, _ := h.Object().(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	// The object's own kind, as Gatekeeper matches it.
	t := &target{gvk: gvkOf(obj), labels: stringMap(obj, "labels")}
	if t.gvk.Kind == "" {
		t.gvk = q.Kind
	}
	t.name, _ = md["name"].(string)
	if t.name == "" {
		t.name = q.Name
	}
	t.gen, _ = md["generateName"].(string)
	t.ns = q.Namespace
	if t.ns == "" {
		t.ns, _ = md["namespace"].(string)
	}
	if t.gvk.Kind == "Namespace" && t.gvk.Group == "" {
		t.ns, t.namespace = t.name, true
	}
	t.nsObject = func() (map[string]any, error) { return st.namespace(h) }
	return t
}

func gvkOf(obj map[string]any) engine.GroupVersionKind {
	var g engine.GroupVersionKind
	av, _ := obj["apiVersion"].(string)
	g.Kind, _ = obj["kind"].(string)
	if grp, v, ok := strings.Cut(av, "/"); ok {
		g.Group, g.Version = grp, v
	} else {
		g.Version = av
	}
	return g
}

// namespaceOf reads the Namespace object ns (nil when there is no reader
// or no such namespace is known offline).
func namespaceOf(h *engine.Handle, ns string) (map[string]any, error) {
	return kinds.ReadNamespace(h, ns)
}

// Violation is one violation a constraint found: its message and details.
type Violation struct {
	Msg     string
	Details any
}

// Trace is the detail a constraint records in its engine.RuleTrace: its
// violations and its enforcement actions (at the webhook, in the audit).
type Trace struct {
	Constraint string
	Violations []Violation
	Webhook    []string
	Audit      []string
	// Gator: gator verify counts the violations (a scoped constraint
	// counts only when it names gator.gatekeeper.sh or *).
	Gator bool
}

// ViolationsOf returns a trace detail's violations (nil when the detail is
// not a constraint's).
func ViolationsOf(detail any) []Violation {
	if t, ok := detail.(*Trace); ok {
		return t.Violations
	}
	return nil
}

// AuditResults gives the audit one result per violation (fail), or a
// pass; none when the constraint is not audited (scoped without the
// audit enforcement point).
func (t *Trace) AuditResults(yield func(rule, status, message string)) {
	if len(t.Audit) == 0 {
		return
	}
	if len(t.Violations) == 0 {
		yield("", "pass", "")
		return
	}
	for _, v := range t.Violations {
		yield("", "fail", v.Msg)
	}
}

// Apply evaluates the template's Rego and acts on each violation: a
// denial ("[name] message", as Gatekeeper's webhook words it) or a
// warning; dryrun only records it (the audit reports it).
func (c *Constraint) Apply(h *engine.Handle) error {
	vs, err := c.violations(h)
	if err != nil {
		return err
	}
	vs = bound(vs)
	if h.Tracing() {
		h.Trace().Detail = &Trace{Constraint: c.name, Violations: vs, Webhook: c.actions.webhook, Audit: c.actions.audit, Gator: c.actions.gator}
	}
	if h.Request().Background {
		return nil
	}
	for _, v := range vs {
		msg := "[" + c.name + "] " + v.Msg
		if slices.Contains(c.actions.webhook, gkv1.EnforcementDeny) {
			h.RejectStandalone(msg)
		}
		if slices.Contains(c.actions.webhook, gkv1.EnforcementWarn) {
			h.Warn(msg)
		}
	}
	return nil
}

// Bounds of what one constraint says about one object (Gatekeeper has
// none): the violations kept and the bytes of each message. What a
// template can grow (a message built from the object, a violation per
// element of a list) stays within the admission response.
const (
	MaxViolations   = 100
	MaxMessageBytes = 4096
)

// bound keeps the first MaxViolations violations (a last one says how many
// more there were) and cuts each message to MaxMessageBytes.
func bound(vs []Violation) []Violation {
	if len(vs) > MaxViolations {
		more := len(vs) - MaxViolations + 1
		vs = append(vs[:MaxViolations-1:MaxViolations-1], Violation{Msg: fmt.Sprintf("and %d more violations", more), Details: map[string]any{}})
	}
	for i := range vs {
		if len(vs[i].Msg) > MaxMessageBytes {
			cut := MaxMessageBytes
			for cut > 0 && !utf8.RuneStart(vs[i].Msg[cut]) {
				cut--
			}
			vs[i].Msg = vs[i].Msg[:cut] + "... (cut at 4 KiB)"
		}
	}
	return vs
}

// violations runs the Rego with Gatekeeper's input. As in Gatekeeper, an
// undecidable match and an evaluation error are violations (their
// messages say why); the guardrails' bounds fail the rule.
func (c *Constraint) violations(h *engine.Handle) ([]Violation, error) {
	st := stateOf(h)
	t := st.target
	// Only a namespaceSelector can leave the match undecided (Match let it
	// through): the match runs again for those constraints only.
	if c.match.nsLabels != nil {
		if _, err := c.match.matches(t); errors.Is(err, errMissingNamespace) {
			return []Violation{{Msg: fmt.Sprintf("unable to match constraints: error matching the requested object: %s :failed to run Match criteria: %v", t.name, err)}}, nil
		}
	}
	if c.t.celCode != nil {
		nsObj, _ := st.namespace(h)
		return c.celViolations(h, st, nsObj)
	}
	rv, err := st.reviewValue(h)
	if err != nil {
		return nil, err
	}
	keys, vals := []string{"review", "parameters"}, []rego.Value{rv, c.paramsVal}
	if c.t.inventory {
		inv, err := st.inventory(h, c.inv)
		if err != nil {
			return nil, err
		}
		keys, vals = append(keys, inventoryRoot), append(vals, inv)
	}
	out, err := c.prog.EvalParts(h.Context(), keys, vals)
	if err != nil {
		if errors.Is(err, rego.ErrEvalTimeout) || errors.Is(err, rego.ErrEvalPanic) || h.Context().Err() != nil {
			return nil, engine.InField("spec.targets[0].rego", err)
		}
		return []Violation{{Msg: err.Error()}}, nil
	}
	set, _ := out.([]any)
	vs := make([]Violation, 0, len(set))
	for _, r := range set {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		raw, ok := m["msg"]
		if !ok {
			continue // Gatekeeper drops it
		}
		msg, ok := raw.(string)
		if !ok {
			return nil, engine.InField("spec.targets[0].rego", fmt.Errorf("a violation's msg must be a string, not %T", raw))
		}
		d, ok := m["details"]
		if !ok {
			d = map[string]any{}
		}
		vs = append(vs, Violation{Msg: msg, Details: d})
	}
	return vs, nil
}

// review is Gatekeeper's input.review: the admission request as its JSON
// reads (empty members left out where the API's types omit them), with
// the object (the old object on DELETE), the old object and the
// namespace's object ({} when unknown).
func review(h *engine.Handle, nsObj map[string]any) map[string]any {
	q := h.Request()
	obj := h.Object()
	g := q.Kind
	if m, ok := obj.(map[string]any); ok && g.Kind == "" {
		g = gvkOf(m)
	}
	user := map[string]any{}
	if u := q.UserInfo; u.Username != "" || u.UID != "" || len(u.Groups) > 0 || len(u.Extra) > 0 {
		user = kyvernoreq.Request(q, "")["userInfo"].(map[string]any)
	}
	r := map[string]any{
		"uid":       q.UID,
		"kind":      map[string]any{"group": g.Group, "version": g.Version, "kind": g.Kind},
		"resource":  map[string]any{"group": q.Resource.Group, "version": q.Resource.Version, "resource": q.Resource.Resource},
		"operation": string(q.Operation),
		"userInfo":  user,
		"object":    obj,
		"oldObject": nil,
		"options":   nil,
	}
	if q.Name != "" {
		r["name"] = q.Name
	} else if m, ok := obj.(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok && md["name"] != nil {
			r["name"] = md["name"]
		}
	}
	if q.Namespace != "" {
		r["namespace"] = q.Namespace
	}
	if q.SubResource != "" {
		r["subResource"] = q.SubResource
	}
	if q.DryRun {
		r["dryRun"] = true
	}
	if old := oldObject(q); old != nil {
		r["oldObject"] = old
	}
	if len(q.Options) > 0 {
		if v, err := value.Decode(q.Options); err == nil {
			r["options"] = v
		}
	}
	if nsObj == nil {
		nsObj = map[string]any{}
	}
	r["namespaceObject"] = nsObj
	return r
}

// oldObject is the request's old object, decoded (nil without one).
func oldObject(q *engine.Request) any {
	if q.OldObject != nil {
		return q.OldObject
	}
	if len(q.OldObjectJSON) > 0 {
		if v, err := value.Decode(q.OldObjectJSON); err == nil {
			return v
		}
	}
	return nil
}

// layout places objects as Gatekeeper's data.inventory does.
func layout(objs []map[string]any) map[string]any {
	cluster, namespaced := map[string]any{}, map[string]any{}
	child := func(m map[string]any, k string) map[string]any {
		c, ok := m[k].(map[string]any)
		if !ok {
			c = map[string]any{}
			m[k] = c
		}
		return c
	}
	for _, o := range objs {
		av, _ := o["apiVersion"].(string)
		kind, _ := o["kind"].(string)
		md, _ := o["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		if av == "" || kind == "" || name == "" {
			continue
		}
		root := cluster
		if ns != "" {
			root = child(namespaced, ns)
		}
		child(child(root, av), kind)[name] = o
	}
	return map[string]any{"cluster": cluster, "namespace": namespaced}
}

// Specialized reports whether the constraint runs its template's Rego
// specialized for its parameters (Kind.Compile).
func (c *Constraint) Specialized() bool { return c.prog != nil && c.prog != c.t.rego }
