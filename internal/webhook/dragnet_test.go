package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

const testRules = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: label, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /metadata/labels/seen, value: '"yes"'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: no-latest, namespace: ns1}
spec:
  type: Reject
  match: [{select: '$.spec.containers[*].image', matchRegex: ':latest$'}]
  rejectMessage: 'no latest in {{ .Namespace }}'
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: protect, namespace: ns1}
spec:
  type: Reject
  admissionOperations: [DELETE]
  match: [{select: '$.metadata.labels.protected', matchValue: 'true'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: ns-label, namespace: kubemod-system}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Namespace}]
  patch:
    - {op: add, path: /metadata/labels/cluster, value: '"rule"'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: fails, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.metadata.labels.fail', matchValue: 'yes'}]
  patch:
    - {op: replace, path: /spec/missing/deep, value: '1'}
`

func testSnapshot(t testing.TB) *source.Store {
	t.Helper()
	docs, err := source.ParseManifest("rules.yaml", []byte(testRules))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, testKinds())
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	st := &source.Store{}
	st.Publish(engine.NewSnapshot(res.Rules))
	return st
}

func newTestDragnet(t testing.TB, ev Evaluator, mutate func(*Options)) (*Dragnet, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	opts := Options{Evaluator: ev, Snapshots: testSnapshot(t), Log: logr.Discard(), Metrics: metrics.New(reg)}
	if mutate != nil {
		mutate(&opts)
	}
	return NewDragnet(opts), reg
}

func pod(labels, image string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns1","labels":{` + labels + `}},"spec":{"containers":[{"name":"c","image":"` + image + `"}]}}`
}

func reviewBody(version, op, group, kind, ns, object, oldObject string) string {
	if object == "" {
		object = "null"
	}
	if oldObject == "" {
		oldObject = "null"
	}
	return `{"apiVersion":"` + version + `","kind":"AdmissionReview","request":{"uid":"uid-1","kind":{"group":"` + group + `","version":"v1","kind":"` + kind + `"},` +
		`"resource":{"group":"","version":"v1","resource":"x"},"namespace":"` + ns + `","name":"p","operation":"` + op + `","userInfo":{"username":"u"},` +
		`"object":` + object + `,"oldObject":` + oldObject + `}}`
}

func post(t *testing.T, h http.Handler, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// decodeResponse decodes with the Kubernetes types, as the API server does.
func decodeResponse(t *testing.T, rec *httptest.ResponseRecorder) (string, *admissionv1.AdmissionResponse) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	var rv admissionv1.AdmissionReview
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rv); err != nil {
		t.Fatalf("response does not decode as an AdmissionReview: %v\n%s", err, rec.Body)
	}
	if rv.Kind != "AdmissionReview" || rv.Response == nil || rv.Response.UID != "uid-1" {
		t.Fatalf("bad response envelope: %s", rec.Body)
	}
	return rv.APIVersion, rv.Response
}

func TestDragnetDecisions(t *testing.T) {
	h, reg := newTestDragnet(t, engine.New(engine.Options{}), nil)
	jsonPatch := admissionv1.PatchTypeJSONPatch
	for _, tc := range []struct {
		name, body string
		want       admissionv1.AdmissionResponse
	}{
		{
			name: "patched, v1",
			body: reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod(`"a":"b"`, "nginx:1"), ""),
			want: admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/metadata/labels/seen","value":"yes"}]`)},
		},
		{
			name: "patched, v1beta1",
			body: reviewBody(ReviewV1beta1, "UPDATE", "", "Pod", "ns1", pod(`"a":"b"`, "nginx:1"), pod(`"a":"b"`, "nginx:1")),
			want: admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/metadata/labels/seen","value":"yes"}]`)},
		},
		{
			name: "denied with KubeMod's text",
			body: reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "nginx:latest"), ""),
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 403, Reason: "Forbidden",
				Message: `operation rejected by the following ModRule(s): ns1/no-latest: "no latest in ns1"`}},
		},
		{
			name: "other namespace untouched",
			body: reviewBody(ReviewV1, "CREATE", "", "Pod", "ns2", pod("", "nginx:latest"), ""),
			want: admissionv1.AdmissionResponse{Allowed: true},
		},
		{
			name: "DELETE protection reads oldObject",
			body: reviewBody(ReviewV1, "DELETE", "", "Pod", "ns1", "", pod(`"protected":"true"`, "nginx:1")),
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 403, Reason: "Forbidden",
				Message: `operation rejected by the following ModRule(s): ns1/protect`}},
		},
		{
			name: "Namespace UPDATE is cluster-scoped",
			body: reviewBody(ReviewV1, "UPDATE", "", "Namespace", "ns1", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1","labels":{}}}`, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1"}}`),
			want: admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/metadata/labels/cluster","value":"rule"}]`)},
		},
		{
			name: "CONNECT is not evaluated",
			body: reviewBody(ReviewV1, "CONNECT", "", "PodExecOptions", "ns1", `{"kind":"PodExecOptions"}`, ""),
			want: admissionv1.AdmissionResponse{Allowed: true},
		},
		{
			name: "a failing rule becomes a warning",
			body: reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod(`"fail":"yes"`, "nginx:1"), ""),
			want: admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/metadata/labels/seen","value":"yes"}]`),
				Warnings: []string{"modwright: ns1/fails spec.patch[0]: replace /spec/missing/deep: path not found: member \"missing\" does not exist"}},
		},
		{
			name: "an undecodable object is an error response",
			body: reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", `[1,2]`, ""),
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 400, Reason: "BadRequest",
				Message: "modwright: invalid admission request: the object is a JSON array, not an object"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := post(t, h, DragnetPath+"?timeout=5s", tc.body)
			version, got := decodeResponse(t, rec)
			if want := strings.Split(tc.body, `"`)[3]; version != want {
				t.Errorf("apiVersion %q, want the request's %q", version, want)
			}
			tc.want.UID = "uid-1"
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s\nbody: %s", diff, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	if n := counterSum(t, reg, "modwright_admission_reviews_total", "outcome", "denied"); n != 2 {
		t.Errorf("denied reviews counted %v, want 2", n)
	}
}

// counterSum adds the samples of a counter whose label has the value (any
// sample when label is "").
func counterSum(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if label == "" || (l.GetName() == label && l.GetValue() == value) {
					total += m.GetCounter().GetValue()
					break
				}
			}
		}
	}
	return total
}

func TestDragnetRefusesBadRequests(t *testing.T) {
	h, reg := newTestDragnet(t, engine.New(engine.Options{}), func(o *Options) { o.MaxReviewBytes = 2048 })
	good := reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "nginx:1"), "")
	for _, tc := range []struct {
		name        string
		method, ct  string
		body        string
		code        int
		wantMessage string
	}{
		{"GET", http.MethodGet, "application/json", good, 405, "POSTed"},
		{"not JSON", http.MethodPost, "application/json", `{"apiVersion":`, 400, "malformed AdmissionReview"},
		{"wrong content type", http.MethodPost, "text/plain", good, 415, `Content-Type "text/plain"`},
		{"another JSON content type", http.MethodPost, "application/json-seq", good, 415, `Content-Type "application/json-seq"`},
		{"JSON with a charset, parsed", http.MethodPost, "Application/JSON; charset=utf-8", `{"apiVersion":`, 400, "malformed AdmissionReview"},
		{"wrong kind", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"x"}}`, 400, `kind is "Pod"`},
		{"unknown version", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"x"}}`, 400, `apiVersion "admission.k8s.io/v2" is not supported`},
		{"no request", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400, "no request"},
		{"no uid", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}`, 400, "request.uid is empty"},
		{"empty", http.MethodPost, "application/json", ``, 400, "empty body"},
		{"too large", http.MethodPost, "application/json", reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod(`"x":"`+strings.Repeat("a", 4096)+`"`, "nginx:1"), ""), 413, "limit of 2048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, DragnetPath, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.ct)
			if tc.name == "too large" {
				req.ContentLength = -1 // streamed: the limit is enforced while reading
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.wantMessage) {
				t.Errorf("got %d %q, want %d containing %q", rec.Code, rec.Body, tc.code, tc.wantMessage)
			}
		})
	}
	if n := counterSum(t, reg, "modwright_admission_reviews_total", "outcome", "invalid"); n != 11 {
		t.Errorf("invalid reviews counted %v, want 11", n)
	}
}

// The dragnet leaves the object's text to the engine to check
// (decodeReviewDeferring): a review whose object is not JSON is refused
// all the same, with decodeReview's message, whether rules can apply to
// it, none can, or the operation is a DELETE (the old object evaluated);
// one whose object is JSON is answered.
func TestDragnetRefusesObjectNotJSON(t *testing.T) {
	h, reg := newTestDragnet(t, engine.New(engine.Options{}), nil)
	old := pod("", "nginx:1")
	for _, tc := range []struct{ name, op, kind, ns, old string }{
		{"rules can apply", "CREATE", "Pod", "ns1", ""},
		{"no rule can apply", "CREATE", "Nothing", "elsewhere", ""},
		{"update, no rule can apply", "UPDATE", "Nothing", "elsewhere", old},
		{"delete", "DELETE", "Pod", "ns1", old},
	} {
		for _, object := range []string{`{"a":tru}`, `{"a":[1,}`, `{"a":"\x"}`, `{"a":"` + "\x01" + `"}`, `[1 2]`, `{"a":{"b":1}}}`} {
			body := reviewBody(ReviewV1, tc.op, "", tc.kind, tc.ns, object, tc.old)
			_, want := decodeReview([]byte(body))
			if want == nil {
				t.Fatalf("%s, %s: decodeReview accepts it", tc.name, object)
			}
			rec := post(t, h, DragnetPath, body)
			if rec.Code != http.StatusBadRequest || strings.TrimSpace(rec.Body.String()) != want.Error() {
				t.Errorf("%s, object %s: got %d %q, want 400 %q", tc.name, object, rec.Code, rec.Body, want)
			}
		}
		body := reviewBody(ReviewV1, tc.op, "", tc.kind, tc.ns, pod("", "nginx:1"), tc.old)
		if rec := post(t, h, DragnetPath, body); rec.Code != http.StatusOK {
			t.Errorf("%s, an object that is JSON: got %d %s", tc.name, rec.Code, rec.Body)
		}
	}
	if n := counterSum(t, reg, "modwright_admission_reviews_total", "outcome", "invalid"); n != 24 {
		t.Errorf("invalid reviews counted %v, want 24", n)
	}
}

func TestDragnetNotReady(t *testing.T) {
	h, _ := newTestDragnet(t, engine.New(engine.Options{}), func(o *Options) { o.Snapshots = &source.Store{} })
	rec := post(t, h, DragnetPath, reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "x"), ""))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

type panicking struct{}

func (panicking) Evaluate(context.Context, *engine.Snapshot, engine.Request) (*engine.Decision, error) {
	panic("boom")
}

// slow waits for the deadline, as an engine stuck on a huge object would.
type slow struct{ deadline chan time.Duration }

func (s slow) Evaluate(ctx context.Context, _ *engine.Snapshot, _ engine.Request) (*engine.Decision, error) {
	dl, _ := ctx.Deadline()
	s.deadline <- time.Until(dl)
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestDragnetFailures(t *testing.T) {
	body := reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "x"), "")

	h, reg := newTestDragnet(t, panicking{}, nil)
	_, resp := decodeResponse(t, post(t, h, DragnetPath, body))
	if resp.Allowed || resp.Result.Code != 500 || !strings.Contains(resp.Result.Message, "recovered a panic") {
		t.Errorf("panic: %+v", resp.Result)
	}
	if n := counterSum(t, reg, "modwright_admission_panics_total", "", ""); n != 1 {
		t.Errorf("panics counted %v", n)
	}

	h, _ = newTestDragnet(t, panicking{}, func(o *Options) { o.FailOpen = true })
	_, resp = decodeResponse(t, post(t, h, DragnetPath, body))
	if !resp.Allowed || resp.Result != nil || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "fail-open") {
		t.Errorf("fail-open panic: %+v", resp)
	}

	s := slow{deadline: make(chan time.Duration, 1)}
	h, _ = newTestDragnet(t, s, func(o *Options) { o.Timeout = time.Hour })
	_, resp = decodeResponse(t, post(t, h, DragnetPath+"?timeout=200ms", body))
	if resp.Allowed || resp.Result.Code != 504 || resp.Result.Reason != "Timeout" {
		t.Errorf("deadline: %+v", resp.Result)
	}
	if got := <-s.deadline; got > 180*time.Millisecond {
		t.Errorf("evaluation deadline %v, want at most 90%% of the API server's 200ms", got)
	}
}

func TestResponseEncoding(t *testing.T) {
	type withDetails struct {
		response
		Details *StatusDetails
	}
	for _, r := range []withDetails{
		{response: response{APIVersion: ReviewV1, UID: "a", Allowed: true}},
		{response: response{APIVersion: ReviewV1beta1, UID: "b\"\\<>&\u2028", Allowed: true, Patch: []byte(`[{"op":"remove","path":"/a"}]`), Warnings: []string{"w1", "w\"2"}}},
		{response: response{APIVersion: ReviewV1, UID: "c", Code: 403, Reason: "Forbidden", Message: "no\nway \"quoted\" ✓"}},
		{response{APIVersion: ReviewV1, UID: "d", Code: 422, Reason: "Invalid", Message: "m"}, &StatusDetails{Name: "r\"1", Group: "api.kubemod.io", Kind: "ModRule",
			Causes: []StatusCause{{Type: "FieldValueInvalid", Field: "spec.match[0].select", Message: "column 7: <bad>"}, {Field: "spec.x"}, {Message: "only a message"}, {}}}},
		{response{APIVersion: ReviewV1, UID: "e", Code: 422}, &StatusDetails{}},
		{response{APIVersion: ReviewV1, UID: "f", Code: 422}, &StatusDetails{Kind: "ModRule"}},
		{response{APIVersion: ReviewV1, UID: "g", Code: 422}, &StatusDetails{Causes: []StatusCause{{Type: "FieldValueRequired"}}}},
		{response: response{APIVersion: ReviewV1, UID: "h", Allowed: true, Code: 200, Message: "dry run"}},
		{response: response{APIVersion: ReviewV1, UID: "i", Allowed: true, AuditAnnotations: map[string]string{"policy.ns.p.b": `{"m":"\"x\""}`, "policy.ns.p.a": "1"}}},
	} {
		got := appendResponseDetails(nil, &r.response, r.Details)
		if r.Details == nil {
			if plain := appendResponse(nil, &r.response); !bytes.Equal(plain, got) {
				t.Errorf("appendResponse %s, appendResponseDetails %s", plain, got)
			}
		}
		var rv admissionv1.AdmissionReview
		if err := json.Unmarshal(got, &rv); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		want := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: r.APIVersion, Kind: "AdmissionReview"},
			Response: &admissionv1.AdmissionResponse{UID: types.UID(r.UID), Allowed: r.Allowed, Warnings: r.Warnings, AuditAnnotations: r.AuditAnnotations},
		}
		if r.Patch != nil {
			pt := admissionv1.PatchTypeJSONPatch
			want.Response.Patch, want.Response.PatchType = r.Patch, &pt
		}
		if r.Code != 0 {
			want.Response.Result = &metav1.Status{Status: "Failure", Code: int32(r.Code), Reason: metav1.StatusReason(r.Reason), Message: r.Message}
			if r.Allowed {
				want.Response.Result.Status = ""
			}
			if d := r.Details; d != nil {
				want.Response.Result.Details = &metav1.StatusDetails{Name: d.Name, Group: d.Group, Kind: d.Kind}
				for _, c := range d.Causes {
					want.Response.Result.Details.Causes = append(want.Response.Result.Details.Causes,
						metav1.StatusCause{Type: metav1.CauseType(c.Type), Field: c.Field, Message: c.Message})
				}
			}
		}
		// The response member byte for byte as encoding/json writes the
		// Kubernetes type (without its HTML escaping, which JSON does not
		// need).
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if err := e.Encode(want.Response); err != nil {
			t.Fatal(err)
		}
		if w := `"response":` + strings.TrimSuffix(enc.String(), "\n") + "}\n"; !strings.HasSuffix(string(got), w) {
			t.Errorf("encoding differs from encoding/json:\n got %s\nwant …%s", got, w)
		}
		if diff := cmp.Diff(want, rv); diff != "" {
			t.Errorf("(-want +got):\n%s\n%s", diff, got)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("héllo", 2); got != "h…" {
		t.Errorf("%q", got)
	}
	if got := truncate("abc", 3); got != "abc" {
		t.Errorf("%q", got)
	}
}

func TestDragnetBoundsInFlight(t *testing.T) {
	s := slow{deadline: make(chan time.Duration, 2)}
	h, reg := newTestDragnet(t, s, func(o *Options) { o.MaxInFlight = 1 })
	body := reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "x"), "")
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- post(t, h, DragnetPath+"?timeout=600ms", body) }()
	<-s.deadline // the first review holds the only slot
	rec := post(t, h, DragnetPath+"?timeout=100ms", body)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "overloaded") {
		t.Fatalf("second review: %d %s", rec.Code, rec.Body)
	}
	if got := gaugeValue(t, reg, "modwright_admission_reviews_in_flight"); got != 1 {
		t.Errorf("in flight %v, want 1", got)
	}
	if _, resp := decodeResponse(t, <-first); resp.Result.Code != 504 {
		t.Errorf("first review: %+v", resp.Result)
	}
	if got := gaugeValue(t, reg, "modwright_admission_reviews_in_flight"); got != 0 {
		t.Errorf("in flight %v after both, want 0", got)
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestDragnetPhases: the mutating path runs mutations alone (a Reject
// rule's object is admitted, patched), the validating path validations
// alone (the object as the API server sends it, final: rejected, no
// patch), the dragnet's own path both.
func TestDragnetPhases(t *testing.T) {
	h, reg := newTestDragnet(t, engine.New(engine.Options{}), nil)
	body := reviewBody("admission.k8s.io/v1", "CREATE", "", "Pod", "ns1", pod(`"app":"x"`, "nginx:latest"), "")
	for _, tc := range []struct {
		name    string
		h       http.Handler
		allowed bool
		patched bool
	}{
		{"dragnet", h, false, false},
		{"mutate", h.Phase(engine.Mutate), true, true},
		{"validate", h.Phase(engine.Validate), false, false},
	} {
		_, resp := decodeResponse(t, post(t, tc.h, "/", body))
		if resp.Allowed != tc.allowed || (len(resp.Patch) > 0) != tc.patched {
			t.Errorf("%s: allowed %v, patch %s; want allowed %v, patched %v", tc.name, resp.Allowed, resp.Patch, tc.allowed, tc.patched)
		}
		if !tc.allowed && (resp.Result == nil || !strings.Contains(resp.Result.Message, "no latest in ns1")) {
			t.Errorf("%s: result %+v", tc.name, resp.Result)
		}
	}
	// Each path counts under its own name.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" {
					seen[l.GetValue()] = true
				}
			}
		}
	}
	for _, name := range []string{"dragnet", "dragnet-mutate", "dragnet-validate"} {
		if !seen[name] {
			t.Errorf("no metric labelled webhook=%q (labels %v)", name, seen)
		}
	}
}

// queryCases are queries queryValue must read as url.ParseQuery does.
var queryCases = []string{
	"", "timeout=10s", "timeout=", "timeout", "a=1&timeout=5s&timeout=7s", "timeout=10s&timeout=1s",
	"time%6Fut=3s", "timeout=1%30s", "timeout=1%3", "timeout=1%3&timeout=2s", "timeout=10s;x=1&timeout=4s",
	"x;=1&timeout=2s", "&&timeout=2s&", "timeout=+1s", "timeout=1s+", "ti%zzmeout=1s&timeout=9s",
	"timeout=a=b", "=1s&timeout=2s", "timeouts=1s&timeout=2s", "Timeout=1s",
}

// TestQueryValue holds queryValue to url.ParseQuery's Get.
func TestQueryValue(t *testing.T) {
	for _, q := range queryCases {
		checkQueryValue(t, q)
	}
}

// FuzzQueryValue holds queryValue to url.ParseQuery's Get.
func FuzzQueryValue(f *testing.F) {
	for _, q := range queryCases {
		f.Add(q)
	}
	f.Fuzz(checkQueryValue)
}

func checkQueryValue(t *testing.T, q string) {
	vs, _ := url.ParseQuery(q) // the pairs that parse
	if got, want := queryValue(q, "timeout"), vs.Get("timeout"); got != want {
		t.Fatalf("queryValue(%q, timeout) = %q, url.ParseQuery has %q", q, got, want)
	}
}

// keeper decodes the object through the request's ObjectStorage, as the
// engine does, and keeps the tree and the storage. generate returns the
// tree as a generated object; late returns the decision only once the
// review's deadline has passed, as a rule that ignored it would.
type keeper struct {
	generate, late bool
	tree           any
	storage        *value.Storage
}

func (k *keeper) Evaluate(ctx context.Context, _ *engine.Snapshot, req engine.Request) (*engine.Decision, error) {
	tree, _, err := req.ObjectStorage.DecodeOmitting(req.ObjectJSON)
	if err != nil {
		return nil, err
	}
	k.tree, k.storage = tree, req.ObjectStorage
	dec := &engine.Decision{Object: tree}
	if k.generate {
		dec.Generated = []engine.Generated{{Kind: "Policy", Rule: "ns1/gen", Object: tree.(map[string]any)}}
	}
	if k.late {
		<-ctx.Done()
	}
	return dec, nil
}

// TestDragnetRecyclesObjects: the maps of a review's object are taken back
// for the next review once its response is encoded, but left to the tree
// when the decision generates objects (a generator keeps them) or the
// deadline passed before the evaluation returned (something may still
// read it).
func TestDragnetRecyclesObjects(t *testing.T) {
	obj := pod(`"app":"a","tier":"web"`, "nginx:1")
	want, err := value.Decode([]byte(obj))
	if err != nil {
		t.Fatal(err)
	}
	body := reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", obj, "")
	for _, tc := range []struct {
		name     string
		k        keeper
		recycled bool
	}{
		{name: "plain", recycled: true},
		{name: "generated", k: keeper{generate: true}},
		{name: "deadline passed", k: keeper{late: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestDragnet(t, &tc.k, nil)
			post(t, h, DragnetPath+"?timeout=100ms", body)
			if tc.k.storage == nil {
				t.Fatal("the evaluation was given no ObjectStorage")
			}
			// root, metadata, labels, spec and the container: five maps.
			if free, wantFree := tc.k.storage.Free(), map[bool]int{true: 5}[tc.recycled]; free != wantFree {
				t.Errorf("the storage keeps %d maps after the review, want %d", free, wantFree)
			}
			if !tc.recycled && !cmp.Equal(tc.k.tree, want) {
				t.Errorf("a tree left to its decision was changed after the review:\n%s", cmp.Diff(want, tc.k.tree))
			}
		})
	}
}

// TestDragnetReusedObjects: reviews of different objects, one after
// another through one dragnet whose storage lends each the maps of the
// last, are answered as each alone through a new dragnet.
func TestDragnetReusedObjects(t *testing.T) {
	var bodies []string
	for i, labels := range []string{`"fail":"yes"`, `"app":"a"`, ``, `"app":"b","x":"1","y":"2"`, `"team":"t"`} {
		bodies = append(bodies, reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod(labels, fmt.Sprintf("nginx:%d", i)), ""))
		bodies = append(bodies, reviewBody(ReviewV1, "UPDATE", "", "Pod", "ns1", pod(labels, "busybox"), pod(`"old":"1"`, "busybox")))
	}
	wants := make([]string, len(bodies))
	patched := 0
	for i, body := range bodies {
		alone, _ := newTestDragnet(t, engine.New(engine.Options{}), nil)
		wants[i] = post(t, alone, DragnetPath, body).Body.String()
		if strings.Contains(wants[i], `"patch":`) {
			patched++
		}
	}
	if patched == 0 {
		t.Error("no review was patched: the rules do not apply to these objects")
	}
	shared, _ := newTestDragnet(t, engine.New(engine.Options{}), nil)
	check := func(round, i int) {
		if got := post(t, shared, DragnetPath, bodies[i]).Body.String(); got != wants[i] {
			t.Errorf("round %d, review %d: through a reused dragnet\n%s\nwant, as through a new one,\n%s", round, i, got, wants[i])
		}
	}
	for round := range 3 {
		for i := range bodies {
			check(round, i)
		}
	}
	// At once: each worker's storage is its own (go test -race).
	var wg sync.WaitGroup
	for round := range 4 {
		wg.Go(func() {
			for i := range bodies {
				check(round, (i+round)%len(bodies))
			}
		})
	}
	wg.Wait()
}
