package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/value"
)

// Handle is what one rule may do during one evaluation: read the request
// and the object as earlier rules left it, patch it atomically, reject,
// warn, fail, and record its trace. The kernel passes a Handle to
// Rule.Match and Rule.Apply; it is valid only during that call.
type Handle struct {
	ev      *evaluation
	rule    Rule
	tr      *RuleTrace
	patched bool
}

// Context is the evaluation's context: rules check it in long loops.
func (h *Handle) Context() context.Context { return h.ev.ctx }

// Request is the admission request (read-only).
func (h *Handle) Request() *Request { return &h.ev.req }

// Phase is the phase the rule runs in: Mutate or Validate (a rule of both
// phases runs twice).
func (h *Handle) Phase() Phase { return h.ev.phase }

// Namespace is the object's namespace ("" when cluster-scoped).
func (h *Handle) Namespace() string { return h.ev.req.Namespace }

// Kind is the object's kind.
func (h *Handle) Kind() string { return h.ev.kind }

// Object is the object as earlier rules left it (read-only): for a Mutate
// rule, as its tier found it until it applies.
func (h *Handle) Object() any { return h.ev.doc.Root() }

// ObjectVersion changes whenever the object under evaluation does (a
// rule's patch, a rollback, the kernel's own writes) and never comes back
// within the evaluation: what a kind computed from Object at one version
// holds for as long as the version stays. (An object's identity does not
// say it: the kernel changes the containers it copied in place.)
func (h *Handle) ObjectVersion() uint64 { return h.ev.doc.Version() }

// TrackWrites starts recording what the rules' patches write, for
// ObjectUnchanged: a kind that keeps values computed from the object calls
// it when it keeps one (recording costs nothing until then).
func (h *Handle) TrackWrites() {
	if ev := h.ev; !ev.track {
		ev.track, ev.trackFrom = true, ev.doc.Version()
	}
}

// ObjectUnchanged reports whether, since the object was at version since
// (ObjectVersion), every change was a rule's patch (Patch, PatchRFC6902)
// that wrote none of reads: paths into the object, an array's index or
// "-" standing for any of its elements (an element added or removed moves
// the others). A value computed from those paths at version since still
// holds. It is false when it cannot tell: a rollback, the kernel's own
// writes, changes before TrackWrites.
func (h *Handle) ObjectUnchanged(since uint64, reads [][]string) bool {
	ev := h.ev
	now := ev.doc.Version()
	if since == now {
		return true
	}
	if !ev.track || since < ev.trackFrom {
		return false
	}
	i := len(ev.writes)
	for i > 0 && ev.writes[i-1].from >= since {
		i--
	}
	if i == len(ev.writes) || ev.writes[i].from != since {
		return false
	}
	at := since
	for _, w := range ev.writes[i:] {
		if w.from != at || w.whole {
			return false // a change no patch made, or all of the object
		}
		for _, sp := range ev.spans[w.first:w.last] {
			for _, r := range reads {
				if overlaps(ev.tokens[sp[0]:sp[1]], r) {
					return false
				}
			}
		}
		at = w.to
	}
	return at == now
}

// write is one patch: it took the object from version from to version to
// and wrote the paths spans[first:last] (whole: the whole object).
type write struct {
	from, to    uint64
	first, last int
	whole       bool
}

// overlaps reports whether writing w may change what is read at r: one is
// a prefix of the other, or they part at an array index of w's (a token
// of digits or "-": an element added or removed moves the others).
func overlaps(w, r []string) bool {
	for i := 0; i < len(w) && i < len(r); i++ {
		if w[i] != r[i] {
			return isIndex(w[i])
		}
	}
	return true
}

// isIndex reports whether tok may name an array's element: "-", or digits
// with an optional sign.
func isIndex(tok string) bool {
	if tok == "-" {
		return true
	}
	t := strings.TrimPrefix(tok, "-")
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// Objects reads related objects by reference; nil when the engine has no
// reader.
func (h *Handle) Objects() ObjectReader { return h.ev.e.objects }

// Authorizer answers authorization questions; nil when the engine has
// none (offline).
func (h *Handle) Authorizer() Authorizer { return h.ev.e.authz }

// maxObjectName is the longest name of a Kubernetes object (a DNS
// subdomain).
const maxObjectName = 253

// ErrReadForbidden is in the chain of the error of AuthorizeRead when the
// rule's reader may not make the read.
var ErrReadForbidden = errors.New("the rule may not read this")

// RuleReaderUser is the identity whose rights a namespaced rule's reads
// have: the service account account of namespace.
func RuleReaderUser(namespace, account string) UserInfo {
	return UserInfo{Username: "system:serviceaccount:" + namespace + ":" + account,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
}

// AuthorizeRead checks that the reader of owner, the namespace of the
// namespaced rule reading (Options.RuleReader), may get (name not empty)
// or list resource of group in namespace, asking the engine's Authorizer
// (a SubjectAccessReview in the cluster); nil when the engine has no
// RuleReader or no Authorizer (offline: the context objects are what the
// user gave).
func (h *Handle) AuthorizeRead(owner, group, resource, namespace, name string) error {
	e := h.ev.e
	if e.ruleReader == "" || e.authz == nil {
		return nil
	}
	// Names an object's text made: no object has a longer one, and none
	// is sent to the API server.
	if len(name) > maxObjectName || len(namespace) > maxObjectName {
		return fmt.Errorf("%w: a name of %d bytes names no object (at most %d)", ErrReadForbidden, max(len(name), len(namespace)), maxObjectName)
	}
	verb := "list"
	if name != "" {
		verb = "get"
	}
	user := RuleReaderUser(owner, e.ruleReader)
	ok, reason, err := e.authz.Authorize(h.ev.ctx, AuthzAttributes{User: user, Verb: verb, ResourceRequest: true,
		Group: group, Resource: resource, Namespace: namespace, Name: name})
	if err != nil {
		return fmt.Errorf("asking whether %s may %s %s: %w", user.Username, verb, resource, err)
	}
	if !ok {
		if reason != "" {
			reason = ": " + reason
		}
		return fmt.Errorf("%w: a rule in %s reads as %s, which may not %s %s in %s (grant it with a Role and RoleBinding)%s",
			ErrReadForbidden, owner, user.Username, verb, resource, namespace, reason)
	}
	return nil
}

// API reads the API server by path; nil when the engine has none.
func (h *Handle) API() APIReader { return h.ev.e.api }

// Kinds reads objects of any kind; nil when the engine has none.
func (h *Handle) Kinds() KindReader { return h.ev.e.kinds }

// HTTP makes HTTP requests; nil when the engine has none.
func (h *Handle) HTTP() HTTPReader { return h.ev.e.http }

// Images reads container images' data; nil when the engine has none.
func (h *Handle) Images() ImageReader { return h.ev.e.images }

// Globals reads global context entries; nil when the engine has none.
func (h *Handle) Globals() GlobalContextReader { return h.ev.e.globals }

// Graph reads the relationship graph; nil when the engine has none.
func (h *Handle) Graph() GraphReader { return h.ev.e.graph }

// Inventory gives the replicated objects (nil: none).
func (h *Handle) Inventory() InventoryReader { return h.ev.e.inventory }

// Schemas types custom resources' values by their schemas; nil when the
// engine has none.
func (h *Handle) Schemas() SchemaReader { return h.ev.e.schemas }

// Roles names the requesting user's RBAC roles; nil when the engine has
// no reader.
func (h *Handle) Roles() RoleReader { return h.ev.e.roles }

// Tracing reports whether the evaluation keeps a trace (Decision.Trace):
// without it, rules skip recording their steps.
func (h *Handle) Tracing() bool { return !h.ev.e.noTrace }

// Trace is the rule's trace entry; without Tracing it is a scratch entry
// that nobody reads after the call.
func (h *Handle) Trace() *RuleTrace { return h.tr }

// Activation is a lang.Activation reused for every evaluation of one
// request: set the fields a program reads before each call.
func (h *Handle) Activation() *lang.Activation { return &h.ev.act }

// Values is a scratch buffer (length 0) reused between the rules of one
// evaluation; what a rule keeps past its call (in a trace) it must copy.
// Hand a grown buffer back with SetValues.
func (h *Handle) Values() []any { return h.ev.values[:0] }

// SetValues keeps buf as the scratch buffer Values returns (the engine
// clears what it holds when the evaluation ends).
func (h *Handle) SetValues(buf []any) { h.ev.values = buf[:0] }

// Keep copies vals into storage that lives as long as the decision (for a
// rule's trace), cut from larger blocks: one allocation for many rules'
// values instead of one per copy.
func (h *Handle) Keep(vals []any) []any {
	ev := h.ev
	if len(vals) == 0 {
		return nil
	}
	if cap(ev.kept)-len(ev.kept) < len(vals) {
		ev.kept = make([]any, 0, max(len(vals), 256))
	}
	n := len(ev.kept)
	ev.kept = append(ev.kept, vals...)
	return ev.kept[n : n+len(vals) : n+len(vals)]
}

// KindState is a slot that lives for one evaluation, one per kind (by
// RuleInfo.Kind): a kind keeps there what its rules share during the
// evaluation (storage its traces are cut from, say). It starts nil, or
// holding what the kind left there in an earlier evaluation of the same
// Engine, reset, when that implements StateResetter. The pointer is valid
// until the next call of KindState or State: read and set the slot at
// once, never keep the pointer.
func (h *Handle) KindState() *any { return h.State(h.rule.Info().Kind) }

// KindStateOf returns the kind's state (KindState) as a *T, a new T put
// there when the slot holds none.
func KindStateOf[T any](h *Handle) *T {
	slot := h.KindState()
	st, _ := (*slot).(*T)
	if st == nil {
		st = new(T)
		*slot = st
	}
	return st
}

// State is KindState by a key of the adapter's choosing: the slot the
// rules of an adapter owning many kinds share (a group's name, say).
func (h *Handle) State(key string) *any {
	ev := h.ev
	for i := range ev.kindState {
		if ev.kindState[i].kind == key {
			return &ev.kindState[i].state
		}
	}
	ev.kindState = append(ev.kindState, kindState{kind: key})
	return &ev.kindState[len(ev.kindState)-1].state
}

type kindState struct {
	kind  string
	state any
}

// A StateResetter is a kind state (Handle.KindState) that the Engine keeps
// for its next evaluation: ResetState drops everything the state refers
// to of the evaluation that ends (the object, the rules, values, errors),
// keeping its storage, and reports whether the state is worth keeping (a
// state grown beyond what a usual evaluation needs is better dropped).
type StateResetter interface {
	ResetState() bool
}

// recycleStates keeps, in the storage of states, the states that reset
// themselves (StateResetter), in order.
func recycleStates(states []kindState) []kindState {
	kept := states[:0]
	for _, st := range states {
		if r, ok := st.state.(StateResetter); ok && r.ResetState() {
			kept = append(kept, st)
		}
	}
	clear(states[len(kept):cap(states)])
	return kept
}

// Text is a scratch byte buffer, as Values.
func (h *Handle) Text() []byte { return h.ev.text[:0] }

// SetText keeps buf as the scratch buffer Text returns.
func (h *Handle) SetText(buf []byte) { h.ev.text = buf[:0] }

// PatchError is the failure of Handle.Patch: the operation at Index could
// not be applied; Path is true when its path is at fault.
type PatchError struct {
	Index int
	Path  bool
	Err   error
}

func (e *PatchError) Error() string { return fmt.Sprintf("operation %d: %v", e.Index, e.Err) }
func (e *PatchError) Unwrap() error { return e.Err }

// Patch applies a Mutate rule's operations atomically: all of them, or
// none when one fails (the error is a *PatchError; report it with Fail).
// An operation may not write under an input's member (ErrInput), and
// one that replaces the whole object must give an object. The operations
// are repeated on the last-applied-configuration copy, if the object has
// one; a failure there is recorded and leaves the object patched. Patch
// keeps nothing of ops (the errors it returns or records hold copies of
// their paths), and without a trace (Tracing) neither does the engine: the
// rule may reuse their storage once it returns.
func (h *Handle) Patch(ops []patch.Operation) error {
	return h.patch(ops, (*patch.Doc).Apply, false)
}

// PatchRFC6902 is Patch with RFC 6902's semantics (patch.ApplyRFC6902's)
// instead of KubeMod's: an operation whose parent or target is missing, or
// whose index is out of range, fails (and none is applied). A rule that
// evaluated a standard JSON Patch applies it here directly rather than to
// a copy of the object it then diffs. The last-applied configuration is
// given the difference the operations made, not the operations, as if the
// rule had diffed: a replace with the value already there changes nothing
// in it.
func (h *Handle) PatchRFC6902(ops []patch.Operation) error {
	return h.patch(ops, (*patch.Doc).ApplyRFC6902, true)
}

// mirrorsLastApplied reports whether the rule's operations are repeated on
// a last-applied configuration: the object has one and the rule does not
// keep it (RuleInfo.KeepLastApplied).
func (h *Handle) mirrorsLastApplied() bool {
	if h.rule.Info().KeepLastApplied {
		return false
	}
	_, ok := lookupString(h.ev.original, lastAppliedPath...)
	return ok
}

// patch applies ops with apply; diffed mirrors the difference they made
// rather than the operations themselves.
func (h *Handle) patch(ops []patch.Operation, apply func(*patch.Doc, patch.Operation) error, diffed bool) error {
	ev := h.ev
	wholeObject := false
	for i, op := range ops {
		if len(op.Path) == 0 {
			wholeObject = true
			if _, ok := op.Value.(map[string]any); !ok && op.Op != patch.Remove {
				return &PatchError{Index: i, Path: true, Err: fmt.Errorf("the operation replaces the whole object with a JSON %s", value.TypeName(op.Value))}
			}
		} else if ev.isInput(op.Path[0]) {
			return &PatchError{Index: i, Path: true, Err: &InputError{Member: op.Path[0], Path: slices.Clone(op.Path)}}
		}
	}
	// The tree as it was, kept as it is (Freeze), to take the difference
	// from: only the containers the operations change are copied and
	// walked.
	var before any
	diffed = diffed && h.mirrorsLastApplied()
	direct := false
	if diffed {
		ev.direct, direct = patch.MemberChanges(ev.doc.Root(), ops, ev.direct[:0])
		if !direct {
			before = ev.doc.Freeze()
		}
	}
	mark, from := ev.doc.Mark(), ev.doc.Version()
	for i, op := range ops {
		if err := apply(ev.doc, op); err != nil {
			ev.doc.Rollback(mark)
			return &PatchError{Index: i, Err: err}
		}
	}
	if wholeObject {
		// The inputs go back, and managedFields go again.
		ev.prepare()
	}
	ev.logWrite(from, ops, wholeObject)
	ev.doc.Release()
	mirror := ops
	switch {
	case direct:
		mirror = patch.DiffChangesTo(ev.mirrorOps, ev.doc.Root(), ev.direct)
		clear(ev.direct)
		defer func() { // mirrored: the storage is the next rule's
			clear(mirror)
			ev.mirrorOps = mirror[:0]
		}()
	case diffed && !wholeObject:
		// Only the operations' paths changed: the difference is walked
		// along them (a test writes nothing).
		paths := ev.paths[:0]
		for _, op := range ops {
			if op.Op != patch.Test {
				paths = append(paths, op.Path)
			}
		}
		mirror = ev.docs.differ.DiffPaths(before, ev.doc.Root(), paths)
		clear(paths)
		ev.paths = paths[:0]
	case diffed:
		mirror = ev.docs.differ.Diff(before, ev.doc.Root())
	}
	ev.mirrorLastApplied(h, mirror)
	h.patched = h.patched || len(ops) > 0
	return nil
}

// logWrite records, once TrackWrites was called, that ops took the object
// from version from to the current one (ObjectUnchanged). The paths'
// tokens are copied (the operations are the rule's) into storage the
// engine reuses.
func (ev *evaluation) logWrite(from uint64, ops []patch.Operation, whole bool) {
	if !ev.track {
		return
	}
	w := write{from: from, to: ev.doc.Version(), whole: whole, first: len(ev.spans)}
	if w.from == w.to {
		return
	}
	if !whole {
		for _, op := range ops {
			start := len(ev.tokens)
			ev.tokens = append(ev.tokens, op.Path...)
			ev.spans = append(ev.spans, [2]int{start, len(ev.tokens)})
		}
	}
	w.last = len(ev.spans)
	ev.writes = append(ev.writes, w)
}

// Fail records that the rule failed in field (spec.patch[2].value): its
// outcome is Failed and the decision lists the error. A failed Mutate rule
// has changed nothing.
func (h *Handle) Fail(field string, err error) {
	h.ev.fail(h.rule, h.tr, field, err)
}

// Reject rejects the object with message (may be empty); msgErr says why a
// message could not be built, if so.
func (h *Handle) Reject(message string, msgErr error) {
	info := h.rule.Info()
	h.ev.d.Rejections = append(h.ev.d.Rejections, Rejection{Kind: info.Kind, Rule: info.Key, Message: message, MessageError: msgErr})
}

// RejectStandalone rejects the object with a message that is the whole
// denial as the rule's peer words it (Gatekeeper's "[name] message"): the
// denial gives it without the kind's preamble.
func (h *Handle) RejectStandalone(message string) {
	info := h.rule.Info()
	h.ev.d.Rejections = append(h.ev.d.Rejections, Rejection{Kind: info.Kind, Rule: info.Key, Message: message, Standalone: true})
}

// Deny rejects the object with message and a status: reason (Invalid,
// Forbidden, ...) and its HTTP code, which the webhook answers with when
// this is the first rejection.
func (h *Handle) Deny(message, reason string, code int) {
	info := h.rule.Info()
	h.ev.d.Rejections = append(h.ev.d.Rejections, Rejection{Kind: info.Kind, Rule: info.Key, Message: message, Reason: reason, Code: code})
}

// Annotate adds an audit annotation to the decision (the webhook returns
// it in the response's auditAnnotations).
func (h *Handle) Annotate(key, value string) {
	info := h.rule.Info()
	h.ev.d.AuditAnnotations = append(h.ev.d.AuditAnnotations, AuditAnnotation{Kind: info.Kind, Rule: info.Key, Key: key, Value: value})
}

// Generate asks for obj to exist beside the reviewed object (see
// Generated); name is the inner rule generating it ("" if none).
func (h *Handle) Generate(name string, obj map[string]any, synchronize bool) {
	info := h.rule.Info()
	h.ev.d.Generated = append(h.ev.d.Generated, Generated{Kind: info.Kind, Rule: info.Key, Name: name, Object: obj, Synchronize: synchronize})
}

// Change records that obj, an existing object the rule read, is to be
// changed by ops (see Generated.Patch); name is the inner rule ("" if
// none).
func (h *Handle) Change(name string, obj map[string]any, ops []patch.Operation) {
	info := h.rule.Info()
	h.ev.d.Generated = append(h.ev.d.Generated, Generated{Kind: info.Kind, Rule: info.Key, Name: name, Object: obj, Patch: ops})
}

// Warn adds a warning to the decision.
func (h *Handle) Warn(message string) {
	info := h.rule.Info()
	h.ev.d.Warnings = append(h.ev.d.Warnings, Warning{Kind: info.Kind, Rule: info.Key, Message: message})
}
