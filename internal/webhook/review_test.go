package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

func TestDecodeReview(t *testing.T) {
	got, err := decodeReview([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","extra":[1,{"x":null}],
	  "request":{"uid":"u\u0031","kind":{"group":"apps","version":"v1","kind":"Deployment","more":1},"resource":{"resource":"deployments"},
	  "subResource":"","name":"n","namespace":"ns","operation":"UPDATE","userInfo":{"username":"a","groups":["g"],"more":{}},
	  "object": {"kind":"Deployment", "spec":{}} ,"oldObject":null,"dryRun":false,"options":{"kind":"UpdateOptions"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != ReviewV1beta1 || got.Kind != "AdmissionReview" {
		t.Errorf("apiVersion %q, kind %q", got.APIVersion, got.Kind)
	}
	want := engine.Request{
		UID: "u1", Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Resource: engine.GroupVersionResource{Resource: "deployments"}, Namespace: "ns", Name: "n", Operation: rules.Update,
		UserInfo:   engine.UserInfo{Username: "a", Groups: []string{"g"}},
		ObjectJSON: []byte(`{"kind":"Deployment", "spec":{}}`), Options: []byte(`{"kind":"UpdateOptions"}`),
	}
	if diff := cmp.Diff(want, got.Request.attributes()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":5}}`, "request.uid: want a string, got 5"},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","kind":{"kind":[]}}}`, "request.kind.kind: want a string"},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":null}`, "no request"},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x"}} trailing`, "malformed"},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","object":{"a":}}}`, "malformed"},
		{`[]`, "malformed"},
		{`{"kind":1}`, "kind: want a string"},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","resource":[]}}`, "request.resource: want an object, got []"},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","requestKind":{"group":1}}}`, "request.requestKind.group: want a string, got 1"},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","userInfo":{"groups":["a",2]}}}`, `request.userInfo.groups: want an array of strings, got ["a",2]`},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","userInfo":{"groups":"a"}}}`, `request.userInfo.groups: want an array of strings`},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","userInfo":{"extra":{"scopes":"a"}}}}`, `request.userInfo.extra.scopes: want an array of strings`},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","userInfo":{"extra":[]}}}`, `request.userInfo.extra: want an object`},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","dryRun":"yes"}}`, `request.dryRun: want a boolean, got "yes"`},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":5}`, `request: want an object, got 5`},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":[{"uid":"x"}]}`, `request: want an object, got [{"uid":"x"}]`},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","operation":"CREATE"},"request":{"name":"n"}}`, `request.uid is empty`},
		// More string members than are set aside: decoded as they come.
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x"` + strings.Repeat(`,"name":"n"`, 12) + `,"namespace":1}}`, `request.namespace: want a string, got 1`},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","name":2` + strings.Repeat(`,"subResource":"n"`, 10) + `,"namespace":"n"}}`,
			`AdmissionReview: request.name: want a string, got 2`},
	} {
		_, err := decodeReview([]byte(tc.body))
		if !errors.Is(err, ErrMalformedReview) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrMalformedReview mentioning %q", tc.body, err, tc.want)
		}
	}
	// The messages whole: each member named once, from the request down.
	for body, want := range map[string]string{
		`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":5}}`:                     "malformed AdmissionReview: request.uid: want a string, got 5",
		`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","kind":{"kind":1}}}`: "malformed AdmissionReview: request.kind.kind: want a string, got 1",
		`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"dryRun":1}}`:                  "malformed AdmissionReview: request.dryRun: want a boolean, got 1",
		`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":5}`:                             "malformed AdmissionReview: request: want an object, got 5",
	} {
		if _, err := decodeReview([]byte(body)); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", body, err, want)
		}
	}

	// A repeated request replaces the first, whatever members each has.
	rv, err := decodeReview([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",` +
		`"request":{"uid":"a","operation":"CREATE","name":"n","kind":{"kind":"Pod"},"object":{"a":1},"dryRun":true},"request":null,` +
		`"request":{"uid":"b","operation":"DELETE","oldObject":{"b":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(engine.Request{UID: "b", Operation: "DELETE", OldObjectJSON: []byte(`{"b":2}`)}, rv.Request.attributes(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("repeated request (-want +got):\n%s", diff)
	}
}

// TestDecodeReviewNested: the request and the objects in it are read
// without validating their text again (the body's pass has), yet keys are
// unescaped and strings holding quotes, backslashes and brackets end where
// they do; and text that is not valid JSON anywhere in the request is still
// refused, by the body's pass.
func TestDecodeReviewNested(t *testing.T) {
	body := `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"u\u0069d":"u\\","operation":"CREATE",` +
		`"object":{"a":"}\\","b":["\"]",{"c":"\\\"}"}],"d":-1e3},"kind":{"gr\u006fup":"a\\\"}","version":"v1","kind":"K]"},` +
		`"resource":{"resource":"r\"}","x":[{"y":"]"}]},"userInfo":{"username":"x\\","gr\u006fups":["a\"]","b\\"],"extra":{"k\"}":["v}"]},"uid":"i"},` +
		`"name":"n","options":{"s":"{"}}}`
	var typed admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(body), &typed); err != nil {
		t.Fatal(err)
	}
	rv, err := decodeReview([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := typedAttributes(typed.Request)
	if want.UID != `u\` || want.UserInfo.Username != `x\` || len(want.UserInfo.Groups) != 2 || want.Kind.Group != `a\"}` {
		t.Fatalf("bad test case: encoding/json reads %+v", want)
	}
	if diff := cmp.Diff(want, rv.Request.attributes(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-encoding/json +decodeReview):\n%s", diff)
	}

	for _, bad := range []string{
		`"userInfo":{"groups":["a",]}`,
		`"kind":{"kind":"K",}`,
		`"kind":{"kind":"K" "group":"g"}`,
		`"resource":{"resource":"r\x"}`,
		`"userInfo":{"extra":{"k":["v"]]}}`,
		`"object":{"a":"\u12"}`,
		`"options":{"a":tru}`,
		`"name":"n` + "\t" + `"`,
	} {
		body := `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","operation":"CREATE",` + bad + `}}`
		if json.Valid([]byte(body)) {
			t.Fatalf("bad test case: %s is valid JSON", body)
		}
		if _, err := decodeReview([]byte(body)); !errors.Is(err, ErrMalformedReview) {
			t.Errorf("%s: got %v, want ErrMalformedReview", body, err)
		}
	}
}

// checkDeferring holds decodeReviewDeferring to decodeReview (rv and err
// its result on body): it refuses what decodeReview refuses but for an
// object it leaves unchecked that is not JSON, and reads the same review.
func checkDeferring(t *testing.T, body []byte, rv *review, err error) {
	t.Helper()
	drv, derr := decodeReviewDeferring(body)
	accepted := derr == nil && (!drv.req.objectUnchecked || drv.Request == nil || drv.Request.Object == nil || value.Valid(drv.Request.Object) == nil)
	if accepted != (err == nil) {
		t.Fatalf("decodeReviewDeferring(%q): %v (object unchecked: %v); decodeReview: %v", body, derr, derr == nil && drv.req.objectUnchecked, err)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(rv.Request.attributes(), drv.Request.attributes(), cmpopts.IgnoreFields(engine.Request{}, "ObjectUnchecked")); diff != "" {
		t.Fatalf("decodeReviewDeferring(%q) (-decodeReview +decodeReviewDeferring):\n%s", body, diff)
	}
	if rv.APIVersion != drv.APIVersion || rv.Kind != drv.Kind {
		t.Fatalf("decodeReviewDeferring(%q): %s %s, decodeReview's %s %s", body, drv.APIVersion, drv.Kind, rv.APIVersion, rv.Kind)
	}
}

// FuzzDecodeReview: no input panics; what is accepted is valid JSON, and
// its fields are what encoding/json reads; decodeReviewDeferring accepts
// and reads the same (checkDeferring).
func FuzzDecodeReview(f *testing.F) {
	f.Add([]byte(reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod(`"a":"b"`, "nginx:1"), "")))
	f.Add([]byte(reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", `{"a":[tru,"}\"{"]}`, "")))
	f.Add([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","operation":"CREATE","object":{"a":"}"},"object":null}}`))
	f.Add([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","operation":"CREATE","object":{"a":tru},"object":{}}}`))
	f.Add([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"\ud800x","object":null}}`))
	full := fullRequest()
	if body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: ReviewV1, Kind: "AdmissionReview"}, Request: &full}); err == nil {
		f.Add(body)
	}
	f.Add([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","operation":"CREATE","requestKind":{"kind":"a"},"requestKind":null,"requestResource":{"group":"a"},"requestResource":{"resource":"b"},` +
		`"userInfo":{"groups":["a","b"],"extra":{"k":["v"]}},"userInfo":{"groups":null,"extra":null},"dryRun":null}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rv, err := decodeReview(body)
		checkDeferring(t, body, rv, err)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		var ref struct {
			Request struct {
				UID    string          `json:"uid"`
				Object json.RawMessage `json:"object"`
			} `json:"request"`
		}
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("accepted what encoding/json refuses: %v", err)
		}
		// encoding/json also matches keys case-insensitively (and after
		// unescaping); compare where that cannot make a difference.
		lower := strings.ToLower(string(body))
		comparable := !strings.Contains(lower, `\`) &&
			strings.Count(lower, `"uid"`) == strings.Count(string(body), `"uid"`) &&
			strings.Count(lower, `"request"`) == strings.Count(string(body), `"request"`)
		if comparable && ref.Request.UID != rv.Request.UID {
			t.Fatalf("uid %q, encoding/json reads %q", rv.Request.UID, ref.Request.UID)
		}
		// Every attribute, where the Kubernetes types read the body too.
		var typed admissionv1.AdmissionReview
		for _, k := range []string{"kind", "resource", "subResource", "requestKind", "requestResource", "requestSubResource", "name", "namespace",
			"operation", "userInfo", "username", "groups", "extra", "object", "oldObject", "dryRun", "options", "group", "version"} {
			comparable = comparable && strings.Count(lower, `"`+strings.ToLower(k)+`"`) == strings.Count(string(body), `"`+k+`"`)
		}
		// A repeated request replaces the first; encoding/json merges them.
		comparable = comparable && strings.Count(string(body), `"request"`) == 1
		if comparable && json.Unmarshal(body, &typed) == nil && typed.Request != nil {
			want, got := typedAttributes(typed.Request), rv.Request.attributes()
			// A repeated null object leaves the earlier one in a RawExtension.
			for _, k := range []string{`"object"`, `"oldObject"`, `"options"`} {
				if strings.Count(string(body), k) > 1 {
					want.ObjectJSON, want.OldObjectJSON, want.Options = got.ObjectJSON, got.OldObjectJSON, got.Options
				}
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("attributes (-encoding/json +decodeReview):\n%s", diff)
			}
		}
		if rv.Request.Object != nil && !json.Valid(rv.Request.Object) {
			t.Fatalf("object %q is not valid JSON", rv.Request.Object)
		}
	})
}

// TestDragnetRefusesBadOperations: a review whose request.operation is not
// one of admission.k8s.io's (exactly spelled) is malformed, answered 400,
// and never evaluated nor admitted.
func TestDragnetRefusesBadOperations(t *testing.T) {
	obj := pod("", "nginx:latest")
	for _, tc := range []struct {
		name, request string
		code          int
		wantMessage   string
	}{
		{"missing", `{"uid":"u","kind":{"version":"v1","kind":"Pod"},"namespace":"ns1","object":` + obj + `}`, 400, "request.operation is missing"},
		{"null", `{"uid":"u","kind":{"version":"v1","kind":"Pod"},"namespace":"ns1","operation":null,"object":` + obj + `}`, 400, "request.operation is missing"},
		{"empty", `{"uid":"u","kind":{"version":"v1","kind":"Pod"},"namespace":"ns1","operation":"","object":` + obj + `}`, 400, "request.operation is missing"},
		{"lowercase", `{"uid":"u","kind":{"version":"v1","kind":"Pod"},"namespace":"ns1","operation":"create","object":` + obj + `}`, 400, `request.operation "create" is not an admission operation`},
		{"unknown", `{"uid":"u","kind":{"version":"v1","kind":"Pod"},"namespace":"ns1","operation":"PATCH","object":` + obj + `}`, 400, `request.operation "PATCH" is not`},
		{"padded", `{"uid":"u","kind":{"version":"v1","kind":"Pod"},"namespace":"ns1","operation":" CREATE","object":` + obj + `}`, 400, `request.operation " CREATE" is not`},
		{"not a string", `{"uid":"u","kind":{"version":"v1","kind":"Pod"},"namespace":"ns1","operation":1,"object":` + obj + `}`, 400, "request.operation: want a string"},
		// CONNECT is evaluated (a Policy may select it; no ModRule can).
		{"CONNECT", `{"uid":"u","kind":{"version":"v1","kind":"PodExecOptions"},"namespace":"ns1","operation":"CONNECT","object":{"kind":"PodExecOptions"}}`, 200, `"allowed":true`},
		{"CREATE", `{"uid":"u","kind":{"version":"v1","kind":"Pod"},"namespace":"ns1","operation":"CREATE","object":` + obj + `}`, 200, "operation rejected by the following ModRule(s): ns1/no-latest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &countingEvaluator{Evaluator: engine.New(engine.Options{})}
			h, _ := newTestDragnet(t, ev, nil)
			rec := post(t, h, DragnetPath, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":`+tc.request+`}`)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.wantMessage) {
				t.Errorf("got %d %s, want %d containing %q", rec.Code, rec.Body, tc.code, tc.wantMessage)
			}
			if wantEval := tc.name == "CREATE" || tc.name == "CONNECT"; (ev.n.Load() > 0) != wantEval {
				t.Errorf("evaluated %d times", ev.n.Load())
			}
		})
	}
}

// countingEvaluator counts evaluations.
type countingEvaluator struct {
	Evaluator
	n atomic.Int64
}

func (c *countingEvaluator) Evaluate(ctx context.Context, snap *engine.Snapshot, req engine.Request) (*engine.Decision, error) {
	c.n.Add(1)
	return c.Evaluator.Evaluate(ctx, snap, req)
}

// typedAttributes maps an AdmissionRequest as encoding/json decodes it.
func typedAttributes(r *admissionv1.AdmissionRequest) engine.Request {
	a := engine.Request{
		UID: string(r.UID), Operation: rules.Operation(r.Operation), Name: r.Name, Namespace: r.Namespace,
		Kind:               engine.GroupVersionKind{Group: r.Kind.Group, Version: r.Kind.Version, Kind: r.Kind.Kind},
		Resource:           engine.GroupVersionResource{Group: r.Resource.Group, Version: r.Resource.Version, Resource: r.Resource.Resource},
		SubResource:        r.SubResource,
		RequestSubResource: r.RequestSubResource,
		UserInfo:           engine.UserInfo{Username: r.UserInfo.Username, UID: r.UserInfo.UID, Groups: r.UserInfo.Groups},
		DryRun:             r.DryRun != nil && *r.DryRun,
		Options:            r.Options.Raw, ObjectJSON: r.Object.Raw, OldObjectJSON: r.OldObject.Raw,
	}
	if k := r.RequestKind; k != nil {
		a.RequestKind = engine.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
	}
	if res := r.RequestResource; res != nil {
		a.RequestResource = engine.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Resource}
	}
	for k, v := range r.UserInfo.Extra {
		if a.UserInfo.Extra == nil {
			a.UserInfo.Extra = map[string][]string{}
		}
		a.UserInfo.Extra[k] = v
	}
	return a
}

// fullRequest is an AdmissionRequest with every field set, as the API
// server would send it for a Deployment's scale subresource converted from
// apps/v1beta2. Its strings need escaping, its text is not all ASCII, and
// together they overflow the request's first text buffer and group slots.
func fullRequest() admissionv1.AdmissionRequest {
	dryRun := true
	return admissionv1.AdmissionRequest{
		UID:                "705ab4f5-6393-11e8-b7cc-42010a800002",
		Kind:               metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		Resource:           metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		SubResource:        "scale",
		RequestKind:        &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1beta2", Kind: "Scale"},
		RequestResource:    &metav1.GroupVersionResource{Group: "apps", Version: "v1beta2", Resource: "deployments"},
		RequestSubResource: "scale",
		Name:               "web-" + strings.Repeat("x", 400),
		Namespace:          "team-ä",
		Operation:          admissionv1.Update,
		UserInfo: authenticationv1.UserInfo{
			Username: `system:serviceaccount:kube-system:"quoted"\backslash`,
			UID:      "014fbff9a07c",
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated", "g4", "g5", "g\u00e9\t6"},
			Extra: map[string]authenticationv1.ExtraValue{
				"authentication.kubernetes.io/pod-name": {"web-1"},
				"scopes.example.com":                    {"read", "write"},
			},
		},
		Object:    runtime.RawExtension{Raw: []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":3}}`)},
		OldObject: runtime.RawExtension{Raw: []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":1}}`)},
		DryRun:    &dryRun,
		Options:   runtime.RawExtension{Raw: []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"UpdateOptions","fieldManager":"kubectl"}`)},
	}
}

// TestReviewAttributes: an admission.k8s.io/v1 and a v1beta1 review, as
// the Kubernetes types encode them, give the same engine.Request, with
// every attribute.
func TestReviewAttributes(t *testing.T) {
	full := fullRequest()
	want := engine.Request{
		UID:                "705ab4f5-6393-11e8-b7cc-42010a800002",
		Operation:          rules.Update,
		Name:               full.Name,
		Namespace:          "team-ä",
		Kind:               engine.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		Resource:           engine.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		SubResource:        "scale",
		RequestKind:        engine.GroupVersionKind{Group: "autoscaling", Version: "v1beta2", Kind: "Scale"},
		RequestResource:    engine.GroupVersionResource{Group: "apps", Version: "v1beta2", Resource: "deployments"},
		RequestSubResource: "scale",
		UserInfo: engine.UserInfo{
			Username: `system:serviceaccount:kube-system:"quoted"\backslash`,
			UID:      "014fbff9a07c",
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated", "g4", "g5", "g\u00e9\t6"},
			Extra: map[string][]string{
				"authentication.kubernetes.io/pod-name": {"web-1"},
				"scopes.example.com":                    {"read", "write"},
			},
		},
		DryRun:        true,
		Options:       []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"UpdateOptions","fieldManager":"kubectl"}`),
		ObjectJSON:    []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":3}}`),
		OldObjectJSON: []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":1}}`),
	}

	v1beta1 := admissionv1beta1.AdmissionRequest{
		UID: full.UID, Kind: full.Kind, Resource: full.Resource, SubResource: full.SubResource,
		RequestKind: full.RequestKind, RequestResource: full.RequestResource, RequestSubResource: full.RequestSubResource,
		Name: full.Name, Namespace: full.Namespace, Operation: admissionv1beta1.Operation(full.Operation),
		UserInfo: full.UserInfo, Object: full.Object, OldObject: full.OldObject, DryRun: full.DryRun, Options: full.Options,
	}
	minimal := admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}}
	for _, tc := range []struct {
		name   string
		review any
		want   engine.Request
	}{
		{"v1", admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: ReviewV1, Kind: "AdmissionReview"}, Request: &full}, want},
		{"v1beta1", admissionv1beta1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: ReviewV1beta1, Kind: "AdmissionReview"}, Request: &v1beta1}, want},
		// What the types leave out (omitempty) or send as null is empty.
		{"minimal", admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: ReviewV1, Kind: "AdmissionReview"}, Request: &minimal},
			engine.Request{UID: "u", Operation: rules.Create, Kind: engine.GroupVersionKind{Version: "v1", Kind: "Pod"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := json.Marshal(tc.review)
			if err != nil {
				t.Fatal(err)
			}
			rv, err := decodeReview(body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rv.Request.attributes(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeReviewAllocs: the request's strings, however many, cost one
// allocation (its text, sized before they are decoded), not one each.
func TestDecodeReviewAllocs(t *testing.T) {
	small := fullRequest()
	small.Name, small.UserInfo.Extra = "web", nil
	small.UserInfo.Groups = small.UserInfo.Groups[:3]
	small.UserInfo.Username = "system:serviceaccount:kube-system:deployer"
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: ReviewV1, Kind: "AdmissionReview"}, Request: &small})
	if err != nil {
		t.Fatal(err)
	}
	// The review with its request, and the request's text.
	if n := testing.AllocsPerRun(100, func() {
		if _, err := decodeReview(body); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("decoding a review with 17 strings took %v allocations, want at most 2", n)
	}
}

// BenchmarkDecodeReview decodes the load test's Deployment review (every
// attribute, as an API server sends it).
func BenchmarkDecodeReview(b *testing.B) {
	body := benchReview(b, "deployment.json", "")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeReview(body); err != nil {
			b.Fatal(err)
		}
	}
}
