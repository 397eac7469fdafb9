package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/rules"
)

func newTestHandler(admit AdmitFunc, mutate func(*HandlerOptions)) (*Handler, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	opts := HandlerOptions{Name: "test", Admit: admit, Log: logr.Discard(), Metrics: metrics.New(reg)}
	if mutate != nil {
		mutate(&opts)
	}
	return NewHandler(opts), reg
}

const bindingReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-1",` +
	`"kind":{"group":"","version":"v1","kind":"Binding"},"resource":{"group":"","version":"v1","resource":"pods"},"subResource":"binding",` +
	`"namespace":"ns","name":"p","operation":"CREATE","userInfo":{"username":"system:kube-scheduler"},"dryRun":true,` +
	`"object":{"apiVersion":"v1","kind":"Binding","target":{"kind":"Node","name":"n1"}},"oldObject":null,"options":{"kind":"CreateOptions"}}}`

func TestHandlerVerdicts(t *testing.T) {
	fieldInvalid := Verdict{Code: 422, Reason: "Invalid", Message: "ModRule ns/r is invalid: spec.match[0].select: column 7: bad",
		Details: &StatusDetails{Name: "r", Group: "api.kubemod.io", Kind: "ModRule",
			Causes: []StatusCause{{Type: "FieldValueInvalid", Field: "spec.match[0].select", Message: "column 7: bad"}}}}
	tests := []struct {
		name    string
		verdict Verdict
		want    admissionv1.AdmissionResponse
		outcome string
	}{
		{"allowed", Verdict{Allowed: true}, admissionv1.AdmissionResponse{UID: "uid-1", Allowed: true}, metrics.OutcomeAllowed},
		{"allowed with a message and warnings", Verdict{Allowed: true, Code: 200, Message: "dry run", Warnings: []string{"w1", "w2"}},
			admissionv1.AdmissionResponse{UID: "uid-1", Allowed: true, Result: &metav1.Status{Code: 200, Message: "dry run"}, Warnings: []string{"w1", "w2"}},
			metrics.OutcomeAllowed},
		{"denied with causes", fieldInvalid,
			admissionv1.AdmissionResponse{UID: "uid-1", Result: &metav1.Status{Status: "Failure", Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: fieldInvalid.Message, Details: &metav1.StatusDetails{Name: "r", Group: "api.kubemod.io", Kind: "ModRule",
					Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.match[0].select", Message: "column 7: bad"}}}}},
			metrics.OutcomeDenied},
		{"patched", Verdict{Allowed: true, Patch: []byte(`[{"op":"add","path":"/a","value":1}]`)},
			admissionv1.AdmissionResponse{UID: "uid-1", Allowed: true, Patch: []byte(`[{"op":"add","path":"/a","value":1}]`), PatchType: ptr(admissionv1.PatchTypeJSONPatch)},
			metrics.OutcomePatched},
		{"details without a code are dropped", Verdict{Allowed: true, Details: &StatusDetails{Name: "x"}},
			admissionv1.AdmissionResponse{UID: "uid-1", Allowed: true}, metrics.OutcomeAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *engine.Request
			h, reg := newTestHandler(func(_ context.Context, req *engine.Request) Verdict {
				c := *req
				got = &c
				return tt.verdict
			}, nil)
			_, resp := decodeResponse(t, post(t, h, "/validate?timeout=10s", bindingReview))
			if diff := cmp.Diff(tt.want, *resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			// The same engine.Request as the dragnet's.
			want := engine.Request{UID: "uid-1", Operation: rules.Create, Name: "p", Namespace: "ns",
				Kind: engine.GroupVersionKind{Version: "v1", Kind: "Binding"}, Resource: engine.GroupVersionResource{Version: "v1", Resource: "pods"},
				SubResource: "binding", UserInfo: engine.UserInfo{Username: "system:kube-scheduler"}, DryRun: true,
				Options:    []byte(`{"kind":"CreateOptions"}`),
				ObjectJSON: []byte(`{"apiVersion":"v1","kind":"Binding","target":{"kind":"Node","name":"n1"}}`)}
			if diff := cmp.Diff(want, *got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if n := counterSum(t, reg, "modwright_admission_reviews_total", "outcome", tt.outcome); n != 1 {
				t.Errorf("reviews{outcome=%s} = %v, want 1", tt.outcome, n)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestHandlerRefusesBadRequests(t *testing.T) {
	called := false
	h, _ := newTestHandler(func(context.Context, *engine.Request) Verdict { called = true; return Verdict{Allowed: true} },
		func(o *HandlerOptions) { o.MaxReviewBytes = 1 << 10 })
	for _, tt := range []struct {
		name, method, body string
		code               int
	}{
		{"GET", http.MethodGet, "", http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, "{", http.StatusBadRequest},
		{"empty", http.MethodPost, "", http.StatusBadRequest},
		{"no request", http.MethodPost, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
		{"bad operation", http.MethodPost, strings.Replace(bindingReview, `"CREATE"`, `"PATCH"`, 1), http.StatusBadRequest},
		{"too large", http.MethodPost, `{"x":"` + strings.Repeat("a", 2<<10) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Errorf("HTTP %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
		})
	}
	if called {
		t.Error("Admit was called for a refused request")
	}
}

func TestHandlerRecoversPanics(t *testing.T) {
	boom := func(context.Context, *engine.Request) Verdict { panic("boom") }
	h, reg := newTestHandler(boom, nil)
	_, resp := decodeResponse(t, post(t, h, "/", bindingReview))
	if resp.Allowed || resp.Result == nil || resp.Result.Code != 500 || resp.Result.Reason != metav1.StatusReasonInternalError ||
		!strings.Contains(resp.Result.Message, "recovered a panic") {
		t.Errorf("response %+v, want a 500 denial", resp)
	}
	if n := counterSum(t, reg, "modwright_admission_panics_total", "webhook", "test"); n != 1 {
		t.Errorf("panics = %v, want 1", n)
	}
	h, _ = newTestHandler(boom, func(o *HandlerOptions) { o.FailOpen = true })
	_, resp = decodeResponse(t, post(t, h, "/", bindingReview))
	if !resp.Allowed || resp.Result != nil || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "fail-open") {
		t.Errorf("fail-open response %+v, want allowed with a warning", resp)
	}
}
