package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

func TestDecodeReview(t *testing.T) {
	got, err := decodeReview([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","extra":[1,{"x":null}],
	  "request":{"uid":"u\u0031","kind":{"group":"apps","version":"v1","kind":"Deployment","more":1},"resource":{"resource":"deployments"},
	  "subResource":"","name":"n","namespace":"ns","operation":"UPDATE","userInfo":{"username":"a","groups":["g"]},
	  "object": {"kind":"Deployment", "spec":{}} ,"oldObject":null,"dryRun":false,"options":{"kind":"UpdateOptions"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &review{APIVersion: ReviewV1beta1, Kind: "AdmissionReview", Request: &request{
		UID: "u1", Kind: groupVersionKind{"apps", "v1", "Deployment"}, Namespace: "ns", Name: "n", Operation: "UPDATE",
		Object: []byte(`{"kind":"Deployment", "spec":{}}`),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
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
	} {
		_, err := decodeReview([]byte(tc.body))
		if !errors.Is(err, ErrMalformedReview) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrMalformedReview mentioning %q", tc.body, err, tc.want)
		}
	}
}

// FuzzDecodeReview: no input panics; what is accepted is valid JSON, and
// its fields are what encoding/json reads.
func FuzzDecodeReview(f *testing.F) {
	f.Add([]byte(reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod(`"a":"b"`, "nginx:1"), "")))
	f.Add([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"\ud800x","object":null}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rv, err := decodeReview(body)
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
		// CONNECT is an admission operation no ModRule can select.
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
			if wantEval := tc.name == "CREATE"; (ev.n.Load() > 0) != wantEval {
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

func (c *countingEvaluator) Evaluate(ctx context.Context, snap *rules.Snapshot, req engine.Request) (*engine.Decision, error) {
	c.n.Add(1)
	return c.Evaluator.Evaluate(ctx, snap, req)
}
