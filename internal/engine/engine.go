package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/template"
	"github.com/modwright/modwright/internal/value"
)

// Options configure an Engine.
type Options struct {
	// Objects reads the related objects exposed under syntheticRefs; nil
	// leaves them empty.
	Objects ObjectReader
	// NoTrace leaves Decision.Trace empty, which saves its memory when
	// nobody reads it (the webhook): with many rules in scope the trace is
	// most of what an evaluation allocates. Errors, rejections and the
	// patch are reported either way.
	NoTrace bool
}

// Engine evaluates snapshots. It holds no per-request state and is safe for
// concurrent use.
type Engine struct {
	objects ObjectReader
	noTrace bool
	// slabs recycles the criteria and values storage of evaluations
	// under NoTrace, where nothing refers to it once Evaluate returns.
	slabs sync.Pool // *slabs
}

// slabs is the storage an evaluation cuts its criteria traces and selected
// values from.
type slabs struct {
	criteria []CriterionTrace
	values   []any
}

// New returns an Engine.
func New(opts Options) *Engine {
	return &Engine{objects: opts.Objects, noTrace: opts.NoTrace}
}

// ErrInvalidRequest marks requests the engine cannot evaluate.
var ErrInvalidRequest = errors.New("invalid admission request")

// ErrUndecided is wrapped by the error Evaluate returns when a Reject rule
// cannot be decided because evaluating it hit a bound (see IsBound): the
// rule might have rejected the object, so the request must not be admitted
// as if it had not (the webhook denies it, unless it fails open).
var ErrUndecided = errors.New("a Reject rule could not be decided")

// ErrSyntheticRefs is wrapped by the error of a Patch rule whose operation's
// path, rendered from the keys its select captured, is under /syntheticRefs:
// the related objects are context that rules read, never change (a static
// path there does not load).
var ErrSyntheticRefs = errors.New("rules cannot change syntheticRefs")

// ErrTooMuchText is wrapped by the error of a rule whose criteria test more
// than MaxMatchText bytes of text, or whose operations write values of more
// than MaxRenderText bytes of text.
var ErrTooMuchText = errors.New("too much text")

// Bounds on the text one rule may build, whatever the object; the values a
// select may yield and the nodes it may visit are bounded by package
// jsonpath.
const (
	// MaxMatchText bounds the text a rule's criteria test: the values
	// selected for matchValue, matchValues and matchRegex, strings as they
	// are and other values as their JSON text. Testing every value of a
	// 1.5 MiB object (select: '$..*') costs about ten times its size.
	MaxMatchText = 64 << 20
	// MaxRenderText bounds the text of the values a Patch rule's
	// operations write, all together: what templates render, and a static
	// value's text once for each operation (each writes a copy). Rules
	// write a few KB; setting a field of each of 20,000 elements, 2 MB.
	MaxRenderText = 8 << 20
)

// IsBound reports whether err is a bound that evaluating a rule hit (too
// many values selected, too many nodes visited, too much text), rather
// than a property of the rule and the object that KubeMod defines (a type
// error in an expression is a criterion that does not hold).
func IsBound(err error) bool {
	return errors.Is(err, jsonpath.ErrTooManyValues) || errors.Is(err, jsonpath.ErrTooMuchWork) || errors.Is(err, ErrTooMuchText)
}

// Evaluate runs the snapshot's rules against one request. The error is
// non-nil only for an invalid request (ErrInvalidRequest), when ctx ends
// before the decision is made (it wraps ctx.Err()), or when a Reject rule
// cannot be decided (ErrUndecided); other rule failures are reported in the
// Decision.
func (e *Engine) Evaluate(ctx context.Context, snap *rules.Snapshot, req Request) (*Decision, error) {
	obj, raw := req.Object, req.ObjectJSON
	if req.Operation == rules.Delete {
		obj, raw = req.OldObject, req.OldObjectJSON
	}
	kind := req.Kind.Kind
	decode := func() error {
		if obj != nil || raw == nil {
			return nil
		}
		v, err := decodeObject(raw)
		obj = v
		return err
	}
	if kind == "" {
		if err := decode(); err != nil {
			return nil, err
		}
		kind, _ = lookupString(obj, "kind")
	}
	var buf [16]*rules.Rule
	candidates := snap.Candidates(req.Namespace, req.Operation, kind, buf[:0])
	if len(candidates) == 0 {
		if obj == nil {
			return &Decision{ObjectJSON: raw}, nil
		}
		return &Decision{Object: obj}, nil
	}
	if err := decode(); err != nil {
		return nil, err
	}
	root, ok := obj.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the object is a JSON %s, not an object", ErrInvalidRequest, value.TypeName(obj))
	}
	ev := evaluation{
		e:          e,
		ctx:        ctx,
		ns:         req.Namespace,
		kind:       kind,
		op:         req.Operation,
		original:   root,
		candidates: candidates,
		d:          &Decision{},
	}
	if !e.noTrace {
		ev.d.Trace = make([]RuleTrace, 0, len(candidates))
	} else {
		s, _ := e.slabs.Get().(*slabs)
		if s == nil {
			s = &slabs{criteria: make([]CriterionTrace, 0, 64), values: make([]any, 0, 256)}
		}
		ev.criteria, ev.values = s.criteria, s.values
		defer func() {
			// Drop every reference into the object before recycling.
			s.criteria, s.values = ev.criteria[:0], ev.values[:0]
			clear(s.criteria[:cap(s.criteria)])
			clear(s.values[:cap(s.values)])
			ev.scratch = RuleTrace{}
			e.slabs.Put(s)
		}()
	}
	if err := ev.run(); err != nil {
		return nil, err
	}
	return ev.d, nil
}

// evaluation is the state of one Evaluate call.
type evaluation struct {
	e          *Engine
	ctx        context.Context
	ns, kind   string
	op         rules.Operation
	original   map[string]any
	candidates []*rules.Rule
	d          *Decision

	doc       *patch.Doc
	la        *patch.Doc // last-applied-configuration, parsed; nil when absent
	laChanged bool

	data     template.Data    // reused for every template execution
	criteria []CriterionTrace // slab the rule traces' Criteria are cut from
	values   []any            // slab the criteria's selected values are stored in
	scratch  RuleTrace        // the trace of the current rule, without NoTrace
	text     []byte           // reused for the text of values under test
	// refs are the related objects rules see under syntheticRefs; nil when
	// no candidate mentions syntheticRefs (then the object has none).
	refs map[string]any
}

// prepare puts the object in the shape rules see: without
// metadata.managedFields, with the real syntheticRefs, or none when rules do
// not use them (the client's own is never believed).
func (ev *evaluation) prepare() {
	root, ok := ev.doc.Root().(map[string]any)
	if !ok {
		return
	}
	if _, ok := value.Lookup(root, "metadata", "managedFields"); ok {
		ev.must(ev.doc.Apply(patch.Operation{Op: patch.Remove, Path: managedFieldsPath}))
	}
	if ev.refs != nil {
		ev.must(ev.doc.Put(syntheticRefsPath, ev.refs))
	} else if _, ok := root[rules.SyntheticRefs]; ok {
		ev.must(ev.doc.Apply(patch.Operation{Op: patch.Remove, Path: syntheticRefsPath}))
	}
}

// traceFor starts the trace of a rule: a new entry of Decision.Trace, or,
// with NoTrace, the scratch entry, whose criteria storage is reused.
func (ev *evaluation) traceFor(r *rules.Rule) *RuleTrace {
	if ev.e.noTrace {
		ev.scratch = RuleTrace{Rule: r.Key, Type: r.Type, Tier: r.Tier}
		clear(ev.criteria)
		ev.criteria = ev.criteria[:0]
		clear(ev.values)
		ev.values = ev.values[:0]
		return &ev.scratch
	}
	ev.d.Trace = append(ev.d.Trace, RuleTrace{Rule: r.Key, Type: r.Type, Tier: r.Tier})
	return &ev.d.Trace[len(ev.d.Trace)-1]
}

func (ev *evaluation) run() error {
	// The Doc is copy-on-write: the input is never modified, and what no
	// rule touched stays shared with it (so the final diff skips it).
	ev.doc = patch.NewDoc(ev.original)
	if slices.ContainsFunc(ev.candidates, func(r *rules.Rule) bool { return r.UsesSyntheticRefs }) {
		ev.refs = ev.syntheticRefs(ev.original)
	}
	ev.prepare()
	ev.doc.Release()
	ev.parseLastApplied(ev.original)

	// Patch rules, tier by tier: every rule of a tier is matched against the
	// object as the tier found it, then the matching ones apply in order.
	var rejects []*rules.Rule
	type hit struct {
		r  *rules.Rule
		tr *RuleTrace // stable: Decision.Trace has its final capacity
	}
	var matched []hit
	for start := 0; start < len(ev.candidates); {
		end := start
		for end < len(ev.candidates) && ev.candidates[end].Tier == ev.candidates[start].Tier {
			end++
		}
		matched = matched[:0]
		for _, r := range ev.candidates[start:end] {
			if r.Type == v1beta1.ModRuleTypeReject {
				rejects = append(rejects, r)
				continue
			}
			tr := ev.traceFor(r)
			if ev.op == rules.Delete {
				tr.Outcome, tr.Reason = Skipped, "Patch rules do not run on DELETE"
				continue
			}
			ok, field, err := ev.match(r, tr)
			if err != nil {
				if ctxErr := ev.ctx.Err(); ctxErr != nil {
					return ctxErr
				}
				ev.fail(r, tr, field, err) // a bound: the rule fails
				continue
			}
			if ok {
				matched = append(matched, hit{r, tr})
			}
		}
		for _, h := range matched {
			if err := ev.ctx.Err(); err != nil {
				return err
			}
			tr := h.tr
			if ev.e.noTrace {
				ev.scratch = RuleTrace{Rule: h.r.Key, Type: h.r.Type, Tier: h.r.Tier, Outcome: Matched}
				tr = &ev.scratch
			}
			if err := ev.apply(h.r, tr); err != nil {
				return err
			}
			if tr.Outcome == Matched && len(tr.Ops) > 0 {
				ev.d.Applied = append(ev.d.Applied, h.r.Key)
			}
		}
		start = end
	}

	// Reject rules see the final object. One that cannot be decided fails
	// the evaluation: it might have rejected the object.
	for _, r := range rejects {
		if err := ev.ctx.Err(); err != nil {
			return err
		}
		tr := ev.traceFor(r)
		ok, field, err := ev.match(r, tr)
		if err != nil {
			if ctxErr := ev.ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			tr.Outcome, tr.Reason = Failed, fmt.Sprintf("%s: %v", field, err)
			return fmt.Errorf("%w: %w", ErrUndecided, RuleError{Rule: r.Key, Field: field, Err: err})
		}
		if ok {
			ev.d.Rejections = append(ev.d.Rejections, ev.rejection(r))
		}
	}
	// A decision completed past the deadline is not one: a Patch rule may
	// have failed on it.
	if err := ev.ctx.Err(); err != nil {
		return err
	}
	ev.finish()
	return nil
}

// match evaluates the rule's criteria in order, stopping at the first that
// fails. The error is the end of ctx, or a bound that a criterion hit (see
// IsBound), in the field named; a criterion whose select fails otherwise
// does not hold, as in KubeMod.
func (ev *evaluation) match(r *rules.Rule, tr *RuleTrace) (bool, string, error) {
	root := ev.doc.Root()
	n := len(r.Criteria)
	if cap(ev.criteria)-len(ev.criteria) < n {
		ev.criteria = make([]CriterionTrace, 0, max(n, 64))
	}
	tr.Criteria = ev.criteria[len(ev.criteria) : len(ev.criteria) : len(ev.criteria)+n]
	ev.criteria = ev.criteria[:len(ev.criteria)+n]
	tb := textBudget{ctx: ev.ctx, buf: ev.text}
	defer func() { ev.text = tb.buf[:0] }()
	for i := range r.Criteria {
		c := &r.Criteria[i]
		if cap(ev.values)-len(ev.values) < 8 {
			ev.values = make([]any, 0, 256)
		}
		free := ev.values[len(ev.values):]
		res, err := c.Select.EvaluateAppend(ev.ctx, root, free)
		if err != nil && (ev.ctx.Err() != nil || IsBound(err)) {
			tr.Criteria = append(tr.Criteria, CriterionTrace{Criterion: c, Err: err, Verdict: VerdictError, At: -1})
			return false, c.Field + ".select", err
		}
		if n := len(res.Values); n <= cap(free) {
			ev.values = ev.values[:len(ev.values)+n] // stored in the slab: keep it
		}
		held, why, at, terr := holds(c, res.Values, res.Single, err, &tb)
		if terr != nil {
			tr.Criteria = append(tr.Criteria, CriterionTrace{Criterion: c, Values: res.Values, Single: res.Single, Err: terr, Verdict: VerdictError, At: -1})
			return false, c.Field, terr
		}
		tr.Criteria = append(tr.Criteria, CriterionTrace{Criterion: c, Values: res.Values, Single: res.Single, Err: err, Held: held, Verdict: why, At: at})
		if !held {
			tr.Outcome = NotMatched
			return false, "", nil
		}
	}
	tr.Outcome = Matched
	return true, "", nil
}

// textBudget gives the text of the values a rule's criteria test, built in
// one reused buffer, and bounds it: MaxMatchText bytes in all, the context
// checked every 1 MiB.
type textBudget struct {
	ctx       context.Context
	buf       []byte
	used      int
	unchecked int
}

// text returns the text form of v (value.Text), valid until the next call.
func (tb *textBudget) text(v any) (string, error) {
	var s string
	switch v.(type) {
	case []any, map[string]any:
		b, err := value.AppendJSON(tb.buf[:0], v)
		if err != nil {
			s = value.Text(v)
		} else {
			tb.buf = b
			s = unsafe.String(unsafe.SliceData(b), len(b))
		}
	default:
		s = value.Text(v)
	}
	tb.used += len(s)
	if tb.used > MaxMatchText {
		return "", fmt.Errorf("%w: the criteria test more than %d bytes of text", ErrTooMuchText, MaxMatchText)
	}
	if tb.unchecked += len(s) + 16; tb.unchecked >= 1<<20 {
		tb.unchecked = 0
		if err := tb.ctx.Err(); err != nil {
			return "", err
		}
	}
	return s, nil
}

// holds decides one criterion. A single boolean decides alone; no result
// (an error, nothing selected, a single null, a single empty array) is a
// non-match; a single array is tested element by element, as KubeMod does;
// otherwise each value's text is tested for Any or All values. Negate flips
// the outcome in every case. The verdict says which of these decided, and at
// the index of the deciding value among those tested (-1 when none did).
// The error is the text budget's.
func holds(c *rules.Criterion, vals []any, single bool, err error, tb *textBudget) (held bool, why Verdict, at int, terr error) {
	if err != nil {
		return c.Negate, VerdictError, -1, nil
	}
	if single && len(vals) == 1 {
		switch v := vals[0].(type) {
		case bool:
			return v != c.Negate, VerdictBoolean, 0, nil
		case nil:
			return c.Negate, VerdictNull, -1, nil
		case []any:
			vals = v
		}
	}
	if len(vals) == 0 {
		return c.Negate, VerdictNothing, -1, nil
	}
	if !c.HasMatcher() {
		return !c.Negate, VerdictExists, -1, nil
	}
	for i, v := range vals {
		text, err := tb.text(v)
		if err != nil {
			return false, VerdictError, -1, err
		}
		if ok := c.Test(text); ok != c.All {
			if c.All {
				return c.Negate, VerdictNotAll, i, nil
			}
			return !c.Negate, VerdictAny, i, nil
		}
	}
	if c.All {
		return !c.Negate, VerdictAll, -1, nil
	}
	return c.Negate, VerdictNone, -1, nil
}

// apply builds all of a matching Patch rule's operations from the object as
// the rule found it, then applies them atomically. The error is the end of
// ctx; a rule that fails otherwise is recorded in the decision.
func (ev *evaluation) apply(r *rules.Rule, tr *RuleTrace) error {
	var sources *[]OpSource
	if !ev.e.noTrace {
		sources = &tr.OpSources
	}
	ops, origin, field, err := ev.buildOps(r, sources)
	tr.Ops = ops
	if err != nil {
		if ctxErr := ev.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		ev.fail(r, tr, field, err)
		return nil
	}
	// syntheticRefs is context, not part of the object: a path rendered
	// from captured keys must not land in it (a static one cannot load),
	// and after a rule replaced the whole object the real one goes back
	// (and managedFields go again).
	wholeObject := false
	for i, op := range ops {
		if len(op.Path) == 0 {
			wholeObject = true
			if _, ok := op.Value.(map[string]any); !ok && op.Op != patch.Remove {
				ev.fail(r, tr, r.Patches[origin[i]].Field+".path", fmt.Errorf("the operation replaces the whole object with a JSON %s", value.TypeName(op.Value)))
				return nil
			}
		} else if op.Path[0] == rules.SyntheticRefs {
			ev.fail(r, tr, r.Patches[origin[i]].Field+".path", fmt.Errorf("%w: the path %s is under /syntheticRefs", ErrSyntheticRefs, op.Path))
			return nil
		}
	}
	mark := ev.doc.Mark()
	for i, op := range ops {
		if err := ev.doc.Apply(op); err != nil {
			ev.doc.Rollback(mark)
			ev.fail(r, tr, r.Patches[origin[i]].Field, err)
			return nil
		}
	}
	if wholeObject {
		ev.prepare()
	}
	ev.doc.Release()
	ev.mirrorLastApplied(r, tr, ops)
	return nil
}

func (ev *evaluation) fail(r *rules.Rule, tr *RuleTrace, field string, err error) {
	tr.Outcome = Failed
	tr.Reason = fmt.Sprintf("%s: %v", field, err)
	ev.d.Errors = append(ev.d.Errors, RuleError{Rule: r.Key, Field: field, Err: err})
}

// buildOps renders every operation of a rule; origin[i] is the index of the
// patch item ops[i] came from. When sources is not nil, it receives each
// operation's patch item and captured keys (for the trace). The values of
// all the operations hold at most MaxRenderText bytes of text, and the
// context is checked before each.
func (ev *evaluation) buildOps(r *rules.Rule, sources *[]OpSource) (ops []patch.Operation, origin []int, field string, err error) {
	root := ev.doc.Root()
	ops = make([]patch.Operation, 0, len(r.Patches))
	origin = make([]int, 0, len(r.Patches))
	rendered := 0
	for i := range r.Patches {
		p := &r.Patches[i]
		if p.Select == nil {
			v, err := ev.render(p, root, nil, nil, &rendered)
			if err != nil {
				return ops, origin, p.Field + ".value", err
			}
			ops = append(ops, patch.Operation{Op: p.Op, Path: p.Path.Static, Value: v})
			origin = append(origin, i)
			if sources != nil {
				*sources = append(*sources, OpSource{Field: p.Field})
			}
			continue
		}
		nodes, err := p.Select.Select(ev.ctx, root)
		if err != nil {
			return ops, origin, p.Field + ".select", err
		}
		first := len(ops)
		for _, n := range nodes {
			if err := ev.ctx.Err(); err != nil {
				return ops, origin, p.Field, err
			}
			path, err := p.Path.Render(n.Keys)
			if err != nil {
				return ops, origin, p.Field + ".path", err
			}
			v, err := ev.render(p, root, n.Value, n.Keys, &rendered)
			if err != nil {
				return ops, origin, p.Field + ".value", err
			}
			ops = append(ops, patch.Operation{Op: p.Op, Path: path, Value: v})
			origin = append(origin, i)
			if sources != nil {
				*sources = append(*sources, OpSource{Field: p.Field, Keys: n.Keys})
			}
		}
		if p.Op == patch.Remove {
			// Remove from the highest index down so that every selected
			// element goes, not every other one.
			if sources != nil {
				sortRemovals(ops[first:], (*sources)[first:])
			} else {
				slices.SortStableFunc(ops[first:], func(a, b patch.Operation) int { return -comparePointers(a.Path, b.Path) })
			}
		}
	}
	return ops, origin, "", nil
}

// sortRemovals sorts removals from the highest index down, keeping each
// operation's source beside it.
func sortRemovals(ops []patch.Operation, sources []OpSource) {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return -comparePointers(ops[a].Path, ops[b].Path) })
	o, s := slices.Clone(ops), slices.Clone(sources)
	for i, j := range idx {
		ops[i], sources[i] = o[j], s[j]
	}
}

// comparePointers orders pointers token by token, numeric tokens by value.
func comparePointers(a, b patch.Pointer) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			if ai < bi {
				return -1
			}
			return 1
		}
		if a[i] < b[i] {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

var errTooMuchRendered = fmt.Errorf("%w: the values of this rule's operations exceed %d bytes of text", ErrTooMuchText, MaxRenderText)

// render gives the value of one operation; *rendered counts the text of the
// values the rule's operations wrote so far.
func (ev *evaluation) render(p *rules.PatchOp, root, item any, keys []any, rendered *int) (any, error) {
	if p.Op == patch.Remove {
		return nil, nil
	}
	if p.Value.Static() {
		// Each operation writes its own copy.
		if *rendered += len(p.Value.Text()); *rendered > MaxRenderText {
			return nil, errTooMuchRendered
		}
		return p.StaticValue, nil
	}
	ev.data = template.Data{Target: root, Namespace: ev.ns, SelectedItem: item, SelectKeyParts: keys}
	text, err := p.Value.Execute(&ev.data)
	if err != nil {
		return nil, err
	}
	if *rendered += len(text); *rendered > MaxRenderText {
		return nil, errTooMuchRendered
	}
	v, err := template.ParseValue(text)
	if err != nil {
		return nil, fmt.Errorf("rendered value %s: %w", excerpt(text), err)
	}
	return v, nil
}

func (ev *evaluation) rejection(r *rules.Rule) Rejection {
	rej := Rejection{Rule: r.Key}
	if r.RejectMessage == nil {
		return rej
	}
	ev.data = template.Data{Target: ev.doc.Root(), Namespace: ev.ns}
	msg, err := r.RejectMessage.Execute(&ev.data)
	if err != nil {
		rej.MessageError = err
		return rej
	}
	rej.Message = msg
	return rej
}

// syntheticRefs builds the related objects: the namespace, and the node of a
// Pod annotated with ref.kubemod.io/nodename (or ref.kubemod.io/node), read
// by reference from the engine's ObjectReader.
func (ev *evaluation) syntheticRefs(work map[string]any) map[string]any {
	refs := map[string]any{}
	if ev.e.objects == nil {
		return refs
	}
	if ev.ns != "" {
		ev.addRef(refs, "namespace", ObjectRef{Kind: "Namespace", Name: ev.ns})
	}
	if ev.kind == "Pod" {
		node, _ := lookupString(work, "metadata", "annotations", NodeNameAnnotation)
		if node == "" {
			node, _ = lookupString(work, "metadata", "annotations", NodeAnnotation)
		}
		if node != "" {
			ev.addRef(refs, "node", ObjectRef{Kind: "Node", Name: node})
		}
	}
	return refs
}

// addRef reads one related object into refs[key]; an error is recorded
// against syntheticRefs.<key> and leaves it out.
func (ev *evaluation) addRef(refs map[string]any, key string, ref ObjectRef) {
	obj, err := ev.e.objects.Get(ev.ctx, ref)
	if err != nil {
		ev.d.Errors = append(ev.d.Errors, RuleError{Field: "syntheticRefs." + key, Err: err})
	} else if obj != nil {
		refs[key] = cleanRef(obj)
	}
}

// cleanRef copies a related object without managedFields and the
// last-applied-configuration annotation.
func cleanRef(obj map[string]any) map[string]any {
	c := value.DeepCopy(obj).(map[string]any)
	if md, ok := c["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, LastAppliedAnnotation)
		}
	}
	return c
}

func (ev *evaluation) parseLastApplied(work map[string]any) {
	s, ok := lookupString(work, "metadata", "annotations", LastAppliedAnnotation)
	if !ok || s == "" {
		return
	}
	v, err := value.Decode([]byte(s))
	if err != nil {
		ev.d.Errors = append(ev.d.Errors, RuleError{Field: "metadata.annotations[" + LastAppliedAnnotation + "]", Err: fmt.Errorf("not valid JSON, left as it is: %w", err), LastApplied: true})
		return
	}
	if _, ok := v.(map[string]any); !ok {
		return
	}
	ev.la = patch.NewOwnedDoc(v) // freshly decoded: ours to change in place
}

// mirrorLastApplied applies a rule's operations to the last-applied
// configuration too. A failure there is recorded and leaves that copy as the
// rule found it; it never affects the object itself.
func (ev *evaluation) mirrorLastApplied(r *rules.Rule, tr *RuleTrace, ops []patch.Operation) {
	if ev.la == nil {
		return
	}
	mark := ev.la.Mark()
	applied := false
	for _, op := range ops {
		if !mirrored(op.Path) {
			continue
		}
		if err := ev.la.Apply(op); err != nil {
			ev.la.Rollback(mark)
			tr.LastAppliedErr = err
			ev.d.Errors = append(ev.d.Errors, RuleError{Rule: r.Key, Err: err, LastApplied: true})
			return
		}
		applied = true
	}
	ev.la.Release()
	ev.laChanged = ev.laChanged || applied
}

// mirrored reports whether an operation's path exists in a last-applied
// configuration at all: syntheticRefs, managedFields and the annotation
// itself do not.
func mirrored(p patch.Pointer) bool {
	if len(p) == 0 {
		return false
	}
	if p[0] == "syntheticRefs" || p[0] == "status" {
		return false
	}
	if p[0] == "metadata" && len(p) > 1 {
		if p[1] == "managedFields" {
			return false
		}
		if p[1] == "annotations" && len(p) > 2 && p[2] == LastAppliedAnnotation {
			return false
		}
	}
	return true
}

// finish removes what rules must not see or change from the result, writes
// back the last-applied configuration, and computes the patch.
func (ev *evaluation) finish() {
	if _, ok := ev.doc.Root().(map[string]any); ok {
		ev.restore(syntheticRefsPath)
		if _, ok := value.Lookup(ev.doc.Root(), "metadata"); ok {
			ev.restore(managedFieldsPath)
		}
		if ev.laChanged {
			ev.writeLastApplied()
		}
		ev.doc.Release()
	}
	result := ev.doc.Root()
	ev.d.Patch = patch.Diff(ev.original, result)
	if len(ev.d.Patch) == 0 {
		ev.d.Object = ev.original
	} else {
		ev.d.Object = result
	}
}

var (
	syntheticRefsPath = patch.Pointer{"syntheticRefs"}
	managedFieldsPath = patch.Pointer{"metadata", "managedFields"}
	lastAppliedPath   = patch.Pointer{"metadata", "annotations", LastAppliedAnnotation}
)

// restore puts the original's member at p (a top-level or metadata member)
// back into the result, or removes it when the original had none.
func (ev *evaluation) restore(p patch.Pointer) {
	orig, had := value.Lookup(ev.original, p...)
	if had {
		ev.must(ev.doc.Put(p, orig))
		return
	}
	ev.must(ev.doc.Apply(patch.Operation{Op: patch.Remove, Path: p}))
}

// must checks the result of an operation the engine itself applies to put
// the object in shape; they cannot fail on a JSON object.
func (ev *evaluation) must(err error) {
	if err != nil {
		panic(fmt.Errorf("engine: internal operation failed: %w", err))
	}
}

// writeLastApplied stores the patched last-applied configuration, unless a
// rule changed or removed the annotation itself (then the rule's version
// stands).
func (ev *evaluation) writeLastApplied() {
	before, _ := lookupString(ev.original, lastAppliedPath...)
	now, ok := lookupString(ev.doc.Root(), lastAppliedPath...)
	if !ok || now != before {
		return
	}
	// Sized for the usual case (the rules added a little to it), so that
	// encoding does not grow the buffer step by step; the string shares
	// the buffer, which nothing else holds.
	b, err := value.AppendJSON(make([]byte, 0, len(before)+len(before)/4+256), ev.la.Root())
	if err != nil || len(b) == 0 {
		return
	}
	ev.must(ev.doc.Put(lastAppliedPath, unsafe.String(unsafe.SliceData(b), len(b))))
}

// decodeObject decodes the request's object from its JSON text.
func decodeObject(raw []byte) (any, error) {
	v, err := value.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: object: %v", ErrInvalidRequest, err)
	}
	return v, nil
}

func lookupString(v any, path ...string) (string, bool) {
	x, ok := value.Lookup(v, path...)
	if !ok {
		return "", false
	}
	s, ok := x.(string)
	return s, ok
}

// excerpt quotes the start of a rendered value for an error message: a
// value that fails to parse may be megabytes long.
func excerpt(text string) string {
	const n = 200
	if len(text) <= n {
		return strconv.Quote(text)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(text[:n]), len(text))
}
