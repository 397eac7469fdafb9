package load

import (
	"encoding/json"
	"fmt"

	"github.com/modwright/modwright/internal/value"
)

// reviewResponse is the part of an AdmissionReview response checked.
type reviewResponse struct {
	APIVersion string
	Kind       string
	Response   *responseFields
}

type responseFields struct {
	UID     string
	Allowed bool
	// Patched: the patch is a non-empty string. It stays base64 text:
	// checking it is there is enough.
	Patched  bool
	Warnings []string
	Status   *responseStatus
}

type responseStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// decodeResponse reads an AdmissionReview response as encoding/json would
// read it into reviewResponse, but cheaply: the generator shares the CPUs
// with the server, and encoding/json would spend tens of microseconds
// scanning a patch of a few kilobytes. The whole text is still validated
// as JSON (value.ObjectMembers, a validating scanner fuzzed against
// encoding/json); the patch is checked to be a string, not decoded; the
// rare members (warnings, status) go through encoding/json.
func decodeResponse(data []byte) (*reviewResponse, error) {
	rv := &reviewResponse{}
	err := value.ObjectMembers(data, func(key string, raw []byte) error {
		var err error
		switch key {
		case "apiVersion":
			rv.APIVersion, err = stringMember(key, raw)
		case "kind":
			rv.Kind, err = stringMember(key, raw)
		case "response":
			if string(raw) == "null" {
				rv.Response = nil
				return nil
			}
			rv.Response, err = decodeResponseFields(raw)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return rv, nil
}

func decodeResponseFields(data []byte) (*responseFields, error) {
	r := &responseFields{}
	err := value.ObjectMembers(data, func(key string, raw []byte) error {
		var err error
		switch key {
		case "uid":
			r.UID, err = stringMember(key, raw)
		case "allowed":
			switch string(raw) {
			case "true":
				r.Allowed = true
			case "false", "null":
				r.Allowed = false
			default:
				err = fmt.Errorf("response.allowed: want a boolean, got %.40s", raw)
			}
		case "patch":
			switch {
			case string(raw) == "null":
				r.Patched = false
			case raw[0] == '"':
				r.Patched = len(raw) > 2 // not ""
			default:
				err = fmt.Errorf("response.patch: want a string, got %.40s", raw)
			}
		case "warnings":
			r.Warnings = nil
			err = json.Unmarshal(raw, &r.Warnings)
		case "status":
			r.Status = nil
			err = json.Unmarshal(raw, &r.Status)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	return r, nil
}

func stringMember(key string, raw []byte) (string, error) {
	switch {
	case string(raw) == "null":
		return "", nil
	case raw[0] != '"':
		return "", fmt.Errorf("%s: want a string, got %.40s", key, raw)
	}
	return value.DecodeString(raw)
}
