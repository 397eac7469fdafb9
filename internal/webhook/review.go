package webhook

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/modwright/modwright/internal/value"
)

// Supported AdmissionReview versions. v1beta1 has the same JSON shape for
// every field modwright reads and writes; the response echoes the request's
// version.
const (
	ReviewV1      = "admission.k8s.io/v1"
	ReviewV1beta1 = "admission.k8s.io/v1beta1"
)

// ErrMalformedReview marks requests that are not a usable AdmissionReview.
var ErrMalformedReview = errors.New("malformed AdmissionReview")

// review is the part of an AdmissionReview request modwright reads.
type review struct {
	APIVersion string                        `json:"apiVersion"`
	Kind       string                        `json:"kind"`
	Request    *admissionv1.AdmissionRequest `json:"request"`
}

// decodeReview parses and checks a request body.
func decodeReview(body []byte) (*review, error) {
	var rv review
	if err := json.Unmarshal(body, &rv); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedReview, err)
	}
	switch {
	case rv.Kind != "AdmissionReview":
		return nil, fmt.Errorf("%w: kind is %q, want AdmissionReview", ErrMalformedReview, rv.Kind)
	case rv.APIVersion != ReviewV1 && rv.APIVersion != ReviewV1beta1:
		return nil, fmt.Errorf("%w: apiVersion %q is not supported (use %s or %s)", ErrMalformedReview, rv.APIVersion, ReviewV1, ReviewV1beta1)
	case rv.Request == nil:
		return nil, fmt.Errorf("%w: no request", ErrMalformedReview)
	case rv.Request.UID == "":
		return nil, fmt.Errorf("%w: request.uid is empty", ErrMalformedReview)
	}
	return &rv, nil
}

// response is what modwright answers.
type response struct {
	APIVersion string
	UID        string
	Allowed    bool
	// Code, Reason and Message fill the response's status when Code != 0.
	Code    int
	Reason  string
	Message string
	// Patch is a JSON patch (an array), or nil.
	Patch    []byte
	Warnings []string
}

// appendResponse encodes an AdmissionReview response. It is hand-written
// (the hot path of every review); TestResponseEncoding checks it against
// encoding/json and the Kubernetes types.
func appendResponse(b []byte, r *response) []byte {
	b = append(b, `{"apiVersion":`...)
	b = appendString(b, r.APIVersion)
	b = append(b, `,"kind":"AdmissionReview","response":{"uid":`...)
	b = appendString(b, r.UID)
	b = append(b, `,"allowed":`...)
	b = strconv.AppendBool(b, r.Allowed)
	if r.Code != 0 {
		b = append(b, `,"status":{"metadata":{}`...)
		if !r.Allowed {
			b = append(b, `,"status":"Failure"`...)
		}
		if r.Message != "" {
			b = append(b, `,"message":`...)
			b = appendString(b, r.Message)
		}
		if r.Reason != "" {
			b = append(b, `,"reason":`...)
			b = appendString(b, r.Reason)
		}
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(r.Code), 10)
		b = append(b, '}')
	}
	if r.Patch != nil {
		b = append(b, `,"patch":"`...)
		b = base64.StdEncoding.AppendEncode(b, r.Patch)
		b = append(b, `","patchType":"JSONPatch"`...)
	}
	if len(r.Warnings) > 0 {
		b = append(b, `,"warnings":[`...)
		for i, w := range r.Warnings {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, w)
		}
		b = append(b, ']')
	}
	return append(b, "}}\n"...)
}

func appendString(b []byte, s string) []byte {
	out, err := value.AppendJSON(b, s)
	if err != nil { // strings always encode
		panic(err)
	}
	return out
}
