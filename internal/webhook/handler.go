package webhook

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/metrics"
)

// AdmitFunc decides one admission request for a webhook other than the
// dragnet (the ModRule validating webhook, the pods/binding webhook). req
// holds every attribute of the review, its objects as JSON text; it must
// not be kept after the call.
type AdmitFunc func(ctx context.Context, req *engine.Request) Verdict

// Verdict is the answer of an AdmitFunc, encoded as the AdmissionReview's
// response.
type Verdict struct {
	Allowed bool
	// Code, Reason and Message fill the response's status when Code != 0
	// (its status is Failure when the request is not allowed).
	Code    int
	Reason  string
	Message string
	// Details go into the status (with Code != 0): a validation denial
	// names the object and its field errors.
	Details *StatusDetails
	// Warnings are shown to the client.
	Warnings []string
	// Patch is a JSON patch (an array), nil for none.
	Patch []byte
}

// StatusDetails are a denial's metav1.StatusDetails.
type StatusDetails struct {
	Name, Group, Kind string
	Causes            []StatusCause
}

// StatusCause is one metav1.StatusCause: Type is its reason
// ("FieldValueInvalid"), Field the field path.
type StatusCause struct {
	Type, Field, Message string
}

// HandlerOptions configure a Handler.
type HandlerOptions struct {
	// Name labels the metrics and the log ("validate-rule").
	Name    string
	Admit   AdmitFunc
	Log     logr.Logger
	Metrics *metrics.Metrics // nil: none
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxReviewBytes bounds a request body; 0 means DefaultMaxReviewBytes.
	MaxReviewBytes int64
	// Timeout bounds one review as the dragnet's Options.Timeout does; 0
	// means DefaultTimeout.
	Timeout time.Duration
	// MaxReviewMemory bounds, in bytes, the memory of the bodies being
	// read, as the dragnet's body budget (half of it); 0 means
	// DefaultMaxReviewMemory().
	MaxReviewMemory int64
	// FailOpen admits the request, with a warning, when Admit panics; by
	// default it is denied with code 500.
	FailOpen bool
}

// Handler serves a webhook other than the dragnet through the dragnet's
// codec: the same request checks, body read within the review's deadline
// and bounded in size and memory, the same AdmissionReview decoder (every
// attribute into an engine.Request) and response encoder. A malformed
// review is answered 400; a panic in Admit is recovered.
type Handler struct {
	opts HandlerOptions
	now  func() time.Time
	mem  *budget // only its body budget is used
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the handler.
func NewHandler(opts HandlerOptions) *Handler {
	if opts.MaxReviewBytes <= 0 {
		opts.MaxReviewBytes = DefaultMaxReviewBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxReviewMemory <= 0 {
		opts.MaxReviewMemory = DefaultMaxReviewMemory()
	}
	h := &Handler{opts: opts, now: opts.Now, mem: newBudget(opts.MaxReviewMemory)}
	if h.now == nil {
		h.now = time.Now
	}
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := h.now()
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(reviewDeadline(h.opts.Timeout, r)))
	defer cancel()
	if herr := checkRequest(w, r); herr != nil {
		h.opts.Metrics.Review(h.opts.Name, "", metrics.OutcomeInvalid, h.now().Sub(start))
		http.Error(w, herr.msg, herr.code)
		return
	}
	body, held, herr := readBody(ctx, w, r, nil, h.opts.MaxReviewBytes, h.mem)
	defer h.mem.body.Release(held)
	if herr != nil {
		outcome := metrics.OutcomeInvalid
		if herr.code == http.StatusServiceUnavailable || herr.code == http.StatusRequestTimeout {
			outcome = metrics.OutcomeError
		}
		h.opts.Metrics.Review(h.opts.Name, "", outcome, h.now().Sub(start))
		http.Error(w, herr.msg, herr.code)
		return
	}
	rv, err := decodeReview(body)
	if err != nil {
		h.opts.Metrics.Review(h.opts.Name, "", metrics.OutcomeInvalid, h.now().Sub(start))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, details, outcome := h.review(ctx, rv)
	out := appendResponseDetails(nil, resp, details)
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(out); err != nil {
		h.opts.Log.V(1).Info("writing the admission response failed", "uid", rv.Request.UID, "error", err.Error())
	}
	h.opts.Metrics.Review(h.opts.Name, opLabel(rv.Request.Operation), outcome, h.now().Sub(start))
}

// review calls Admit; it never panics.
func (h *Handler) review(ctx context.Context, rv *review) (resp *response, details *StatusDetails, outcome string) {
	req := rv.Request
	resp = &response{APIVersion: rv.APIVersion, UID: req.UID}
	defer func() {
		if p := recover(); p != nil {
			h.opts.Metrics.Panic(h.opts.Name)
			h.opts.Log.Error(fmt.Errorf("panic: %v", p), "recovered a panic in an admission webhook; this is a bug, please report it",
				"webhook", h.opts.Name, "uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name, "stack", string(debug.Stack()))
			msg := "modwright: internal error in the " + h.opts.Name + " webhook (recovered a panic; see the modwright log)"
			resp, details = &response{APIVersion: rv.APIVersion, UID: req.UID}, nil
			if h.opts.FailOpen {
				resp.Allowed = true
				resp.Warnings = []string{truncate(msg+"; admitted unchanged (fail-open)", maxWarningLen)}
			} else {
				resp.Code, resp.Reason, resp.Message = http.StatusInternalServerError, "InternalError", msg
			}
			outcome = metrics.OutcomeError
		}
	}()
	ereq := req.attributes()
	v := h.opts.Admit(ctx, &ereq)
	resp.Allowed, resp.Code, resp.Reason, resp.Message = v.Allowed, v.Code, v.Reason, v.Message
	resp.Warnings, resp.Patch = v.Warnings, v.Patch
	switch {
	case !v.Allowed:
		return resp, v.Details, metrics.OutcomeDenied
	case v.Patch != nil:
		return resp, v.Details, metrics.OutcomePatched
	}
	return resp, v.Details, metrics.OutcomeAllowed
}
