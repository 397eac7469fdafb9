package webhook

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
