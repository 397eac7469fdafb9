package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// DragnetPath is where KubeMod serves its mutating webhook; modwright keeps
// it: a review there runs every rule, mutations and validations (KubeMod's
// Reject rules ran in its mutating webhook). MutatePath and ValidatePath
// split them, as the chart registers them: mutations in the mutating
// webhook, validations in a validating webhook, where the API server
// sends the final object, after every mutating webhook and mutating
// admission policy (one that runs after modwright's mutations cannot slip
// an object past its validations).
const (
	DragnetPath  = "/dragnet-webhook"
	MutatePath   = "/dragnet-mutate"
	ValidatePath = "/dragnet-validate"
)

// Defaults for Options.
const (
	DefaultMaxReviewBytes = 8 << 20
	DefaultTimeout        = 10 * time.Second
	// maxWarnings bounds the warnings of one response; the API server shows
	// them to the user, and truncates long lists anyway.
	maxWarnings   = 8
	maxWarningLen = 240
)

// Snapshots gives the serving rule snapshot, nil before the first one.
type Snapshots interface {
	Current() *engine.Snapshot
}

// Evaluator decides one request against a snapshot. The dragnet leaves a
// review's object unchecked (engine.Request.ObjectUnchecked): an Evaluator
// checks it, as engine.Engine does, and refuses it with an error wrapping
// engine.ErrInvalidRequest when it is not JSON.
type Evaluator interface {
	Evaluate(ctx context.Context, snap *engine.Snapshot, req engine.Request) (*engine.Decision, error)
}

var _ Evaluator = (*engine.Engine)(nil)

// name is the handler's metrics label: Options.Name, and the phase it
// runs alone (dragnet-mutate, dragnet-validate).
func (d *Dragnet) name(phases engine.Phase) string {
	name := d.opts.Name
	if name == "" {
		name = webhookName
	}
	switch phases {
	case engine.Mutate:
		return name + "-mutate"
	case engine.Validate:
		return name + "-validate"
	}
	return name
}

// Phase is a handler of this dragnet (its evaluation slots, memory
// budget and workers) that runs the rules' phase p alone: engine.Mutate
// behind a mutating webhook, engine.Validate behind a validating one.
func (d *Dragnet) Phase(p engine.Phase) http.Handler { return phaseHandler{d, p, d.name(p)} }

type phaseHandler struct {
	d    *Dragnet
	p    engine.Phase
	name string // its metrics label, made once
}

func (h phaseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.d.serve(w, r, h.p, h.name) }

// KindFilter serves, of another source's snapshots, the rules of the kinds
// Keep accepts: kinitiras' own webhook paths serve its kinds only, and the
// dragnet then serves the others. The filtered snapshot is built once per
// source snapshot.
type KindFilter struct {
	Source Snapshots
	Keep   func(kind string) bool

	last atomic.Pointer[filtered]
}

type filtered struct{ src, out *engine.Snapshot }

var _ Snapshots = (*KindFilter)(nil)

// Current returns the filtered current snapshot (nil while the source has
// none).
func (f *KindFilter) Current() *engine.Snapshot {
	src := f.Source.Current()
	if src == nil {
		return nil
	}
	if l := f.last.Load(); l != nil && l.src == src {
		return l.out
	}
	var rs []engine.Rule
	for _, r := range src.Rules() {
		if f.Keep(r.Info().Kind) {
			rs = append(rs, r)
		}
	}
	out := engine.NewSnapshot(rs)
	f.last.Store(&filtered{src, out})
	return out
}

// Options configure a Dragnet handler.
type Options struct {
	// Name labels the handler's metrics ("webhook"); "" means dragnet.
	Name string
	// Evaluator evaluates the rules; nil: an engine.Engine with Engine's
	// readers (never keeping a trace: nobody reads it here).
	Evaluator Evaluator
	Engine    engine.Options
	Snapshots Snapshots
	Log       logr.Logger
	Metrics   *metrics.Metrics // nil: none
	// Observers are told of every decision (the rule kinds' own metrics:
	// kinds.Registry.Observers).
	Observers []Observer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxReviewBytes bounds a request body; 0 means DefaultMaxReviewBytes.
	MaxReviewBytes int64
	// Timeout bounds one evaluation. The API server's own deadline (the
	// request's ?timeout=) applies when shorter; modwright answers at 90% of
	// the smaller one so that its answer arrives in time. 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxInFlight bounds the reviews evaluated at once; the others wait,
	// their bodies read, until a slot frees or their deadline passes (then
	// HTTP 503). 0 means DefaultMaxInFlight().
	MaxInFlight int
	// MaxReviewMemory bounds, in bytes, the memory of the reviews being
	// evaluated, as estimated from their bodies (reviewCost in admit.go);
	// the bodies being read or waiting for admission may hold half as
	// much more. A review waits for its share until its deadline (then HTTP
	// 503); one that alone exceeds the budget is refused (HTTP 413). 0
	// means DefaultMaxReviewMemory().
	MaxReviewMemory int64
	// FailOpen admits the object unchanged, with a warning, when
	// evaluation fails (deadline, panic, undecodable object). The default
	// denies it with code 500, so that no rule is silently skipped.
	FailOpen bool
}

// An Observer is told of every decision the dragnet makes. Decided must
// not keep the request's object or anything of the decision but its
// Generated objects past its return: the object's maps are reused for the
// next review.
type Observer interface {
	Decided(req engine.Request, dec *engine.Decision)
}

// DefaultMaxInFlight is 4 reviews per CPU (at least 8): evaluation is
// CPU-bound, so more at once only costs memory and latency.
func DefaultMaxInFlight() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// Dragnet is the mutating admission webhook every object goes through. It is
// an http.Handler, usable from the standalone server and from
// controller-runtime's webhook server alike.
type Dragnet struct {
	opts  Options
	now   func() time.Time
	bufs  sync.Pool     // *bytes.Buffer for request and response bodies
	slots chan struct{} // evaluation slots
	mem   *budget       // memory reservations (admit.go)
	// jobs hands reviews to idle evaluation workers (see evaluate).
	jobs    chan *evalJob
	jobPool sync.Pool // *evalJob
}

var _ http.Handler = (*Dragnet)(nil)

// NewDragnet returns the handler.
func NewDragnet(opts Options) *Dragnet {
	if opts.Evaluator == nil {
		eo := opts.Engine
		eo.NoTrace = true
		opts.Evaluator = engine.New(eo)
	}
	if opts.MaxReviewBytes <= 0 {
		opts.MaxReviewBytes = DefaultMaxReviewBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight()
	}
	if opts.MaxReviewMemory <= 0 {
		opts.MaxReviewMemory = DefaultMaxReviewMemory()
	}
	d := &Dragnet{opts: opts, now: opts.Now, slots: make(chan struct{}, opts.MaxInFlight), mem: newBudget(opts.MaxReviewMemory), jobs: make(chan *evalJob)}
	if d.now == nil {
		d.now = time.Now
	}
	d.bufs.New = func() any { return new(bytes.Buffer) }
	d.jobPool.New = func() any { return &evalJob{done: make(chan struct{}, 1)} }
	return d
}

// evalJob is one review handed to an evaluation worker: its body in, its
// response's text out (or the error that refused it).
type evalJob struct {
	ctx      context.Context
	body     []byte
	phases   engine.Phase
	patchBuf *bytes.Buffer
	out      *bytes.Buffer
	rv       *review
	outcome  string
	herr     *httpError
	panicked any
	done     chan struct{}
	// ops is the storage of the decision's patch, trees the maps of the
	// object decoded from the review, both kept with the job.
	ops   patch.OpStorage
	trees value.Storage
}

// workerIdle is how long an evaluation worker waits for another review
// before it exits.
const workerIdle = time.Minute

// evaluate answers the review in body on an evaluation worker and waits
// for it (answer).
//
// Answering a review needs a deep stack (decoding, the rules, encoding).
// net/http serves every HTTP/2 request on a new goroutine, whose small
// stack would grow by copying, more than once per review; a worker keeps
// its grown stack from one review to the next. There is at most one busy
// worker per evaluation slot; idle ones exit after workerIdle.
func (d *Dragnet) evaluate(ctx context.Context, body []byte, phases engine.Phase, patchBuf, out *bytes.Buffer) (*review, string, *httpError) {
	j := d.jobPool.Get().(*evalJob)
	j.ctx, j.body, j.phases, j.patchBuf, j.out = ctx, body, phases, patchBuf, out
	select {
	case d.jobs <- j: // an idle worker took it
	default:
		go d.worker(j)
	}
	<-j.done
	rv, outcome, herr, p := j.rv, j.outcome, j.herr, j.panicked
	*j = evalJob{done: j.done, ops: j.ops, trees: j.trees}
	d.jobPool.Put(j)
	if p != nil {
		panic(p) // on the request's goroutine, as if evaluated there
	}
	return rv, outcome, herr
}

func (d *Dragnet) worker(j *evalJob) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		d.runJob(j)
		idle.Reset(workerIdle)
		select {
		case j = <-d.jobs:
		case <-idle.C:
			return
		}
	}
}

func (d *Dragnet) runJob(j *evalJob) {
	defer func() {
		if p := recover(); p != nil {
			j.panicked = p
		}
		j.done <- struct{}{}
	}()
	j.rv, j.outcome, j.herr = d.answer(j.ctx, j.body, j.phases, j.patchBuf, j.out, &j.ops, &j.trees)
}

// answer decodes the review in body, evaluates it with the current
// snapshot and writes the response into out; a review it cannot evaluate
// (malformed, or no snapshot yet) is refused with an httpError, its
// outcome the metrics'.
func (d *Dragnet) answer(ctx context.Context, body []byte, phases engine.Phase, patchBuf, out *bytes.Buffer, ops *patch.OpStorage, trees *value.Storage) (*review, string, *httpError) {
	rv, snap, outcome, herr := d.decode(body, true)
	if herr != nil {
		return rv, outcome, herr
	}
	resp, outcome, herr := d.review(ctx, snap, rv, body, phases, patchBuf, ops, trees)
	if herr != nil {
		return nil, outcome, herr
	}
	out.Write(appendResponse(out.AvailableBuffer(), resp))
	return rv, outcome, nil
}

// decode reads the review in body (its object's text left to the engine
// to check when deferObject: decodeReviewDeferring) and takes the
// snapshot to evaluate it with; a malformed review, or no snapshot yet, is
// refused with an httpError, its outcome the metrics' (rv is nil when
// malformed).
func (d *Dragnet) decode(body []byte, deferObject bool) (*review, *engine.Snapshot, string, *httpError) {
	rv, err := decodeReviewWith(body, deferObject)
	if err != nil {
		if deferObject {
			// decodeReview refuses every body decodeReviewDeferring does,
			// and says why as it always has.
			if _, strict := decodeReview(body); strict != nil {
				err = strict
			}
		}
		return nil, nil, metrics.OutcomeInvalid, &httpError{http.StatusBadRequest, err.Error()}
	}
	snap := d.opts.Snapshots.Current()
	if snap == nil {
		// Not ready: an error lets the API server apply the webhook's
		// failurePolicy, as for an unreachable webhook.
		return rv, nil, metrics.OutcomeError, &httpError{http.StatusServiceUnavailable, "modwright: the rule snapshot is not loaded yet"}
	}
	return rv, snap, "", nil
}

const webhookName = "dragnet" // the default Options.Name

// httpError is a request the handler refuses before reading a review.
type httpError struct {
	code int
	msg  string
}

// ServeHTTP runs every rule, mutations and validations.
func (d *Dragnet) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.serve(w, r, 0, d.name(0)) }

// serve answers one review, running phases (zero: all) of the rules;
// name is its metrics label.
func (d *Dragnet) serve(w http.ResponseWriter, r *http.Request, phases engine.Phase, name string) {
	start := d.now()
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(d.deadline(r)))
	defer cancel()
	if herr := checkRequest(w, r); herr != nil {
		d.refuse(w, name, nil, metrics.OutcomeInvalid, herr, start)
		return
	}
	in := d.bufs.Get().(*bytes.Buffer)
	out := d.bufs.Get().(*bytes.Buffer)
	patchBuf := d.bufs.Get().(*bytes.Buffer)
	var bodyHeld, cost int64
	defer func() {
		d.mem.body.Release(bodyHeld)
		d.putBuffer(in)
		d.putBuffer(out)
		d.putBuffer(patchBuf)
	}()

	// The body first, within the deadline: a slow client holds no
	// evaluation slot and only the memory it has sent (admit.go).
	body, held, herr := d.readBody(ctx, w, r, in.AvailableBuffer())
	bodyHeld = held
	if cap(body) > in.Cap() {
		*in = *bytes.NewBuffer(body[:0]) // keep the grown storage for reuse
	}
	if herr != nil {
		outcome := metrics.OutcomeInvalid
		if herr.code == http.StatusServiceUnavailable || herr.code == http.StatusRequestTimeout {
			outcome = metrics.OutcomeError
		}
		d.refuse(w, name, nil, outcome, herr, start)
		return
	}
	cost = reviewCost(body)
	if herr := d.admit(ctx, cost); herr != nil {
		// The review is read only to answer and count the refusal as an
		// admitted one would be (a malformed review, no snapshot yet).
		outcome := metrics.OutcomeError
		rv, _, o, derr := d.decode(body, false)
		if derr != nil {
			herr, outcome = derr, o
		} else {
			d.opts.Log.V(1).Info("review not admitted", "uid", rv.Request.UID, "bytes", len(body), "cost", cost, "reason", herr.msg)
		}
		d.refuse(w, name, rv, outcome, herr, start)
		return
	}
	defer d.release(cost)
	// The evaluation's reservation covers the body.
	d.mem.body.Release(bodyHeld)
	bodyHeld = 0

	rv, outcome, herr := d.evaluate(ctx, body, phases, patchBuf, out)
	if herr != nil {
		d.refuse(w, name, rv, outcome, herr, start)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(out.Bytes()); err != nil {
		d.opts.Log.V(1).Info("writing the admission response failed", "uid", rv.Request.UID, "error", err.Error())
	}
	d.opts.Metrics.Review(name, opLabel(rv.Request.Operation), outcome, d.now().Sub(start))
}

// refuse answers a review with an HTTP error and counts it (rv nil: the
// review was not read, or malformed).
func (d *Dragnet) refuse(w http.ResponseWriter, name string, rv *review, outcome string, herr *httpError, start time.Time) {
	op := ""
	if rv != nil {
		op = opLabel(rv.Request.Operation)
	}
	d.opts.Metrics.Review(name, op, outcome, d.now().Sub(start))
	http.Error(w, herr.msg, herr.code)
}

func (d *Dragnet) putBuffer(b *bytes.Buffer) {
	if b.Cap() > 1<<20 { // do not keep huge buffers alive
		return
	}
	b.Reset()
	d.bufs.Put(b)
}

// checkRequest refuses what is not a review before its body is read.
func checkRequest(w http.ResponseWriter, r *http.Request) *httpError {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return &httpError{http.StatusMethodNotAllowed, "modwright: admission reviews are POSTed"}
	}
	// What the API server sends is taken without parsing it (which
	// allocates the parameters' map).
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("modwright: Content-Type %q is not supported; send application/json", ct)}
		}
	}
	return nil
}

// deadline is 90% of the smaller of the configured timeout and the API
// server's (?timeout=10s on every webhook call).
func (d *Dragnet) deadline(r *http.Request) time.Duration {
	return reviewDeadline(d.opts.Timeout, r)
}

// reviewDeadline is 90% of the smaller of timeout and the API server's.
func reviewDeadline(t time.Duration, r *http.Request) time.Duration {
	if q := queryValue(r.URL.RawQuery, "timeout"); q != "" {
		if apiserver, err := time.ParseDuration(q); err == nil && apiserver > 0 && apiserver < t {
			t = apiserver
		}
	}
	return t * 9 / 10
}

// queryValue is url.ParseQuery(rawQuery).Get(name) without building the
// url.Values (a map and a slice per parameter, on every review): the first
// value of the parameter name, unescaped, among the '&'-separated pairs
// that parse (a pair holding ';' or an invalid escape is skipped).
func queryValue(rawQuery, name string) string {
	for rest := rawQuery; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		key, val, _ := strings.Cut(pair, "=")
		if key != name {
			if !strings.ContainsAny(key, "%+") {
				continue
			}
			if k, err := url.QueryUnescape(key); err != nil || k != name {
				continue
			}
		}
		if !strings.ContainsAny(val, "%+") {
			return val
		}
		if v, err := url.QueryUnescape(val); err == nil {
			return v
		}
	}
	return ""
}

// review evaluates one request (decide: the request's attributes, then the
// engine), records the decision (record) and answers it (encode); it never
// panics. The patch is encoded into patchBuf's storage, so the response is
// only valid until patchBuf is reused; the decision's patch is built in
// ops, cleared once encoded; the object's maps are lent by trees, taken
// back once the response is encoded when nothing can still read them
// (engine.Request.ObjectStorage).
func (d *Dragnet) review(ctx context.Context, snap *engine.Snapshot, rv *review, body []byte, phases engine.Phase, patchBuf *bytes.Buffer, ops *patch.OpStorage, trees *value.Storage) (resp *response, outcome string, herr *httpError) {
	req := rv.Request
	resp = &response{APIVersion: rv.APIVersion, UID: req.UID}
	defer func() {
		if p := recover(); p != nil {
			d.opts.Metrics.Panic(d.name(phases))
			d.opts.Log.Error(fmt.Errorf("panic: %v", p), "recovered a panic while evaluating rules; this is a bug, please report it",
				"uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name, "stack", string(debug.Stack()))
			resp, outcome = d.failure(rv, http.StatusInternalServerError, "modwright: internal error while evaluating rules (recovered a panic; see the modwright log)")
		}
	}()

	op := rules.Operation(req.Operation)
	// CONNECT (kubectl exec, attach, port-forward, proxies) is evaluated
	// too: its object is the connection's options (PodExecOptions, ...);
	// no ModRule selects it (admissionOperations has no CONNECT), a
	// Policy may, and mutating rules do not run on it.
	ereq := req.attributes()
	ereq.Phases = phases
	ereq.PatchStorage = ops
	defer ops.Clear()
	ereq.ObjectStorage = trees
	recycle := false // set once the response no longer needs the decision
	defer func() {
		// Run before the recovery above: a panic leaves recycle false.
		if recycle {
			trees.Recycle()
		} else {
			trees.Forget()
		}
	}()
	// A Namespace is cluster-scoped, but the API server names the namespace
	// itself in UPDATE and DELETE requests; KubeMod treats it as
	// cluster-scoped, and so does modwright.
	if isNamespace(req) {
		ereq.Namespace = ""
	}
	if (op == rules.Delete && ereq.OldObjectJSON == nil) || (op != rules.Delete && ereq.ObjectJSON == nil) {
		// The API server omits oldObject on DELETE only for very old
		// versions; with nothing to look at there is nothing to decide.
		resp.Allowed = true
		resp.Warnings = []string{"modwright: the review carries no object; rules were not evaluated"}
		return resp, metrics.OutcomeAllowed, nil
	}

	dec, err := d.opts.Evaluator.Evaluate(ctx, snap, ereq)
	if err != nil {
		if req.objectUnchecked && errors.Is(err, engine.ErrInvalidRequest) {
			// The object's text, which decodeReviewDeferring left
			// unchecked, may not be JSON: then the review is malformed.
			if _, merr := decodeReview(body); merr != nil {
				return nil, metrics.OutcomeInvalid, &httpError{http.StatusBadRequest, merr.Error()}
			}
		}
		resp, outcome = d.evalFailure(rv, err)
		return resp, outcome, nil
	}
	ereq.ObjectStorage = nil // not the observers'
	d.record(rv, ereq, dec)
	resp, outcome = d.encode(rv, resp, dec, patchBuf)
	// A program abandoned at the deadline may still read the object; a
	// generator keeps the generated objects, which may share its values.
	recycle = ctx.Err() == nil && len(dec.Generated) == 0
	return resp, outcome, nil
}

// evalFailure answers a review whose evaluation failed.
func (d *Dragnet) evalFailure(rv *review, err error) (*response, string) {
	req := rv.Request
	code, msg := http.StatusInternalServerError, "modwright: "+err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code, msg = http.StatusGatewayTimeout, "modwright: evaluating rules exceeded the review deadline"
	case errors.Is(err, engine.ErrInvalidRequest):
		code = http.StatusBadRequest
	}
	d.opts.Log.Error(err, "evaluation failed", "uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
	return d.failure(rv, code, msg)
}

// record tells the kinds' observers, the metrics and the log of a
// decision.
func (d *Dragnet) record(rv *review, ereq engine.Request, dec *engine.Decision) {
	req := rv.Request
	for _, o := range d.opts.Observers {
		o.Decided(ereq, dec) // a copy: a pointer would move ereq to the heap
	}
	for _, e := range dec.Errors {
		if e.Rule != "" {
			d.opts.Metrics.RuleError(e.Kind, e.Rule)
		}
		d.opts.Log.Info("a rule failed on this object and was skipped", "rule", e.Rule, "field", e.Field, "error", e.Err.Error(),
			"uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
	}
	if !dec.Allowed() {
		d.opts.Log.Info("rejected", "rejections", dec.DenialText(), "uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name, "operation", req.Operation)
	}
}

// encode answers with a decision: its errors and warnings as warnings
// (bounded), its audit annotations, and the denial or the patch. The
// patch is encoded into patchBuf's storage.
func (d *Dragnet) encode(rv *review, resp *response, dec *engine.Decision, patchBuf *bytes.Buffer) (*response, string) {
	for i, e := range dec.Errors {
		if i < maxWarnings {
			resp.Warnings = append(resp.Warnings, truncate("modwright: "+e.Error(), maxWarningLen))
		} else if i == maxWarnings {
			resp.Warnings = append(resp.Warnings, fmt.Sprintf("modwright: %d more rule errors (see the modwright log)", len(dec.Errors)-maxWarnings))
		}
	}
	for _, w := range dec.Warnings {
		if len(resp.Warnings) < maxWarnings+1 {
			resp.Warnings = append(resp.Warnings, truncate("modwright: "+w.Kind+" "+w.Rule+": "+w.Message, maxWarningLen))
		}
	}
	if len(dec.AuditAnnotations) > 0 {
		resp.AuditAnnotations = auditAnnotations(dec.AuditAnnotations)
	}
	if !dec.Allowed() {
		resp.Code, resp.Reason = http.StatusForbidden, "Forbidden"
		if first := dec.Rejections[0]; first.Code != 0 {
			resp.Code, resp.Reason = first.Code, first.Reason
		}
		resp.Message = dec.DenialMessage()
		return resp, metrics.OutcomeDenied
	}
	resp.Allowed = true
	if !dec.Changed() {
		return resp, metrics.OutcomeAllowed
	}
	return d.encodePatch(rv, resp, dec, patchBuf)
}

// encodePatch sets the response's patch, or fails the review when the
// patch is beyond what the API server accepts.
func (d *Dragnet) encodePatch(rv *review, resp *response, dec *engine.Decision, patchBuf *bytes.Buffer) (*response, string) {
	req := rv.Request
	p, bound, err := appendBoundedPatch(patchBuf.AvailableBuffer(), dec.Patch)
	if err != nil { // trees from the engine always encode
		d.opts.Log.Error(err, "encoding the patch failed", "uid", req.UID)
		return d.failure(rv, http.StatusInternalServerError, "modwright: encoding the patch: "+err.Error())
	}
	if bound != nil {
		// The API server could not decode or store the patched
		// object: fail the review, naming the bound and the rules.
		by := patchRules(dec)
		for _, r := range dec.Applied {
			d.opts.Metrics.RuleError(r.Kind, r.Key)
		}
		d.opts.Log.Error(bound, "the patch the rules built is beyond what the API server accepts; the review fails",
			"rules", by, "uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name, "operations", len(dec.Patch))
		if by == "" {
			by = "the Patch rules that matched this object"
		}
		return d.failure(rv, http.StatusInternalServerError, "modwright: the patch built by "+truncate(by, 500)+" cannot be returned: "+bound.Error())
	}
	// Keep the patch in patchBuf, which then keeps the capacity it
	// needed for the next review (Write copies p onto itself when it
	// fitted).
	patchBuf.Write(p)
	resp.Patch = patchBuf.Bytes()
	if log := d.opts.Log.V(1); log.Enabled() {
		log.Info("patched", "patch", string(resp.Patch), "uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
	}
	return resp, metrics.OutcomePatched
}

// failure answers a review that could not be evaluated: denied with code,
// or admitted with a warning when FailOpen.
func (d *Dragnet) failure(rv *review, code int, msg string) (*response, string) {
	resp := &response{APIVersion: rv.APIVersion, UID: rv.Request.UID}
	if d.opts.FailOpen {
		resp.Allowed = true
		resp.Warnings = []string{truncate(msg+"; admitted unchanged (fail-open)", maxWarningLen)}
		return resp, metrics.OutcomeError
	}
	resp.Code, resp.Message = code, msg
	resp.Reason = "InternalError"
	if code == http.StatusBadRequest {
		resp.Reason = "BadRequest"
	} else if code == http.StatusGatewayTimeout {
		resp.Reason = "Timeout"
	}
	return resp, metrics.OutcomeError
}

// opLabel bounds the metric label to the operations Kubernetes has, so that
// junk requests cannot grow the metrics without limit.
func opLabel(op string) string {
	switch op {
	case "CREATE", "UPDATE", "DELETE", "CONNECT":
		return op
	}
	return "other"
}

func isNamespace(req *request) bool {
	return req.Kind.Group == "" && req.Kind.Version == "v1" && req.Kind.Kind == "Namespace"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// ExcludeFilter serves another source's snapshots without the rules set
// excluded (by kind and namespace/name): those the API server runs itself,
// compiled into admission policies. The filtered snapshot is built once
// per source snapshot and exclusion set.
type ExcludeFilter struct {
	Source Snapshots

	excluded atomic.Pointer[map[string]bool]
	last     atomic.Pointer[excludeCache]
}

type excludeCache struct {
	src *engine.Snapshot
	ex  *map[string]bool
	out *engine.Snapshot
}

var _ Snapshots = (*ExcludeFilter)(nil)

// ExcludeKey is a rule's key in an exclusion set.
func ExcludeKey(kind, key string) string { return kind + " " + key }

// SetExcluded replaces the exclusion set (keys from ExcludeKey); the
// caller must not change it afterwards.
func (f *ExcludeFilter) SetExcluded(ex map[string]bool) { f.excluded.Store(&ex) }

// Current returns the source's current snapshot without the excluded
// rules.
func (f *ExcludeFilter) Current() *engine.Snapshot {
	src := f.Source.Current()
	ex := f.excluded.Load()
	if src == nil || ex == nil || len(*ex) == 0 {
		return src
	}
	if l := f.last.Load(); l != nil && l.src == src && l.ex == ex {
		return l.out
	}
	var rs []engine.Rule
	for _, r := range src.Rules() {
		if !(*ex)[ExcludeKey(r.Info().Kind, r.Info().Key)] {
			rs = append(rs, r)
		}
	}
	out := engine.NewSnapshot(rs)
	f.last.Store(&excludeCache{src, ex, out})
	return out
}
