package webhook

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

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
	APIVersion string
	Kind       string
	Request    *request
}

// request is the part of an AdmissionRequest modwright reads. The objects
// stay JSON text: the engine decodes one only when a rule can apply to it.
type request struct {
	UID                        string
	Kind                       groupVersionKind
	Namespace, Name, Operation string
	SubResource                string
	Object, OldObject          []byte // nil when absent or null
}

type groupVersionKind struct{ Group, Version, Kind string }

// decodeReview parses and checks a request body. It is hand-written on
// value.ObjectMembers (one validating pass, no reflection, the objects left
// undecoded): the API server sends every admission through it. Unknown
// members are ignored, as encoding/json would.
func decodeReview(body []byte) (*review, error) {
	rv := &review{}
	err := value.ObjectMembers(body, func(key string, raw []byte) error {
		var err error
		switch key {
		case "apiVersion":
			rv.APIVersion, err = stringField(raw, key)
		case "kind":
			rv.Kind, err = stringField(raw, key)
		case "request":
			if string(raw) == "null" {
				return nil
			}
			rv.Request, err = decodeRequest(raw)
		}
		return err
	})
	if err != nil {
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
	case rv.Request.Operation == "":
		return nil, fmt.Errorf("%w: request.operation is missing (want CREATE, UPDATE, DELETE or CONNECT)", ErrMalformedReview)
	case !knownOperation(rv.Request.Operation):
		return nil, fmt.Errorf("%w: request.operation %q is not an admission operation (want CREATE, UPDATE, DELETE or CONNECT)", ErrMalformedReview, shorten([]byte(rv.Request.Operation)))
	}
	return rv, nil
}

// knownOperation reports whether op is one of the operations of
// admission.k8s.io (spelled exactly: the API server sends them in upper
// case). A review with any other operation is malformed: admitting it
// unevaluated would let a forged or garbled review bypass every rule.
func knownOperation(op string) bool {
	switch op {
	case "CREATE", "UPDATE", "DELETE", "CONNECT":
		return true
	}
	return false
}

func decodeRequest(data []byte) (*request, error) {
	req := &request{}
	err := value.ObjectMembers(data, func(key string, raw []byte) error {
		var err error
		switch key {
		case "uid":
			req.UID, err = stringField(raw, "request.uid")
		case "namespace":
			req.Namespace, err = stringField(raw, "request.namespace")
		case "name":
			req.Name, err = stringField(raw, "request.name")
		case "operation":
			req.Operation, err = stringField(raw, "request.operation")
		case "subResource":
			req.SubResource, err = stringField(raw, "request.subResource")
		case "kind":
			if string(raw) == "null" {
				return nil
			}
			err = value.ObjectMembers(raw, func(k string, raw []byte) error {
				var err error
				switch k {
				case "group":
					req.Kind.Group, err = stringField(raw, "request.kind.group")
				case "version":
					req.Kind.Version, err = stringField(raw, "request.kind.version")
				case "kind":
					req.Kind.Kind, err = stringField(raw, "request.kind.kind")
				}
				return err
			})
			if err != nil {
				err = fmt.Errorf("request.kind: %w", err)
			}
		case "object":
			req.Object = objectField(raw)
		case "oldObject":
			req.OldObject = objectField(raw)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return req, nil
}

// stringField decodes a string member; null counts as empty.
func stringField(raw []byte, name string) (string, error) {
	if string(raw) == "null" {
		return "", nil
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s: want a string, got %s", name, shorten(raw))
	}
	return value.DecodeString(raw)
}

func objectField(raw []byte) []byte {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

func shorten(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "…"
	}
	return string(raw)
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
