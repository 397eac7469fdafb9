package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Options configure an Engine.
type Options struct {
	// Objects reads the objects related to the one under review (for the
	// rules and their kinds' inputs); nil: none.
	Objects ObjectReader
	// Authorizer answers the authorization questions rules ask; nil: none
	// (offline), and a rule that asks fails.
	Authorizer Authorizer
	// API answers the API reads rules make (a Policy's apiCall); nil:
	// none, and a rule that reads fails (unless it has a default).
	API APIReader
	// Roles names the RBAC roles of the requesting user; nil: none known.
	Roles RoleReader
	// Kinds reads objects of any kind (kinitiras references); nil: none.
	Kinds KindReader
	// HTTP makes the HTTP requests rules need (kinitiras references);
	// nil: none.
	HTTP HTTPReader
	// Images reads container images' data (Kyverno's image library); nil:
	// none.
	Images ImageReader
	// Globals reads global context entries; nil: none.
	Globals GlobalContextReader
	// Graph reads the relationship graph; nil: none.
	Graph GraphReader
	// Inventory gives the replicated objects; nil: none.
	Inventory InventoryReader
	// Schemas types custom resources' values by their CRDs' schemas (a
	// Policy's scoped validations); nil: none, values stay dynamically
	// typed.
	Schemas SchemaReader
	// RuleReader is the service account, in a namespaced rule's own
	// namespace, whose rights the rule's object reads have
	// (Handle.AuthorizeRead asks Authorizer); "": reads are not
	// authorized (offline, where the context objects are what is given).
	RuleReader string
	// NoTrace leaves Decision.Trace empty, which saves its memory when
	// nobody reads it (the webhook): with many rules in scope the trace is
	// most of what an evaluation allocates. Errors, rejections and the
	// patch are reported either way.
	NoTrace bool
}

// Engine evaluates snapshots. It holds no per-request state and is safe for
// concurrent use.
type Engine struct {
	objects    ObjectReader
	ruleReader string
	authz      Authorizer
	api        APIReader
	kinds      KindReader
	http       HTTPReader
	images     ImageReader
	globals    GlobalContextReader
	graph      GraphReader
	inventory  InventoryReader
	schemas    SchemaReader
	roles      RoleReader
	noTrace    bool
	// scratch recycles the buffers rules borrow through their Handle.
	scratch sync.Pool // *scratch
}

// scratch is the storage the rules of one evaluation borrow (Handle.Values,
// Handle.Text).
type scratch struct {
	values []any
	text   []byte
	// doc and la are the evaluation's Docs, recycled with their journals'
	// storage (patch.Doc.Reset), and laText la's text while it is edited
	// as text.
	doc, la patch.Doc
	laText  patch.Text
	// ev is the evaluation itself, and differ the patches' working storage.
	ev     evaluation
	differ patch.Differ
	// states are the kind states the last evaluation left that reset
	// themselves (StateResetter), for the next one.
	states []kindState
	// The storage of the write log (Handle.TrackWrites).
	writes []write
	spans  [][2]int
	tokens []string
	// The storage of run's lists of rules.
	hits      []hit
	validates []Rule
	// The storage of Handle.patch's mirroring (cleared after each use).
	direct    []patch.Change
	paths     []patch.Pointer
	mirrorOps []patch.Operation
}

// scratchKept bounds the elements of each slice a scratch keeps for the
// next evaluation: one review that grew it (a rule writing thousands of an
// object's elements) does not leave it that large in the pool.
const scratchKept = 1 << 12

// recycled is s emptied for a scratch: cleared up to its capacity (it
// refers to nothing of the evaluation), nil when it grew past scratchKept.
func recycled[T any](s []T) []T {
	if cap(s) > scratchKept {
		return nil
	}
	clear(s[:cap(s)])
	return s[:0]
}

// New returns an Engine.
func New(opts Options) *Engine {
	return &Engine{objects: opts.Objects, ruleReader: opts.RuleReader, authz: opts.Authorizer, api: opts.API, roles: opts.Roles, kinds: opts.Kinds, http: opts.HTTP, images: opts.Images, globals: opts.Globals, graph: opts.Graph, inventory: opts.Inventory, schemas: opts.Schemas, noTrace: opts.NoTrace}
}

// ErrInvalidRequest marks requests the engine cannot evaluate.
var ErrInvalidRequest = errors.New("invalid admission request")

// ErrUndecided is wrapped by the error Evaluate returns when a Validate
// rule (a ModRule of type Reject) cannot be decided because evaluating it
// hit a bound: the rule might have rejected the object, so the request must
// not be admitted as if it had not (the webhook denies it, unless it fails
// open).
var ErrUndecided = errors.New("a Reject rule could not be decided")

// ErrNotConverging is the failure of Converge rules that still change
// the object after one more pass than they are (RuleInfo.Converge).
var ErrNotConverging = errors.New("the rules do not converge")

// ErrRuleFailed is wrapped by the error Evaluate returns when a rule whose
// FailurePolicy is FailureFail failed: the request must be denied.
var ErrRuleFailed = errors.New("a rule failed and its failure policy is Fail")

// Evaluate runs the snapshot's rules against one request. The error is
// non-nil only for an invalid request (ErrInvalidRequest), when ctx ends
// before the decision is made (it wraps ctx.Err()), or when a Validate rule
// cannot be decided (ErrUndecided); other rule failures are reported in the
// Decision.
func (e *Engine) Evaluate(ctx context.Context, snap *Snapshot, req Request) (*Decision, error) {
	obj, raw := req.Object, req.ObjectJSON
	if req.Operation == rules.Delete {
		obj, raw = req.OldObject, req.OldObjectJSON
	}
	// Unchecked ObjectJSON that decode (below) cannot read is checked here;
	// what it could read but does not (no candidate), further down.
	mayDecode := req.Operation != rules.Delete && obj == nil
	if !mayDecode {
		if err := checkUnchecked(&req); err != nil {
			return nil, err
		}
	}
	kind := req.Kind.Kind
	// From JSON text, the object is decoded without its
	// metadata.managedFields, which no rule sees (prepare) and no patch
	// touches (finish): as much text as the rest of an object again,
	// often, and hundreds of small objects. The Decision keeps their text.
	var managed []byte
	decode := func() error {
		if obj != nil || raw == nil {
			return nil
		}
		var err error
		obj, managed, err = decodeObjectOmitting(req.ObjectStorage, raw, managedFieldsPath...)
		return err
	}
	if kind == "" && !req.Payload {
		if err := decode(); err != nil {
			return nil, err
		}
		kind, _ = lookupString(obj, "kind")
	}
	var candidates []Rule
	if req.Payload {
		if req.Operation != rules.Create || req.Kind != (GroupVersionKind{}) || req.Name != "" || req.Namespace != "" {
			return nil, fmt.Errorf("%w: a JSON payload is created, with no kind, name or namespace", ErrInvalidRequest)
		}
		candidates = snap.PayloadRules()
	} else {
		// No buffer: one would escape with the candidates into the
		// evaluation, an allocation even when there is no candidate.
		candidates = snap.Candidates(req.Namespace, req.Operation, kind, nil)
	}
	if len(candidates) == 0 {
		if obj == nil {
			if mayDecode {
				if err := checkUnchecked(&req); err != nil {
					return nil, err
				}
			}
			return &Decision{ObjectJSON: raw}, nil
		}
		return &Decision{Object: obj, ManagedFieldsJSON: managed}, nil
	}
	if err := decode(); err != nil {
		return nil, err
	}
	root, ok := obj.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the object is a JSON %s, not an object", ErrInvalidRequest, value.TypeName(obj))
	}
	s, _ := e.scratch.Get().(*scratch)
	if s == nil {
		s = &scratch{values: make([]any, 0, 256)}
	}
	ev := &s.ev
	*ev = evaluation{
		e:          e,
		ctx:        ctx,
		req:        req,
		kind:       kind,
		original:   root,
		candidates: candidates,
		d:          &Decision{ManagedFieldsJSON: managed},
		values:     s.values,
		text:       s.text,
		docs:       s,
		kindState:  s.states,
		writes:     s.writes,
		spans:      s.spans,
		tokens:     s.tokens,
		hits:       s.hits,
		validates:  s.validates,
		direct:     s.direct,
		paths:      s.paths,
		mirrorOps:  s.mirrorOps,
	}
	if !e.noTrace {
		n := len(candidates)
		for _, r := range candidates {
			if r.Info().Phase == Mutate|Validate {
				n++ // a trace entry for each phase
			}
		}
		ev.d.Trace = make([]RuleTrace, 0, n)
	}
	defer func() {
		// Drop every reference into the object, the rules and the
		// decision before recycling.
		s.values, s.text = recycled(ev.values), recycled(ev.text)
		s.doc.Reset(nil, false)
		s.la.Reset(nil, true)
		s.laText.Reset("")
		s.states = recycleStates(ev.kindState)
		s.writes, s.spans, s.tokens = recycled(ev.writes), recycled(ev.spans), recycled(ev.tokens)
		s.hits, s.validates = recycled(ev.hits), recycled(ev.validates)
		s.direct, s.paths, s.mirrorOps = recycled(ev.direct), recycled(ev.paths), recycled(ev.mirrorOps)
		*ev = evaluation{}
		e.scratch.Put(s)
	}()
	err := ev.run()
	if says(ev.d, err) || len(ev.d.Trace) > 0 {
		ev.redact(root, &err)
	}
	if err != nil {
		return nil, err
	}
	return ev.d, nil
}

// says reports whether the decision or the error carries text a rule
// made (what redaction looks at).
func says(d *Decision, err error) bool {
	return err != nil || len(d.Errors)+len(d.Rejections)+len(d.Warnings)+len(d.AuditAnnotations) > 0
}

// redact removes the values of the Secret under review from the decision
// and *err (nothing for any other object).
func (ev *evaluation) redact(root map[string]any, err *error) {
	if r := ev.secretRedactor(root); r != nil {
		*err = r.err(*err)
		r.decision(ev.d)
	}
}

// secretRedactor is the redactor of the Secret under review (its values
// and its old values), nil for any other object.
func (ev *evaluation) secretRedactor(root map[string]any) *redactor {
	if ev.req.Kind.Kind != "Secret" || ev.req.Kind.Group != "" {
		return nil
	}
	old := ev.req.OldObject
	if old == nil && ev.req.OldObjectJSON != nil {
		old, _ = decodeObject(ev.req.OldObjectJSON)
	}
	return newRedactor(secretValues(root, old))
}

// evaluation is the state of one Evaluate call.
type evaluation struct {
	e          *Engine
	ctx        context.Context
	req        Request // a copy: a pointer to the argument would move it to the heap
	kind       string
	original   map[string]any
	candidates []Rule
	d          *Decision
	phase      Phase // the phase running: Handle.Phase

	doc       *patch.Doc
	la        *patch.Doc  // last-applied-configuration, parsed; nil when absent or laText
	laText    *patch.Text // the same as text, while Text does the rules' operations
	docs      *scratch    // where doc and la come from (recycled)
	laChanged bool
	laParsed  bool // parseLastApplied ran

	h            Handle          // see handle
	kept         []any           // Handle.Keep's current block (part of the decision)
	kindState    []kindState     // Handle.KindState
	act          lang.Activation // reused by every rule (Handle.Activation)
	values       []any           // Handle.Values
	text         []byte          // Handle.Text
	scratchTrace RuleTrace       // the trace of the current rule, without a trace
	passTrace    RuleTrace       // a Converge rule's trace in a later pass
	// converging: a Converge rule of the tier being applied patched.
	converging bool
	// hits and validates are run's lists of the rules of a tier that
	// matched and of the Validate rules (storage recycled with scratch).
	hits      []hit
	validates []Rule
	// inputs are the members the candidates' kinds prepare (input.go);
	// inputsBuf holds the usual one.
	inputs    []inputSlot
	inputsBuf [1]inputSlot
	ir        InputRequest // what the input being built reads
	// seen are the candidates' distinct inputs; seenBuf holds the usual few.
	seen    []Input
	seenBuf [4]Input
	// writes are the rules' patches, in order, from trackFrom on (track:
	// Handle.TrackWrites): what each changed of the object
	// (Handle.ObjectUnchanged); spans index the paths' tokens.
	track     bool
	trackFrom uint64
	writes    []write
	spans     [][2]int
	tokens    []string
	// mirrorOps is Handle.patch's storage for the operations
	// patch.DiffChangesTo gives to mirror.
	mirrorOps []patch.Operation
	// direct is Handle.patch's storage for patch.MemberChanges, paths
	// for the paths it diffs along (patch.Differ.DiffPaths).
	direct []patch.Change
	paths  []patch.Pointer
	// fields are the paths of rules' Fields looked up on the object (see
	// lookupField), fieldNext the entry the next new one replaces.
	fields    [8]fieldLookup
	fieldNext int
}

// fieldLookup is what a Field's path led to on the object at a version.
type fieldLookup struct {
	path    *string // the path's first member: paths a kind shares are one
	n       int
	version uint64
	v       any
	at      int
}

// fieldsRefuse is FieldsRefuse on the object as the rules left it, each
// path walked once per version of the object: rules of a kind that share
// a path's slice (a cached query's) share its walk.
func (ev *evaluation) fieldsRefuse(fields []Field) bool {
	for i := range fields {
		v, at := ev.lookupField(&fields[i])
		switch fields[i].decide(v, at) {
		case fieldFails:
			return true
		case fieldUndecided:
			return false
		}
	}
	return false
}

func (ev *evaluation) lookupField(f *Field) (any, int) {
	root := ev.doc.Root()
	if len(f.Path) == 0 {
		return f.walk(root)
	}
	key, version := &f.Path[0], ev.doc.Version()
	for i := range ev.fields {
		if l := &ev.fields[i]; l.path == key && l.n == len(f.Path) && l.version == version {
			return l.v, l.at
		}
	}
	v, at := f.walk(root)
	ev.fields[ev.fieldNext] = fieldLookup{path: key, n: len(f.Path), version: version, v: v, at: at}
	ev.fieldNext = (ev.fieldNext + 1) % len(ev.fields)
	return v, at
}

// prepare puts the object in the shape rules see: without
// metadata.managedFields, with the inputs the candidates' kinds built (the
// client's own members of those names are never believed).
func (ev *evaluation) prepare() {
	root, ok := ev.doc.Root().(map[string]any)
	if !ok {
		return
	}
	if _, ok := value.Lookup(root, "metadata", "managedFields"); ok {
		ev.must(ev.doc.Apply(patch.Operation{Op: patch.Remove, Path: managedFieldsPath}))
	}
	ev.putInputs(root) // as built: handle shows each rule its view
}

// traceFor starts the trace of a rule: a new entry of Decision.Trace, or,
// without a trace, the scratch entry.
func (ev *evaluation) traceFor(r Rule) *RuleTrace {
	info := r.Info()
	if ev.e.noTrace {
		// Field by field: it runs for every candidate, and copying the
		// whole entry costs a bulk write barrier while the collector
		// marks.
		t := &ev.scratchTrace
		t.Kind, t.Rule, t.Tier, t.Phase, t.Outcome = info.Kind, info.Key, info.Tier, ev.phase, ""
		if t.Reason != "" || t.Ops != nil || t.LastAppliedErr != nil || t.Detail != nil {
			t.Reason, t.Ops, t.LastAppliedErr, t.Detail = "", nil, nil, nil
		}
		return t
	}
	ev.d.Trace = append(ev.d.Trace, RuleTrace{Kind: info.Kind, Rule: info.Key, Tier: info.Tier, Phase: ev.phase})
	return &ev.d.Trace[len(ev.d.Trace)-1]
}

func (ev *evaluation) run() error {
	// The Doc is copy-on-write: the input is never modified, and what no
	// rule touched stays shared with it (so the final diff skips it).
	ev.doc = &ev.docs.doc
	ev.doc.Reset(ev.original, false)
	// Its copies are lent as the object's maps are, and taken back with
	// them (Request.ObjectStorage).
	ev.doc.LendCopies(ev.req.ObjectStorage)
	ev.inputs = ev.inputsBuf[:0]
	ev.buildInputs()
	ev.prepare()
	ev.doc.Release()
	// The last-applied configuration is parsed when a rule first patches
	// (mirrorLastApplied): most requests patch nothing.

	// Mutate rules, tier by tier: every rule of a tier is matched against
	// the object as the tier found it, then the matching ones apply in
	// order.
	validates, matched := ev.validates[:0], ev.hits[:0]
	defer func() { ev.validates, ev.hits = validates, matched }() // their storage, recycled
	for start := 0; start < len(ev.candidates); {
		end := start
		tier := ev.candidates[start].Info().Tier
		for end < len(ev.candidates) && ev.candidates[end].Info().Tier == tier {
			end++
		}
		matched = matched[:0]
		for _, r := range ev.candidates[start:end] {
			info := r.Info()
			if info.Phase.Has(Validate) && ev.runs(Validate) {
				validates = append(validates, r)
			}
			if !info.Phase.Has(Mutate) || !ev.runs(Mutate) {
				continue
			}
			if info.Converge {
				// Matched when its turn comes, against the object as
				// the rules before it left it.
				matched = append(matched, hit{r: r, lazy: true})
				continue
			}
			tr, ok, err := ev.matchMutate(r)
			if err != nil {
				return err
			}
			if ok {
				matched = append(matched, hit{r: r, tr: tr})
			}
		}
		if err := ev.applyTier(matched); err != nil {
			return err
		}
		if ev.converging {
			if err := ev.converge(ev.candidates[start:end]); err != nil {
				return err
			}
		}
		start = end
	}
	if err := ev.validateAll(validates); err != nil {
		return err
	}
	// A decision completed past the deadline is not one: a Mutate rule may
	// have failed on it.
	if err := ev.ctx.Err(); err != nil {
		return err
	}
	ev.finish()
	return nil
}

// hit is a Mutate rule that matched, with its trace entry (stable:
// Decision.Trace has its final capacity).
type hit struct {
	r  Rule
	tr *RuleTrace
	// lazy: a Converge rule, matched when its turn comes.
	lazy bool
}

// matchMutate matches a Mutate rule against the object as its tier found
// it. The error ends the evaluation (settle).
func (ev *evaluation) matchMutate(r Rule) (*RuleTrace, bool, error) {
	ev.phase = Mutate
	tr := ev.traceFor(r)
	if ev.req.Operation == rules.Delete || ev.req.Operation == rules.Connect {
		tr.Outcome, tr.Reason = Skipped, "mutating rules do not run on "+string(ev.req.Operation)
		return tr, false, nil
	}
	ok, err := ev.match(r, tr)
	return tr, ok && err == nil, ev.settle(r, tr, err)
}

// validateAll runs the Validate rules on the final object.
func (ev *evaluation) validateAll(validates []Rule) error {
	ev.phase = Validate
	for _, r := range validates {
		if err := ev.ctx.Err(); err != nil {
			return err
		}
		tr := ev.traceFor(r)
		ok, err := ev.match(r, tr)
		if err == nil && ok {
			err = r.Apply(ev.handle(r, tr))
		}
		if err := ev.settle(r, tr, err); err != nil {
			return err
		}
	}
	return nil
}

// settle is what a rule's failure means for the evaluation, the one place
// failure policies are read: err is what the rule's Match or Apply
// returned (a rule may also have failed through Handle.Fail). It returns
// the error that ends the evaluation: the context's end; any failure of a
// FailureFail rule (ErrRuleFailed); a Validate rule that cannot be decided
// unless it is FailureIgnore, since it might have rejected the object
// (ErrUndecided). Any other failure is recorded (Decision.Errors) and the
// rule skipped.
func (ev *evaluation) settle(r Rule, tr *RuleTrace, err error) error {
	if err == nil && tr.Outcome != Failed {
		return nil // the common case: nothing failed
	}
	policy := r.Info().FailurePolicy
	if err != nil {
		if ctxErr := ev.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		field, cause := splitField(err)
		if ev.req.Background {
			ev.fail(r, tr, field, cause)
			return nil
		}
		if ev.phase == Validate && policy != FailureIgnore {
			tr.Outcome, tr.Reason = Failed, fmt.Sprintf("%s: %v", field, cause)
			if policy == FailureFail {
				return ev.failed(r, field, cause)
			}
			info := r.Info()
			return fmt.Errorf("%w: %w", ErrUndecided, RuleError{Kind: info.Kind, Rule: info.Key, Field: field, Err: cause})
		}
		ev.fail(r, tr, field, cause)
	}
	if tr.Outcome == Failed && policy == FailureFail && !ev.req.Background {
		last := ev.d.Errors[len(ev.d.Errors)-1]
		return ev.failed(r, last.Field, last.Err)
	}
	return nil
}

// fail records rule r's failure (Handle.Fail).
func (ev *evaluation) fail(r Rule, tr *RuleTrace, field string, err error) {
	tr.Outcome = Failed
	tr.Reason = fmt.Sprintf("%s: %v", field, err)
	ev.d.Errors = append(ev.d.Errors, RuleError{Kind: r.Info().Kind, Rule: r.Info().Key, Field: field, Err: err})
}

// applyTier applies the matching rules of one tier in order.
func (ev *evaluation) applyTier(matched []hit) error {
	for _, m := range matched {
		if err := ev.ctx.Err(); err != nil {
			return err
		}
		if m.lazy {
			tr, ok, err := ev.matchMutate(m.r)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			m.tr = tr
		}
		tr := m.tr
		if ev.e.noTrace {
			tr = ev.traceFor(m.r)
			tr.Outcome = Matched
		}
		ev.phase = Mutate
		h := ev.handle(m.r, tr)
		if err := ev.settle(m.r, tr, m.r.Apply(h)); err != nil {
			return err
		}
		if tr.Outcome == Matched && h.patched {
			ev.converging = ev.converging || m.r.Info().Converge
			if ev.d.Applied == nil {
				// Sized for the tier's matches: growing it rule by rule
				// costs an allocation per doubling on the hot path.
				ev.d.Applied = make([]RuleRef, 0, len(matched))
			}
			info := m.r.Info()
			ev.d.Applied = append(ev.d.Applied, RuleRef{Kind: info.Kind, Key: info.Key})
		}
	}
	return nil
}

// converge applies the tier's Converge rules again, in order, each
// matched against the object as it is, until a pass changes nothing: at
// most one more pass than they are, after which the last of them fails
// with ErrNotConverging (what the passes did stays). A later pass's
// operations join the rule's trace entry.
func (ev *evaluation) converge(tier []Rule) error {
	n, last := 0, Rule(nil)
	for _, r := range tier {
		if info := r.Info(); info.Converge && info.Phase.Has(Mutate) {
			n, last = n+1, r
		}
	}
	for pass := 2; ev.converging; pass++ {
		ev.converging = false
		if pass > n+1 {
			tr := ev.traceFor(last)
			ev.fail(last, tr, "", fmt.Errorf("%w: the object still changes after %d passes of %d rules", ErrNotConverging, n+1, n))
			return ev.settle(last, tr, nil)
		}
		for _, r := range tier {
			info := r.Info()
			if !info.Converge || !info.Phase.Has(Mutate) {
				continue
			}
			if err := ev.ctx.Err(); err != nil {
				return err
			}
			ev.phase = Mutate
			tr := &ev.passTrace
			*tr = RuleTrace{Kind: info.Kind, Rule: info.Key, Tier: info.Tier, Phase: Mutate}
			ok, err := ev.match(r, tr)
			if err := ev.settle(r, tr, err); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
			h := ev.handle(r, tr)
			if err := ev.settle(r, tr, r.Apply(h)); err != nil {
				return err
			}
			if tr.Outcome != Matched || !h.patched {
				continue
			}
			ev.converging = true
			ev.joinTrace(info, tr.Ops)
			ref := RuleRef{Kind: info.Kind, Key: info.Key}
			if !slices.Contains(ev.d.Applied, ref) {
				ev.d.Applied = append(ev.d.Applied, ref)
			}
		}
	}
	return nil
}

// joinTrace adds a later pass's operations to the rule's trace entry.
func (ev *evaluation) joinTrace(info *RuleInfo, ops []patch.Operation) {
	if ev.e.noTrace || len(ops) == 0 {
		return
	}
	for i := range ev.d.Trace {
		if t := &ev.d.Trace[i]; t.Kind == info.Kind && t.Rule == info.Key && t.Phase == Mutate {
			t.Ops = append(t.Ops, ops...)
			return
		}
	}
}

// runs reports whether the request runs phase p (Request.Phases).
func (ev *evaluation) runs(p Phase) bool {
	return ev.req.Phases == 0 || ev.req.Phases.Has(p)
}

// failed is the error of an evaluation that a FailureFail rule's failure
// ends.
func (ev *evaluation) failed(r Rule, field string, cause error) error {
	return fmt.Errorf("%w: %w", ErrRuleFailed, RuleError{Kind: r.Info().Kind, Rule: r.Info().Key, Field: field, Err: cause})
}

// handle is the evaluation's one Handle, set up for rule r (reused: a
// Handle escapes through the Rule interface, and one per call would be an
// allocation per rule).
func (ev *evaluation) handle(r Rule, tr *RuleTrace) *Handle {
	if len(r.Info().Inputs) > 0 {
		ev.viewInputs(r)
	}
	ev.h = Handle{ev: ev, rule: r, tr: tr}
	return &ev.h
}

// EdgeWithin reports whether both ends of an edge ({type, from, to}, as a
// GraphReader gives it) are in ns or cluster-scoped: what a namespaced
// rule may see of the graph.
func EdgeWithin(e any, ns string) bool {
	em, _ := e.(map[string]any)
	for _, end := range []string{"from", "to"} {
		ref, _ := em[end].(map[string]any)
		if n, _ := ref["namespace"].(string); n != "" && n != ns {
			return false
		}
	}
	return true
}

// match asks the rule whether it applies and records the outcome (a rule
// may set its own, Failed, through its Handle).
func (ev *evaluation) match(r Rule, tr *RuleTrace) (bool, error) {
	if fs := r.Info().Index.Fields; fs != nil && ev.e.noTrace && ev.fieldsRefuse(fs) {
		tr.Outcome = NotMatched
		return false, nil
	}
	ok, err := r.Match(ev.handle(r, tr))
	if err != nil || tr.Outcome != "" {
		return false, err
	}
	if ok {
		tr.Outcome = Matched
	} else {
		tr.Outcome = NotMatched
	}
	return ok, nil
}

func (ev *evaluation) parseLastApplied(work map[string]any) {
	s, ok := lookupString(work, "metadata", "annotations", LastAppliedAnnotation)
	if !ok || s == "" {
		return
	}
	// As kubectl writes it (compact, keys in order), the configuration is
	// edited as text (mirrorText).
	if ev.docs.laText.Reset(s) {
		ev.laText = &ev.docs.laText
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
	ev.la = &ev.docs.la
	ev.la.Reset(v, true) // freshly decoded: ours to change in place
}

// mirrorLastApplied applies a rule's operations to the last-applied
// configuration too. A failure there is recorded and leaves that copy as the
// rule found it; it never affects the object itself.
func (ev *evaluation) mirrorLastApplied(h *Handle, ops []patch.Operation) {
	if h.rule.Info().KeepLastApplied {
		return
	}
	if !ev.laParsed {
		ev.laParsed = true
		ev.parseLastApplied(ev.original)
	}
	if ev.laText != nil && ev.mirrorText(ops) {
		return
	}
	if ev.la == nil {
		return
	}
	mark := ev.la.Mark()
	applied := false
	for _, op := range ops {
		if !ev.mirrored(op.Path) {
			continue
		}
		ev.la.Expand(op.Path)
		if err := ev.la.Apply(op); err != nil {
			ev.la.Rollback(mark)
			h.tr.LastAppliedErr = err
			ev.d.Errors = append(ev.d.Errors, RuleError{Kind: h.rule.Info().Kind, Rule: h.rule.Info().Key, Err: err, LastApplied: true})
			return
		}
		applied = true
	}
	ev.la.Release()
	ev.laChanged = ev.laChanged || applied
}

// mirrorText applies the operations to the last-applied configuration's
// text: most rules set or remove members along objects (patch.Text), which
// costs no decoding and no encoding. When Text does not do one of them it
// returns false, the text as the rule found it, and the configuration is
// decoded from it for la, only along the paths the operations take, the
// rest written back as it is (value.DecodeLazy).
func (ev *evaluation) mirrorText(ops []patch.Operation) bool {
	t := ev.laText
	if len(ops) > 1 {
		t.Mark() // a refused operation leaves the text as it is
	}
	applied := false
	for _, op := range ops {
		if !ev.mirrored(op.Path) {
			continue
		}
		if !t.Apply(op) {
			if len(ops) > 1 {
				t.Rollback()
			}
			m, _ := value.DecodeLazy(t.String()) // canonical: decoded
			ev.laText, ev.la = nil, &ev.docs.la
			ev.la.Reset(m, true)
			return false
		}
		applied = true
	}
	ev.laChanged = ev.laChanged || applied
	return true
}

// mirrored reports whether an operation's path exists in a last-applied
// configuration at all: the inputs, status, managedFields and the
// annotation itself do not.
func (ev *evaluation) mirrored(p patch.Pointer) bool {
	if len(p) == 0 {
		return false
	}
	if p[0] == "status" || ev.isInput(p[0]) {
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
		for i := range ev.inputs {
			ev.restore(ev.inputs[i].path)
		}
		if _, ok := value.Lookup(ev.doc.Root(), "metadata"); ok {
			ev.restore(managedFieldsPath)
		}
		if ev.laChanged {
			ev.writeLastApplied()
		}
		ev.doc.Release()
	}
	result := ev.doc.Root()
	ev.d.Patch = ev.docs.differ.DiffTo(ev.req.PatchStorage, ev.original, result)
	if len(ev.d.Patch) == 0 {
		ev.d.Object = ev.original
	} else {
		ev.d.Object = result
	}
}

var (
	managedFieldsPath = patch.Pointer{"metadata", "managedFields"}
	lastAppliedPath   = patch.Pointer{"metadata", "annotations", LastAppliedAnnotation}
)

// restore puts the original's member at p (a top-level or metadata member)
// back into the result, or removes it when the original had none. Where
// the result has no object to hold it (the object's metadata is another
// value, or a rule wrote one there), there is nothing to restore: the
// result has no such member either.
func (ev *evaluation) restore(p patch.Pointer) {
	if parent, ok := value.Lookup(ev.doc.Root(), p[:len(p)-1]...); !ok {
		return
	} else if _, ok := parent.(map[string]any); !ok {
		return
	}
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
	if ev.laText != nil {
		ev.must(ev.doc.Put(lastAppliedPath, ev.laText.String()))
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

// checkUnchecked checks the request's ObjectJSON when it is unchecked
// (Request.ObjectUnchecked) and Evaluate does not decode it.
func checkUnchecked(req *Request) error {
	if !req.ObjectUnchecked || req.ObjectJSON == nil {
		return nil
	}
	if err := value.Valid(req.ObjectJSON); err != nil {
		return fmt.Errorf("%w: object: %v", ErrInvalidRequest, err)
	}
	return nil
}

// decodeObject decodes the request's object from its JSON text.
func decodeObject(raw []byte) (any, error) {
	v, _, err := decodeObjectOmitting(nil, raw)
	return v, err
}

// decodeObjectOmitting decodes the request's object from its JSON text but
// for the member at path (value.DecodeOmitting), whose text it returns; st
// (nil: none) lends its maps.
func decodeObjectOmitting(st *value.Storage, raw []byte, path ...string) (any, []byte, error) {
	v, omitted, err := st.DecodeOmitting(raw, path...)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: object: %v", ErrInvalidRequest, err)
	}
	return v, omitted, nil
}

func lookupString(v any, path ...string) (string, bool) {
	x, ok := value.Lookup(v, path...)
	if !ok {
		return "", false
	}
	s, ok := x.(string)
	return s, ok
}
