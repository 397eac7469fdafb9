package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
	"github.com/modwright/modwright/internal/webhook"
)

// Webhook runs requests through the dragnet webhook handler: each request
// becomes an admission.k8s.io/v1 AdmissionReview served in memory
// (ServeHTTP on an httptest recorder), and the result object is the
// returned JSONPatch applied to the input, as the API server applies it.
type Webhook struct {
	h *webhook.Dragnet
}

var _ Driver = (*Webhook)(nil)

// NewWebhook returns the Webhook driver for snap, served from an in-memory
// store; objects reads the context objects (syntheticRefs), nil for none.
func NewWebhook(snap *engine.Snapshot, objects engine.ObjectReader) *Webhook {
	return NewWebhookOptions(snap, Options(objects))
}

// NewWebhookOptions is the Webhook driver for snap with the engine's
// options (the server never keeps a trace).
func NewWebhookOptions(snap *engine.Snapshot, opts engine.Options) *Webhook {
	st := &source.Store{}
	st.Publish(snap)
	opts.NoTrace = true
	return &Webhook{h: webhook.NewDragnet(webhook.Options{
		Evaluator: engine.New(opts),
		Snapshots: st,
		Log:       logr.Discard(),
	})}
}

// reviewUID is the uid of every review the driver sends.
const reviewUID = "modwright-runner"

// warningPrefix starts every warning the webhook returns.
const warningPrefix = "modwright: "

// Run serves one request as a review and decodes the answer.
func (w *Webhook) Run(ctx context.Context, req Request) (*Result, error) {
	body, err := Review(req)
	if err != nil {
		return nil, err
	}
	hr := httptest.NewRequestWithContext(ctx, http.MethodPost, webhook.DragnetPath, bytes.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, hr)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("webhook: HTTP %d: %s", rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	var rv struct {
		Response *struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
			Status  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"status"`
			Patch     []byte   `json:"patch"`
			PatchType string   `json:"patchType"`
			Warnings  []string `json:"warnings"`
		} `json:"response"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil {
		return nil, fmt.Errorf("webhook: the response does not decode: %w", err)
	}
	resp := rv.Response
	if resp == nil || resp.UID != reviewUID {
		return nil, fmt.Errorf("webhook: bad response envelope: %s", rec.Body)
	}
	r := &Result{Allowed: resp.Allowed}
	for _, wn := range resp.Warnings {
		r.Warnings = append(r.Warnings, strings.TrimPrefix(wn, warningPrefix))
	}
	if !resp.Allowed {
		if resp.Status != nil && resp.Status.Code == http.StatusInternalServerError {
			// A rule failed under failurePolicy Fail, or a Reject rule
			// could not be decided: the API server denies the object
			// with this message (the engine driver's engine.Refusal).
			r.Denial = resp.Status.Message
			return r, nil
		}
		if resp.Status == nil || !isDenialCode(resp.Status.Code) {
			// A review that failed (deadline, undecidable Reject rule,
			// invalid object; 500, 504, 400): the engine driver returns
			// an error too.
			return nil, fmt.Errorf("webhook: the review failed: %s", rec.Body)
		}
		r.Denial = resp.Status.Message
		return r, nil
	}
	r.Object = req.Object
	if len(resp.Patch) == 0 {
		return r, nil
	}
	if resp.PatchType != "JSONPatch" {
		return nil, fmt.Errorf("webhook: patchType %q, want JSONPatch", resp.PatchType)
	}
	if err := json.Unmarshal(resp.Patch, &r.Patch); err != nil {
		return nil, fmt.Errorf("webhook: the patch does not decode: %w", err)
	}
	if r.Object, err = patch.ApplyRFC6902(req.Object, r.Patch); err != nil {
		return nil, fmt.Errorf("webhook: the patch does not apply to the object: %w", err)
	}
	return r, nil
}

// Review is the admission.k8s.io/v1 AdmissionReview of one request, with
// the attributes known offline (Attributes): uid, kind, name, namespace,
// operation, and the object (oldObject on DELETE); an UPDATE's Old is its
// oldObject (null without one).
func Review(req Request) ([]byte, error) {
	if req.Payload {
		return nil, errors.New("webhook: a JSON payload is no Kubernetes object: it is never under admission")
	}
	a := Attributes(req)
	type gvk struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	}
	type userInfo struct {
		Username string              `json:"username,omitempty"`
		UID      string              `json:"uid,omitempty"`
		Groups   []string            `json:"groups,omitempty"`
		Extra    map[string][]string `json:"extra,omitempty"`
	}
	type request struct {
		UID       string          `json:"uid"`
		UserInfo  userInfo        `json:"userInfo"`
		Kind      gvk             `json:"kind"`
		Name      string          `json:"name,omitempty"`
		Namespace string          `json:"namespace,omitempty"`
		Operation string          `json:"operation"`
		Object    json.RawMessage `json:"object"`
		OldObject json.RawMessage `json:"oldObject"`
	}
	obj, err := value.AppendJSON(nil, map[string]any(req.Object))
	if err != nil {
		return nil, fmt.Errorf("webhook: the object does not encode: %w", err)
	}
	rq := request{
		UID:       reviewUID,
		UserInfo:  userInfo{a.UserInfo.Username, a.UserInfo.UID, a.UserInfo.Groups, a.UserInfo.Extra},
		Kind:      gvk{a.Kind.Group, a.Kind.Version, a.Kind.Kind},
		Name:      a.Name,
		Namespace: a.Namespace,
		Operation: string(a.Operation),
		Object:    json.RawMessage("null"),
		OldObject: json.RawMessage("null"),
	}
	switch {
	case a.Operation == rules.Delete:
		rq.OldObject = obj
	case a.Operation == rules.Update && req.Old != nil:
		rq.Object = obj
		if rq.OldObject, err = value.AppendJSON(nil, map[string]any(req.Old)); err != nil {
			return nil, fmt.Errorf("webhook: the old object does not encode: %w", err)
		}
	default:
		rq.Object = obj
	}
	return json.Marshal(struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Request    request `json:"request"`
	}{webhook.ReviewV1, "AdmissionReview", rq})
}

// isDenialCode reports whether a denied review's code is a rule's denial:
// 403 (ModRule, a Policy's reason Forbidden) or a Policy's other reasons
// (Invalid 422, Unauthorized 401, RequestEntityTooLarge 413).
func isDenialCode(code int) bool {
	switch code {
	case http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusUnauthorized, http.StatusRequestEntityTooLarge:
		return true
	}
	return false
}
