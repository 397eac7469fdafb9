package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyvernoreq"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// ErrBudget is in the chain of the error of a policy whose expressions
// spent the runtime cost budget of one phase (cel.RuntimeCostBudget), with
// lang.ErrLimit.
var ErrBudget = errors.New("the policy's runtime cost budget is spent; no further expressions were evaluated")

// ErrNoNamespace is in the chain of the error of a namespaceSelector that
// cannot be decided: the Namespace's labels are not available (offline,
// pass the Namespace with --context).
var ErrNoNamespace = errors.New("the object's Namespace is not available")

// InScope reports whether a ClusterPolicy whose resources name namespaces
// may apply to objects of namespace ns.
func (r *Rule) InScope(ns string) bool {
	for _, f := range r.match.resources {
		if f.namespaces == nil || globAny(f.namespaces, ns) {
			return true
		}
	}
	return len(r.match.resources) == 0
}

// Match decides the static match (resources, selectors, exclusions), then
// the match conditions.
func (r *Rule) Match(h *engine.Handle) (bool, error) {
	obj, _ := h.Object().(map[string]any)
	in := r.input(h, obj)
	ok, err := r.match.matches(h, in, false)
	if err != nil || !ok {
		return false, err
	}
	if r.exclude != nil {
		ex, err := r.exclude.matches(h, in, true)
		if err != nil || ex {
			return false, err
		}
	}
	if len(r.conditions) == 0 {
		return true, nil
	}
	ev := r.newRun(h, obj)
	for i := range r.conditions {
		c := &r.conditions[i]
		var (
			ok  bool
			msg string
			err error
		)
		if c.conds != nil {
			ok, msg, err = ev.evalConds(c.conds)
		} else {
			ok, err = ev.exprBool(&c.e, &ev.act)
			ev.step(stepCondition, i, c.field, c.e.source(), ok, err)
		}
		if err != nil {
			return false, engine.InField(c.field, err)
		}
		if !ok {
			if h.Tracing() {
				h.Trace().Reason = fmt.Sprintf("match condition %q is false", c.name)
				if msg != "" {
					h.Trace().Reason += ": " + msg
				}
			}
			return false, nil
		}
	}
	return true, nil
}

// Apply runs the mutations (Mutate phase), or the validations and audit
// annotations (Validate phase).
func (r *Rule) Apply(h *engine.Handle) error {
	obj, _ := h.Object().(map[string]any)
	ev := r.newRun(h, obj)
	if h.Phase() == engine.Mutate {
		return ev.mutate(obj)
	}
	for i := range r.validates {
		if err := ev.validate(i, obj); err != nil {
			return err
		}
	}
	for i, a := range r.audits {
		v, err := ev.eval(a.prog, &ev.act)
		ev.step(stepAudit, i, a.field, a.prog.Source(), v, err)
		if err != nil {
			return engine.InField(a.field, err)
		}
		switch s := v.(type) {
		case nil:
		case string:
			h.Annotate(a.key, s)
		default:
			return engine.InField(a.field, fmt.Errorf("the value is a %s, want a string or null", value.TypeName(v)))
		}
	}
	return nil
}

// objectInput is what the static match reads of the object.
type objectInput struct {
	group, kind, name, ns string
	labels                labelView
}

// labelView is an object's metadata.labels as labels.Labels, read in place
// (members that are not strings are absent): the static match copies
// nothing.
type labelView map[string]any

var _ labels.Labels = labelView(nil)

func (l labelView) Has(k string) bool {
	_, ok := l[k].(string)
	return ok
}

func (l labelView) Get(k string) string {
	s, _ := l[k].(string)
	return s
}

func (l labelView) Lookup(k string) (string, bool) {
	s, ok := l[k].(string)
	return s, ok
}

func (r *Rule) input(h *engine.Handle, obj map[string]any) objectInput {
	in := objectInput{kind: h.Kind(), ns: h.Namespace()}
	if av, _ := obj["apiVersion"].(string); av != "" {
		if g, _, ok := strings.Cut(av, "/"); ok {
			in.group = g
		}
	} else {
		in.group = h.Request().Kind.Group
	}
	md, _ := obj["metadata"].(map[string]any)
	in.name, _ = md["name"].(string)
	if in.name == "" {
		in.name = h.Request().Name
	}
	in.labels, _ = md["labels"].(map[string]any)
	return in
}

// matches decides a matcher: for a match, every part must hold; for an
// exclude (exclude true), the parts that are set must all hold, and one at
// least must be.
func (m *matcher) matches(h *engine.Handle, in objectInput, exclude bool) (bool, error) {
	if exclude && len(m.resources) == 0 && m.namespaceSelector == nil && m.objectSelector == nil {
		return false, nil
	}
	if len(m.resources) > 0 {
		hit := false
		for i := range m.resources {
			if m.resources[i].matches(in) {
				hit = true
				break
			}
		}
		if !hit {
			return false, nil
		}
	}
	if m.objectSelector != nil && !m.objectSelector.Matches(in.labels) {
		return false, nil
	}
	if m.namespaceSelector != nil {
		ls, err := namespaceLabels(h, in)
		if err != nil {
			return false, engine.InField(m.field(exclude)+".namespaceSelector", err)
		}
		if !m.namespaceSelector.Matches(ls) {
			return false, nil
		}
	}
	return true, nil
}

func (m *matcher) field(exclude bool) string {
	if exclude {
		return "spec.match.exclude"
	}
	return "spec.match"
}

func (f *resourceFilter) matches(in objectInput) bool {
	return (f.groups == nil || slices.Contains(f.groups, in.group)) &&
		(f.kinds == nil || slices.Contains(f.kinds, in.kind)) &&
		(f.names == nil || globAny(f.names, in.name)) &&
		(f.namespaces == nil || globAny(f.namespaces, in.ns))
}

func globAny(globs []string, s string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

// namespaceLabels returns the labels of the object's namespace: a
// Namespace's own, none for other cluster-scoped objects, else the
// Namespace's read through the engine's object reader.
func namespaceLabels(h *engine.Handle, in objectInput) (labels.Labels, error) {
	if in.ns == "" {
		if in.kind == "Namespace" && in.group == "" {
			return in.labels, nil
		}
		return labelView(nil), nil
	}
	nsObj, err := sharedOf(h).namespace(h)
	if err != nil {
		return nil, err
	}
	if nsObj == nil {
		return nil, fmt.Errorf("%w: %w", ErrNoNamespace, engine.NoReader(fmt.Sprintf("Namespace %q not found (offline, pass it with --context)", in.ns)))
	}
	md, _ := nsObj["metadata"].(map[string]any)
	ls, _ := md["labels"].(map[string]any)
	return labelView(ls), nil
}

// shared is what every policy of one evaluation reads alike, computed
// once: the Namespace, the old object, the request's attributes; and the
// storage of the runs, reused from one policy to the next (the engine
// runs one rule at a time, and a run ends with its Match or Apply call).
type shared struct {
	ns      map[string]any
	nsErr   error
	nsDone  bool
	old     any
	oldDone bool
	req     map[string]any

	run  run
	vars map[string]any
	// patches is the storage of the operations of mutateDirect's
	// JSONPatches, from one Policy to the next.
	patches cel.PatchStorage

	// memo holds the value of boolean CEL programs that read only what is
	// the same for every Policy of the evaluation (the object, the old
	// object, the request, the namespace): one program is shared by every
	// Policy with the same expression (cel.EnvCache), so the same match
	// condition in many Policies is evaluated once, and again only when a
	// patch wrote what it reads (Handle.ObjectUnchanged).
	memo map[memoKey]memoBool
	// varMemo holds the values of the variables every Policy that defines
	// them alike computes alike (variable.memo), by version of the object:
	// `spec: object.spec.template.spec` in many Policies is evaluated once.
	varMemo map[varMemoKey]memoVal

	// Kyverno's context (JMESPath, {{ }}): the run's document, the
	// request with the object as last built, the roles, the images.
	doc                   map[string]any
	kreq                  map[string]any
	kreqFor               any
	kreqRoles             bool
	rolesDone             bool
	rolesV, clusterRolesV []any
	rolesErr              error
	imgs, imgsFor         any
	imgsErr               error
	imgsDone              bool
}

var _ engine.StateResetter = (*shared)(nil)

// maxKeptMemo is the most remembered values a shared state keeps the
// storage of for the engine's next evaluation.
const maxKeptMemo = 1024

// ResetState keeps the storage of the runs and of the maps for the
// engine's next evaluation, and nothing of this one.
func (s *shared) ResetState() bool {
	if len(s.memo) > maxKeptMemo || len(s.varMemo) > maxKeptMemo {
		return false
	}
	r := &s.run
	clear(r.vals[:cap(r.vals)])
	clear(r.errs[:cap(r.errs)])
	clear(r.views[:cap(r.views)])
	clear(r.libs[:cap(r.libs)])
	clear(s.vars)
	clear(s.memo)
	clear(s.varMemo)
	*s = shared{vars: s.vars, memo: s.memo, varMemo: s.varMemo, patches: s.patches,
		run: run{vals: r.vals[:0], errs: r.errs[:0], state: r.state[:0], views: r.views[:0], reads: r.reads[:0], libs: r.libs[:0], libOK: r.libOK[:0]}}
	return true
}

func sharedOf(h *engine.Handle) *shared { return engine.KindStateOf[shared](h) }

func (s *shared) namespace(h *engine.Handle) (map[string]any, error) {
	if s.nsDone {
		return s.ns, s.nsErr
	}
	s.nsDone = true
	objs := h.Objects()
	if objs == nil {
		s.nsErr = fmt.Errorf("%w: %w", ErrNoNamespace, engine.NoReader(fmt.Sprintf("no object reader (offline, pass the Namespace %q with --context)", h.Namespace())))
		return nil, s.nsErr
	}
	ns, err := objs.Get(h.Context(), engine.ObjectRef{Kind: "Namespace", Name: h.Namespace()})
	if err != nil {
		s.nsErr = fmt.Errorf("%w: %w", ErrNoNamespace, err)
		return nil, s.nsErr
	}
	s.ns = ns
	return ns, nil
}

// oldObject returns the existing object: the one under evaluation on
// DELETE, the request's old object on UPDATE, else nil.
func (s *shared) oldObject(h *engine.Handle) any {
	if s.oldDone {
		return s.old
	}
	s.oldDone = true
	req := h.Request()
	switch req.Operation {
	case rules.Delete:
		s.old = h.Object()
	case rules.Update:
		s.old = req.OldObject
		if s.old == nil && req.OldObjectJSON != nil {
			if v, err := value.Decode(req.OldObjectJSON); err == nil {
				s.old = v
			}
		}
	}
	return s.old
}

// request returns the request's attributes as admission.k8s.io/v1 names
// them.
func (s *shared) request(h *engine.Handle) map[string]any {
	if s.req == nil {
		s.req = kyvernoreq.Request(h.Request(), h.Kind())
	}
	return s.req
}

// run is one phase of one policy on one request: the activation, the
// variables' values (lazy), the cost budget left.
type run struct {
	r     *Rule
	h     *engine.Handle
	ctx   context.Context
	act   lang.Activation
	vals  []any
	errs  []error
	state []uint8 // 0 not evaluated, 1 evaluating, 2 done
	// views[n] is `variables` seen by variable n (the ones before it);
	// views[len(vars)] is the expressions' view. A pointer to one in an
	// interface costs no allocation.
	views []varsView
	// reads[n] are the variables (bit j: variable j < maxMemoVars) read
	// through views[n] (celVariable replays a remembered value's).
	reads  []uint64
	budget int64
	// cost is the cost of the last evaluation (evalWith).
	cost uint64
	tr   *Trace
	// libs[i] is variable i in the JMESPath library's form, when libOK[i].
	libs  []any
	libOK []bool
	// doc is the JMESPath document (nil until an expression reads it); at
	// the field being substituted, for the trace.
	doc map[string]any
	at  string
}

func (r *Rule) newRun(h *engine.Handle, obj map[string]any) *run {
	s := sharedOf(h)
	ev := &s.run
	vals, errs, state, views, reads, libs, libOK := ev.vals, ev.errs, ev.state, ev.views, ev.reads, ev.libs, ev.libOK
	if s.vars == nil {
		s.vars = make(map[string]any, 4)
	} else {
		clear(s.vars)
	}
	*ev = run{r: r, h: h, ctx: h.Context(), budget: int64(cel.RuntimeCostBudget)}
	ev.act.Object = obj
	if h.Request().Operation == rules.Delete {
		ev.act.Object = nil
	}
	if r.usesOld {
		ev.act.OldObject = s.oldObject(h)
	}
	ev.act.Namespace = h.Namespace()
	ev.act.Vars = s.vars
	ev.views, ev.reads = resize(views, len(r.vars)+1), resize(reads, len(r.vars)+1)
	for n := range ev.views {
		ev.views[n] = varsView{ev, n}
	}
	ev.act.Vars[varVariables] = &ev.views[len(r.vars)]
	if r.usesRequest {
		ev.act.Vars[varRequest] = s.request(h)
	}
	if r.usesNamespace && h.Namespace() != "" {
		if ns, err := s.namespace(h); err == nil && ns != nil {
			ev.act.Vars[varNamespaceObject] = ns
		}
	}
	if r.usesAuthz {
		if a := h.Authorizer(); a != nil {
			bindAuthorizer(ev.act.Vars, h, a)
		}
	}
	if n := len(r.vars); n > 0 {
		ev.vals, ev.errs, ev.state = resize(vals, n), resize(errs, n), resize(state, n)
		ev.libs, ev.libOK = resize(libs, n), resize(libOK, n)
	} else {
		// Keep the storage for the next policy.
		ev.vals, ev.errs, ev.state = vals[:0], errs[:0], state[:0]
		ev.libs, ev.libOK = libs[:0], libOK[:0]
	}
	if h.Tracing() {
		ev.tr = &Trace{}
		if prev, ok := h.Trace().Detail.(*Trace); ok {
			ev.tr = prev // Match's record, continued by Apply
		}
		h.Trace().Detail = ev.tr
	}
	return ev
}

// resize returns s with length n, zeroed, reusing its storage when it
// can.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// charge spends cost from the budget.
func (ev *run) charge(cost uint64) error {
	ev.budget -= int64(cost)
	if ev.tr != nil {
		ev.tr.Cost += cost
	}
	if ev.budget < 0 {
		return lang.Limit(fmt.Errorf("%w (budget %d)", ErrBudget, cel.RuntimeCostBudget))
	}
	return nil
}

// evalWith evaluates p with one of its Eval methods, within the budget.
func evalWith[T any](ev *run, eval func(context.Context, *lang.Activation) (T, uint64, error), act *lang.Activation) (T, error) {
	if ev.budget < 0 {
		var zero T
		return zero, lang.Limit(ErrBudget)
	}
	v, cost, err := eval(ev.ctx, act)
	ev.cost = cost
	if cerr := ev.charge(cost); err == nil {
		err = cerr
	}
	return v, err
}

func (ev *run) eval(p *cel.Program, act *lang.Activation) (any, error) {
	return evalWith(ev, p.EvalCost, act)
}

// evalValue is eval keeping the CEL value (a variable's).
func (ev *run) evalValue(p *cel.Program, act *lang.Activation) (any, error) {
	return evalWith(ev, p.EvalValue, act)
}

func (ev *run) evalBool(p *cel.Program, act *lang.Activation) (bool, error) {
	if !p.Reads(varObject, varOldObject, varRequest, varNamespaceObject) || !ev.bindsObject(act) {
		return evalWith(ev, p.EvalBoolCost, act)
	}
	s := sharedOf(ev.h)
	k := memoKey{p: p, old: identity(act.OldObject)}
	now := ev.h.ObjectVersion()
	if m, ok := s.memo[k]; ok && (m.version == now || ev.h.ObjectUnchanged(m.version, p.ObjectPaths())) {
		// The cost is charged as if it ran: a Policy's budget does not
		// depend on which Policy ran the expression first.
		if ev.budget < 0 {
			return false, lang.Limit(ErrBudget)
		}
		if m.version != now {
			m.version = now // what it reads is as it was: shorter to check next time
			s.memo[k] = m
		}
		return m.v, ev.charge(m.cost)
	}
	var cost uint64
	v, err := evalWith(ev, func(ctx context.Context, in *lang.Activation) (bool, uint64, error) {
		v, c, err := p.EvalBoolCost(ctx, in)
		cost = c
		return v, c, err
	}, act)
	if err == nil { // errors (a deadline, the budget) are not remembered
		if s.memo == nil {
			s.memo = map[memoKey]memoBool{}
		}
		s.memo[k] = memoBool{v: v, cost: cost, version: now}
		ev.h.TrackWrites()
	}
	return v, err
}

// memoKey is a program over an old object (the request's, by identity).
type memoKey struct {
	p   *cel.Program
	old uintptr
}

// bindsObject reports whether act binds the object under evaluation as it
// is (not a Policy's own intermediate result), or none on DELETE.
func (ev *run) bindsObject(act *lang.Activation) bool {
	if act.Object == nil {
		return ev.h.Request().Operation == rules.Delete
	}
	return identity(act.Object) == identity(ev.h.Object())
}

// memoBool is a condition's value at a version of the object, which
// holds for as long as no patch writes what the program reads
// (Handle.ObjectUnchanged).
type memoBool struct {
	v       bool
	cost    uint64
	version uint64
}

// identity is the address of the object x (a map), 0 for anything else.
func identity(x any) uintptr {
	if m, ok := x.(map[string]any); ok {
		return reflect.ValueOf(m).Pointer()
	}
	return 0
}

// variable evaluates variable i once.
func (ev *run) variable(i int) (any, error) {
	switch ev.state[i] {
	case 2:
		return ev.vals[i], ev.errs[i]
	case 1:
		return nil, fmt.Errorf("variable %q refers to itself", ev.r.vars[i].name)
	}
	ev.state[i] = 1
	v := &ev.r.vars[i]
	if v.entry != nil || v.e.jp != nil || v.e.rego != nil {
		var (
			val, lib any
			libOK    bool
			err      error
		)
		switch {
		case v.entry != nil:
			val, lib, libOK, err = ev.evalEntry(i)
		case v.e.rego != nil:
			val, err = ev.regoEval(v.e.rego)
		default:
			if lib, err = ev.search(v.e.jp); err == nil {
				val, libOK = jmespath.Result(lib), true
			}
		}
		if err != nil {
			err = fmt.Errorf("%s %q (%s): %w", v.what(), v.name, v.field, err)
		}
		ev.vals[i], ev.errs[i], ev.state[i] = val, err, 2
		ev.libs[i], ev.libOK[i] = lib, libOK
		if ev.tr != nil {
			src := v.e.source()
			if v.entry != nil {
				src = v.entry.describe()
			}
			k := stepVariable
			if v.entry != nil {
				k = stepContext
			}
			ev.stepLang(k, i, v.field, v.lang(), src, val, err)
		}
		return val, err
	}
	val, err := ev.celVariable(i)
	if err != nil {
		err = fmt.Errorf("variable %q (%s): %w", v.name, v.field, err)
	}
	ev.vals[i], ev.errs[i], ev.state[i] = val, err, 2
	if ev.tr != nil {
		ev.step(stepVariable, i, v.field, v.e.source(), cel.JSON(val), err)
	}
	return val, err
}

// celVariable evaluates CEL variable i, or takes its value from another
// Policy that defines it alike (variable.memo) on the same version of the
// object. A remembered value is charged as if it ran, and the variables
// its evaluation read are read again (evaluated, and charged, if this
// Policy has not yet): a Policy's budget and trace do not depend on which
// Policy ran the expression first.
func (ev *run) celVariable(i int) (any, error) {
	v := &ev.r.vars[i]
	var k varMemoKey
	if v.memo != "" && ev.bindsObject(&ev.act) {
		k = varMemoKey{memo: v.memo, version: ev.h.ObjectVersion(), old: identity(ev.act.OldObject)}
		if m, ok := sharedOf(ev.h).varMemo[k]; ok {
			for n, j := range v.memoDeps {
				if m.reads&(1<<n) == 0 {
					continue
				}
				ev.reads[i] |= 1 << j
				if _, err := ev.variable(j); err != nil {
					return nil, err
				}
			}
			if ev.budget < 0 {
				return nil, lang.Limit(ErrBudget)
			}
			return m.v, ev.charge(m.cost)
		}
	}
	// The variable sees the variables before it: the activation's map is
	// the run's, so set the view for the call and put the caller's back.
	vars := ev.act.Vars
	prev := vars[varVariables]
	vars[varVariables] = &ev.views[i]
	// The run's own activation: it has no self (a scoped validation's is
	// a copy), and a copy would escape to the heap. The value stays a CEL
	// value: the expressions that read it take it as it is, with no
	// conversion to JSON and back (and a quantity or an IP, which has no
	// JSON form, stays usable, as in admission policies).
	val, err := ev.evalValue(v.e.cel, &ev.act)
	vars[varVariables] = prev
	if k.memo != "" && err == nil { // errors (a deadline, the budget) are not remembered
		m := memoVal{v: val, cost: ev.cost}
		for n, j := range v.memoDeps {
			if ev.reads[i]&(1<<j) != 0 {
				m.reads |= 1 << n
			}
		}
		s := sharedOf(ev.h)
		if s.varMemo == nil {
			s.varMemo = map[varMemoKey]memoVal{}
		}
		s.varMemo[k] = m
	}
	return val, err
}

// varMemoKey is a variable's definition (variable.memo) over a version of
// the object and an old object (the request's, by identity).
type varMemoKey struct {
	memo    string
	version uint64
	old     uintptr
}

// memoVal is a remembered variable's value, the cost of its program and
// the variables it read (bit n: its n-th memoDeps).
type memoVal struct {
	v     any
	cost  uint64
	reads uint64
}

// varsView is `variables` as seen by an expression: the first n variables
// (a variable reads only those defined before it).
type varsView struct {
	ev *run
	n  int
}

var _ lang.Lazy = (*varsView)(nil)

func (v *varsView) Member(name string) (any, bool, error) {
	i, ok := v.ev.r.varIndex[name]
	if !ok || i >= v.n {
		return nil, false, nil
	}
	if i < maxMemoVars {
		v.ev.reads[v.n] |= 1 << i
	}
	val, err := v.ev.variable(i)
	return val, true, err
}

func (v *varsView) Names() []string {
	names := make([]string, v.n)
	for i := range names {
		names[i] = v.ev.r.vars[i].name
	}
	return names
}

// mutate applies the mutations in order to a working copy, then patches
// the object with the difference, atomically. A lone CEL JSONPatch
// mutation whose operations the fast path takes is applied to the object
// directly (mutateDirect).
func (ev *run) mutate(obj map[string]any) error {
	if done, err := ev.mutateDirect(obj); done {
		return err
	}
	var cur any = obj
	for i, m := range ev.r.mutations {
		var (
			next any
			err  error
		)
		switch {
		case m.patch != nil:
			next, err = ev.applyPatch(m.field, m.patch, cur)
			ev.stepLang(stepMutation, i, m.field, "jsonpatch", m.patch.text, "applied", err)
		case m.cue != nil:
			next, err = ev.cuePatches(&ev.r.mutations[i], cur)
			ev.stepLang(stepMutation, i, m.field, "cue", m.cue.prog.Source(), "applied", err)
		default:
			cm, _ := cur.(map[string]any)
			ev.act.Object = cm
			var cost uint64
			next, cost, err = m.m.Apply(ev.ctx, &ev.act, cm)
			if cerr := ev.charge(cost); err == nil {
				err = cerr
			}
			ev.step(stepMutation, i, m.field, m.m.Source(), "applied", err)
		}
		if err != nil {
			return engine.InField(m.field, err)
		}
		cur = next
	}
	ops := patch.Diff(obj, cur)
	if len(ops) == 0 {
		return nil
	}
	if ev.h.Tracing() {
		ev.h.Trace().Ops = ops
	}
	if err := ev.h.Patch(ops); err != nil {
		return engine.InField("spec.mutations", err)
	}
	return nil
}

// mutateDirect applies a Policy's only mutation, a CEL JSONPatch, to the
// engine's document with RFC 6902's semantics (Handle.PatchRFC6902),
// without the working copy and the difference mutate makes: what the
// apiserver's way would give when the fast path takes the operations
// (cel.Patched.Edits). done is false when mutate must decide: more
// mutations, another kind of mutation, a trace to keep (it is given the
// difference, not the operations: a replace with the same value changes
// nothing; the last-applied configuration is given it by the engine). When
// the operations do not apply to the document (nothing is changed), the
// apiserver's way decides, with its errors.
func (ev *run) mutateDirect(obj map[string]any) (done bool, err error) {
	if len(ev.r.mutations) != 1 || ev.h.Tracing() {
		return false, nil
	}
	m := &ev.r.mutations[0]
	if m.patch != nil || m.cue != nil || m.m.Kind() != cel.JSONPatch {
		return false, nil
	}
	ev.act.Object = obj
	st := &sharedOf(ev.h).patches
	p, cost, err := m.m.EvalJSONPatch(ev.ctx, &ev.act, obj, st)
	defer p.Recycle(st) // no trace: nothing keeps the operations
	if cerr := ev.charge(cost); err == nil {
		err = cerr
	}
	if err != nil {
		ev.step(stepMutation, 0, m.field, m.m.Source(), "applied", err)
		return true, engine.InField(m.field, err)
	}
	ops, ok := p.Edits()
	if !ok || len(ops) > 0 && ev.h.PatchRFC6902(ops) != nil {
		next, err := p.Apply()
		ev.step(stepMutation, 0, m.field, m.m.Source(), "applied", err)
		if err != nil {
			return true, engine.InField(m.field, err)
		}
		if ops := patch.Diff(obj, next); len(ops) > 0 {
			if err := ev.h.Patch(ops); err != nil {
				return true, engine.InField("spec.mutations", err)
			}
		}
		return true, nil
	}
	ev.step(stepMutation, 0, m.field, m.m.Source(), "applied", nil)
	return true, nil
}

// validate runs validation i: over the object, or over each value its
// scope selects.
func (ev *run) validate(i int, obj map[string]any) error {
	v := &ev.r.validates[i]
	if v.cue != nil {
		return ev.cueValidate(i)
	}
	if v.deny != nil {
		// Kyverno's deny: the validation fails when the conditions hold.
		deny, _, err := ev.evalConds(v.deny)
		if err != nil {
			return engine.InField(v.deny.field, err)
		}
		if deny {
			ev.fail(i, &ev.act)
		}
		return nil
	}
	if v.e.rego != nil {
		ok, msgs, err := ev.regoViolations(v.e.rego)
		ev.stepLang(stepValidation, i, v.e.field, "rego", v.e.source(), ok, err)
		if err != nil {
			return engine.InField(v.e.field, err)
		}
		if !ok {
			ev.failWith(i, &ev.act, msgs)
		}
		return nil
	}
	if v.scope == nil {
		ok, err := ev.exprBool(&v.e, &ev.act)
		ev.stepLang(stepValidation, i, v.e.field, v.e.language(), v.e.source(), ok, err)
		if err != nil {
			return engine.InField(v.e.field, err)
		}
		if !ok {
			ev.fail(i, &ev.act)
		}
		return nil
	}
	// obj is the object under evaluation: on DELETE the one being
	// deleted (oldObject).
	nodes, err := v.scope.Nodes(ev.ctx, obj)
	if err != nil {
		return engine.InField(v.field+".scope", err)
	}
	var olds []lang.Node
	if ev.act.OldObject != nil && ev.r.usesOld {
		olds, err = v.scope.Nodes(ev.ctx, ev.act.OldObject)
		if err != nil {
			return engine.InField(v.field+".scope", err)
		}
	}
	// self and oldSelf for each value; the run's map holds oldSelf until
	// the validation ends.
	act := ev.act
	defer delete(ev.act.Vars, varOldSelf)
	ty := ev.typer(v, obj)
	for _, n := range nodes {
		act.Item = n.Value
		old := samePlace(olds, n.Keys)
		act.Vars[varOldSelf] = old
		if v.e.jp != nil {
			if err := ev.bindSelf(n.Value, old); err != nil {
				return engine.InField(v.e.field, err)
			}
		}
		typed := ty.bind(&act, obj, ev.act.OldObject, n.Keys, old != nil)
		ok, err := ev.exprBool(&v.e, &act)
		if ev.tr != nil {
			how := ""
			if typed {
				how = ", typed by its CRD's schema"
			}
			ev.stepLang(stepValidation, i, v.e.field+" (self: "+v.scopeText+" "+keysText(n.Keys)+how+")", v.e.language(), v.e.source(), ok, err)
		}
		if err != nil {
			return engine.InField(v.e.field, err)
		}
		if !ok {
			ev.fail(i, &act)
		}
	}
	return nil
}

// selfTyper binds a scoped CEL validation's self and oldSelf typed by the
// schema of the object's kind (the engine's SchemaReader: a CRD's), as
// the API server binds a CRD rule's self at the same place; its zero
// value leaves them dynamically typed.
type selfTyper struct {
	r                engine.SchemaReader
	v                *validation
	apiVersion, kind string
}

// typer is the selfTyper of validation v on obj: typing only CEL, and
// only when the engine knows obj's kind's schema.
func (ev *run) typer(v *validation, obj map[string]any) selfTyper {
	r := ev.h.Schemas()
	if r == nil || v.e.cel == nil || v.place == nil {
		return selfTyper{}
	}
	av, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	if !r.Types(av, k) {
		return selfTyper{}
	}
	return selfTyper{r: r, v: v, apiVersion: av, kind: k}
}

// bind replaces act's self (and oldSelf, when hasOld) with their typed
// values, the node's keys placing them in obj and old; it reports
// whether self is typed.
func (t selfTyper) bind(act *lang.Activation, obj, old any, keys []any, hasOld bool) bool {
	if t.r == nil {
		return false
	}
	path, ok := t.v.place.PathOf(obj, keys)
	if !ok {
		return false
	}
	self, ok := t.r.TypedValue(t.apiVersion, t.kind, path, act.Item)
	if !ok {
		return false
	}
	act.Item = self
	if hasOld {
		// oldSelf where it is in the old object (a negative index may
		// place it elsewhere), typed the same way.
		if p, ok := t.v.place.PathOf(old, keys); ok {
			if o, ok := t.r.TypedValue(t.apiVersion, t.kind, p, act.Vars[varOldSelf]); ok {
				act.Vars[varOldSelf] = o
			}
		}
	}
	return true
}

// keysText names the keys a scope's capturing steps went through:
// "[1]", "[name]".
func keysText(keys []any) string {
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "[%v]", k)
	}
	return b.String()
}

// samePlace returns the value of the node with keys, or nil.
func samePlace(nodes []lang.Node, keys []any) any {
	for _, n := range nodes {
		if value.Equal(n.Keys, keys) {
			return n.Value
		}
	}
	return nil
}

// fail acts on a failed validation: its message, then the policy's
// validation actions.
func (ev *run) fail(i int, act *lang.Activation) { ev.failWith(i, act, "") }

// failWith is fail with a message that wins over the validation's when
// not empty (a CUE program's reason, a Rego module's violations).
func (ev *run) failWith(i int, act *lang.Activation, reason string) {
	v := &ev.r.validates[i]
	msg := v.message
	if v.msgT != nil {
		// A message whose variables fail is kept as written (the
		// failure is in the trace).
		if m, err := ev.renderText(v.field+".message", v.msgT); err == nil {
			msg = m
		} else if ev.tr != nil {
			ev.tr.Substitutions = append(ev.tr.Substitutions, Step{Field: v.field + ".message", Source: v.message, Err: err})
		}
	}
	if v.msgExpr != nil {
		// As admission policies: a messageExpression that fails or gives
		// an empty string falls back to message.
		if m, err := ev.eval(v.msgExpr, act); err == nil {
			if s, ok := m.(string); ok && strings.TrimSpace(s) != "" {
				msg = s
			}
		}
	}
	if reason != "" {
		msg = reason
	}
	if msg == "" {
		switch {
		case v.deny != nil:
			msg = "denied by " + v.deny.field
		case v.cue != nil:
			msg = "failed CUE validation " + v.cue.field
		case v.e.rego != nil:
			msg = "failed Rego validation " + v.e.field
		default:
			msg = "failed expression: " + strings.TrimSpace(v.e.source())
		}
	}
	if ev.r.deny {
		ev.h.Deny(msg, v.reason, v.code)
	}
	if ev.r.warn {
		ev.h.Warn(msg)
	}
	if ev.r.audit {
		b, _ := json.Marshal(auditFailure{Message: msg, Policy: ev.r.Key, Kind: ev.r.Kind, Index: i, Actions: ev.r.actions()})
		ev.h.Annotate(ValidationFailureAnnotation, string(b))
	}
	if ev.tr != nil {
		ev.tr.Failures = append(ev.tr.Failures, Failure{Field: v.field, Message: msg})
	}
}

// ValidationFailureAnnotation is the audit annotation of a validation that
// failed under the Audit action: a JSON object (message, policy, kind,
// expressionIndex, validationActions), as admission policies'.
const ValidationFailureAnnotation = "validation_failure"

type auditFailure struct {
	Message string   `json:"message"`
	Policy  string   `json:"policy"`
	Kind    string   `json:"kind"`
	Index   int      `json:"expressionIndex"`
	Actions []string `json:"validationActions"`
}

func (r *Rule) actions() []string {
	var as []string
	if r.deny {
		as = append(as, "Deny")
	}
	if r.warn {
		as = append(as, "Warn")
	}
	if r.audit {
		as = append(as, "Audit")
	}
	return as
}

// bindAuthorizer binds CEL's authorizer variables to the engine's
// authorizer, for the requesting user and the request's resource.
func bindAuthorizer(vars map[string]any, h *engine.Handle, a engine.Authorizer) {
	q := h.Request()
	u := cel.AuthzUser{Name: q.UserInfo.Username, UID: q.UserInfo.UID, Groups: q.UserInfo.Groups, Extra: q.UserInfo.Extra}
	res := cel.AuthzCheck{ResourceRequest: true, Group: q.Resource.Group, Version: q.Resource.Version, Resource: q.Resource.Resource,
		Subresource: q.SubResource, Namespace: q.Namespace, Name: q.Name}
	cel.BindAuthorizer(vars, u, res, func(ctx context.Context, u cel.AuthzUser, c cel.AuthzCheck) (bool, string, error) {
		return a.Authorize(ctx, engine.AuthzAttributes{
			User:            engine.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra},
			Verb:            c.Verb,
			ResourceRequest: c.ResourceRequest,
			Group:           c.Group, Version: c.Version, Resource: c.Resource, Subresource: c.Subresource,
			Namespace: c.Namespace, Name: c.Name, Path: c.Path,
		})
	})
}

// exprBool evaluates an expression slot that must give a boolean.
func (ev *run) exprBool(e *expr, act *lang.Activation) (bool, error) {
	if e.jp != nil {
		return ev.evalJPBool(e.jp)
	}
	if e.rego != nil {
		return ev.regoBool(e.rego)
	}
	if e.cel == nil {
		return false, errors.New("the expression did not compile")
	}
	return ev.evalBool(e.cel, act)
}

// bindSelf puts a scoped validation's self and oldSelf in the JMESPath
// document.
func (ev *run) bindSelf(self, old any) error {
	if ev.doc == nil {
		ev.doc = sharedOf(ev.h).docMap()
	}
	ls, err := jmespath.Prepare(self)
	if err != nil {
		return err
	}
	lo, err := jmespath.Prepare(old)
	if err != nil {
		return err
	}
	ev.doc[varSelf], ev.doc[varOldSelf] = ls, lo
	return nil
}
