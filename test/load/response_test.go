package load

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeResponse checks decodeResponse against encoding/json.
func TestDecodeResponse(t *testing.T) {
	type reference struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   *struct {
			UID      string          `json:"uid"`
			Allowed  bool            `json:"allowed"`
			Patch    string          `json:"patch"`
			Warnings []string        `json:"warnings"`
			Status   *responseStatus `json:"status"`
		} `json:"response"`
	}
	for _, body := range []string{
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"patch":"W10=","patchType":"JSONPatch"}}` + "\n",
		` { "kind" : "AdmissionReview" , "response" : { "allowed" : false , "uid" : "u\u002d2", "status" : {"metadata":{},"code":403,"message":"no \"way\""} } } `,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patch":"","warnings":["a","b\n"]}}`,
		`{"apiVersion":null,"kind":"AdmissionReview","response":null}`,
		`{"apiVersion":"admission.k8s.io/v1","response":{"uid":"u","allowed":null,"patch":null,"warnings":null,"status":null},"extra":[1,{"x":2}]}`,
	} {
		var want reference
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		got, err := decodeResponse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if got.APIVersion != want.APIVersion || got.Kind != want.Kind || (got.Response == nil) != (want.Response == nil) {
			t.Fatalf("%s: got %+v, want %+v", body, got, want)
		}
		if want.Response == nil {
			continue
		}
		g, w := got.Response, want.Response
		if g.UID != w.UID || g.Allowed != w.Allowed || g.Patched != (w.Patch != "") || !reflect.DeepEqual(g.Warnings, w.Warnings) || !reflect.DeepEqual(g.Status, w.Status) {
			t.Errorf("%s: got %+v, want %+v", body, g, w)
		}
	}
	for _, bad := range []string{
		``, `[]`, `{"response":{"allowed":1}}`, `{"response":{"patch":5}}`, `{"kind":3}`,
		`{"response":{"uid":"u"}`, `{"response":{"uid":"u"}} x`, `{"response":{"warnings":"w"}}`, `{"response":{"uid":"bad\x01"}}`,
	} {
		var ref reference
		if json.Unmarshal([]byte(bad), &ref) == nil {
			t.Fatalf("%q: encoding/json accepts it; fix the test", bad)
		}
		if _, err := decodeResponse([]byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
