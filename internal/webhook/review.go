package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
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
	Request    *request // nil when absent or null; else &req
	req        request
}

// request is an AdmissionRequest: every field of admission.k8s.io/v1 and
// v1beta1 (the same JSON in both). The objects and the options stay JSON
// text: the engine decodes an object only when a rule can apply to it.
type request struct {
	UID                             string
	Kind, RequestKind               engine.GroupVersionKind
	Resource, RequestResource       engine.GroupVersionResource
	SubResource, RequestSubResource string
	Namespace, Name, Operation      string
	UserInfo                        engine.UserInfo
	DryRun                          bool
	Object, OldObject               []byte // nil when absent or null
	Options                         []byte // nil when absent or null
	// objectUnchecked: Object's text was not checked to be JSON
	// (decodeReviewDeferring); the engine checks it.
	objectUnchecked bool

	// text holds the text of every string above, and groups the first
	// few userInfo.groups: decoding a review allocates for these once,
	// not once per string (see decodeRequest).
	text   strings.Builder
	groups [4]string
}

// attributes returns the request as the engine takes it, sharing its
// strings and JSON text.
func (r *request) attributes() engine.Request {
	return engine.Request{
		UID:                r.UID,
		Operation:          rules.Operation(r.Operation),
		Name:               r.Name,
		Namespace:          r.Namespace,
		Kind:               r.Kind,
		Resource:           r.Resource,
		SubResource:        r.SubResource,
		RequestKind:        r.RequestKind,
		RequestResource:    r.RequestResource,
		RequestSubResource: r.RequestSubResource,
		UserInfo:           r.UserInfo,
		DryRun:             r.DryRun,
		Options:            r.Options,
		ObjectJSON:         r.Object,
		OldObjectJSON:      r.OldObject,
		ObjectUnchecked:    r.objectUnchecked,
	}
}

// decodeReview parses and checks a request body. It is hand-written on
// value.ObjectMembersNested (one validating pass over the body, the
// request's members read in it, no reflection, the objects left
// undecoded): the API server sends every admission through it. Unknown
// members are ignored, as encoding/json would.
func decodeReview(body []byte) (*review, error) { return decodeReviewWith(body, false) }

// decodeReviewDeferring is decodeReview but for the text of the request's
// object, which it only delimits (value.ObjectMembersNestedDeferring): the
// engine checks it as it decodes it, or where it does not
// (engine.Request.ObjectUnchecked), instead of its text being checked
// here first. A review is malformed, and refused, where decodeReview
// would refuse it (an object nested too deep included), or once the
// engine finds its object is not JSON (the dragnet then asks decodeReview
// why). The body, a few kilobytes of object around a few hundred bytes of
// request, is thus checked once.
func decodeReviewDeferring(body []byte) (*review, error) { return decodeReviewWith(body, true) }

func decodeReviewWith(body []byte, deferObject bool) (*review, error) {
	rv := &review{}
	var rd requestDecoder
	var deferred func(key string) bool
	if deferObject {
		deferred = func(key string) bool {
			rd.deferred = key == "object"
			return rd.deferred
		}
	}
	err := value.ObjectMembersNestedDeferring(body, func(key string, raw []byte) error {
		var err error
		switch key {
		case "apiVersion":
			rv.APIVersion, err = constField(raw, key, ReviewV1, ReviewV1beta1)
		case "kind":
			rv.Kind, err = constField(raw, key, "AdmissionReview")
		case "request":
			switch {
			case string(raw) == "null":
			case raw[0] != '{': // an object's members were read as they came
				err = fmt.Errorf("request%w", &fieldError{"an object", raw})
			default: // its errors name their member
				if err = rd.st.flush(&rv.req); err == nil {
					rv.Request = &rv.req
				}
			}
		}
		return err
	}, func(key string) bool {
		if key != "request" {
			return false
		}
		rv.req = request{} // a repeated request replaces the first
		rd = requestDecoder{req: &rv.req}
		return true
	}, func(key string, raw []byte) error {
		return rd.member(key, raw)
	}, deferred)
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

// requestDecoder decodes an AdmissionRequest, given its members one by one
// (member) as decodeReview reads them, in two steps: the objects and the
// scalars are taken as they come and the members holding strings (up to a
// dozen; more are decoded in place, in order) are set aside; then, their
// size known, the request's text is allocated once and they are decoded in
// document order (st.flush, once the request has ended).
//
// The members come validated, with the whole body: the objects in them
// (kind, resource, userInfo...) are read with value.ObjectMembersValidated,
// without checking them again.
type requestDecoder struct {
	req *request
	st  textMembers
	// deferred: the member given next is an object whose text was not
	// checked (decodeReviewDeferring).
	deferred bool
}

func (rd *requestDecoder) member(key string, raw []byte) error {
	req := rd.req
	var err error
	switch key {
	case "uid", "kind", "resource", "subResource", "requestKind", "requestResource", "requestSubResource", "name", "namespace", "userInfo":
		return rd.st.add(req, key, raw) // its errors name their member
	case "operation":
		req.Operation, err = operationField(raw)
	case "object":
		if req.objectUnchecked && req.Object != nil {
			// Another object replaces this one: check it now, or the
			// review would be read though its text is not JSON.
			if err := value.Valid(req.Object); err != nil {
				return fmt.Errorf("request.object: %w", err)
			}
		}
		req.Object, req.objectUnchecked = objectField(raw), rd.deferred
		rd.deferred = false
	case "oldObject":
		req.OldObject = objectField(raw)
	case "dryRun":
		req.DryRun, err = boolField(raw)
	case "options":
		req.Options = objectField(raw)
	}
	if err != nil {
		return fmt.Errorf("request.%s%w", key, err)
	}
	return nil
}

// textMembers holds the members of a request whose strings go into its
// text until their size is known.
type textMembers struct {
	held [12]struct {
		key string
		raw []byte
	}
	n    int
	size int  // bytes of raw JSON held: about the text they hold
	full bool // held was full: members are decoded as they come
	// lastKind and lastResource are the kind and resource held last.
	lastKind, lastResource []byte

	// The kind and resource seen, once each so far: requestKind and
	// requestResource repeat them unless the API server converted the
	// request.
	kindRaw, resourceRaw []byte
	kinds, resources     int
}

func (t *textMembers) add(req *request, key string, raw []byte) error {
	if t.full || t.n == len(t.held) {
		if err := t.flush(req); err != nil {
			return err
		}
		t.full = true
		if err := t.decode(req, key, raw); err != nil {
			return fmt.Errorf("request.%s%w", key, err)
		}
		return nil
	}
	t.held[t.n].key, t.held[t.n].raw = key, raw
	t.n++
	switch key {
	case "kind":
		t.lastKind = raw
	case "resource":
		t.lastResource = raw
	case "requestKind":
		if bytes.Equal(raw, t.lastKind) {
			return nil // most likely decoded as a copy of kind: no text
		}
	case "requestResource":
		if bytes.Equal(raw, t.lastResource) {
			return nil
		}
	}
	t.size += len(raw)
	return nil
}

// flush decodes the members held, in order.
func (t *textMembers) flush(req *request) error {
	if t.n == 0 {
		return nil
	}
	req.text.Grow(t.size)
	for _, m := range t.held[:t.n] {
		if err := t.decode(req, m.key, m.raw); err != nil {
			return fmt.Errorf("request.%s%w", m.key, err)
		}
	}
	t.n = 0
	return nil
}

func (t *textMembers) decode(req *request, key string, raw []byte) error {
	switch key {
	case "uid":
		return req.setStr(&req.UID, raw)
	case "kind":
		t.kinds, t.kindRaw = t.kinds+1, raw
		return req.gvk(raw, &req.Kind)
	case "resource":
		t.resources, t.resourceRaw = t.resources+1, raw
		return req.gvr(raw, &req.Resource)
	case "subResource":
		return req.setStr(&req.SubResource, raw)
	case "requestKind":
		switch {
		case string(raw) == "null": // optional: null clears it
			req.RequestKind = engine.GroupVersionKind{}
		case t.kinds == 1 && req.RequestKind == (engine.GroupVersionKind{}) && bytes.Equal(raw, t.kindRaw):
			req.RequestKind = req.Kind // usually the same text: decoded once
		default:
			return req.gvk(raw, &req.RequestKind)
		}
	case "requestResource":
		switch {
		case string(raw) == "null":
			req.RequestResource = engine.GroupVersionResource{}
		case t.resources == 1 && req.RequestResource == (engine.GroupVersionResource{}) && bytes.Equal(raw, t.resourceRaw):
			req.RequestResource = req.Resource
		default:
			return req.gvr(raw, &req.RequestResource)
		}
	case "requestSubResource":
		return req.setStr(&req.RequestSubResource, raw)
	case "name":
		return req.setStr(&req.Name, raw)
	case "namespace":
		return req.setStr(&req.Namespace, raw)
	case "userInfo":
		return req.userInfo(raw)
	}
	return nil
}

// setStr decodes a string member into *dst.
func (r *request) setStr(dst *string, raw []byte) error {
	s, err := r.str(raw)
	if err != nil {
		return err
	}
	*dst = s
	return nil
}

// fieldError is a member's value of the wrong type; the members it is in
// prefix their names as it goes up ("request.kind.kind: want a string").
type fieldError struct {
	want string
	got  []byte
}

func (e *fieldError) Error() string { return ": want " + e.want + ", got " + shorten(e.got) }

// members calls fn for each member of the object raw; null is an empty
// object. An error is prefixed with ".key" (the member's name). raw is a
// member of the request, validated with the whole body: it is not checked
// again.
func members(raw []byte, fn func(key string, raw []byte) error) error {
	if string(raw) == "null" {
		return nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return &fieldError{"an object", raw}
	}
	return value.ObjectMembersValidated(raw, func(key string, raw []byte) error {
		if err := fn(key, raw); err != nil {
			return fmt.Errorf(".%s%w", key, err)
		}
		return nil
	})
}

func (r *request) gvk(raw []byte, dst *engine.GroupVersionKind) error {
	return r.groupVersion(raw, "kind", &dst.Group, &dst.Version, &dst.Kind)
}

func (r *request) gvr(raw []byte, dst *engine.GroupVersionResource) error {
	return r.groupVersion(raw, "resource", &dst.Group, &dst.Version, &dst.Resource)
}

// groupVersion decodes {"group", "version", <name>} into three strings: a
// GroupVersionKind or a GroupVersionResource.
func (r *request) groupVersion(raw []byte, name string, group, version, last *string) error {
	return members(raw, func(k string, raw []byte) error {
		var dst *string
		switch k {
		case "group":
			dst = group
		case "version":
			dst = version
		case name:
			dst = last
		default:
			return nil
		}
		var err error
		*dst, err = r.str(raw)
		return err
	})
}

// userInfo decodes an authentication.k8s.io/v1 UserInfo.
func (r *request) userInfo(raw []byte) error {
	u := &r.UserInfo
	return members(raw, func(k string, raw []byte) error {
		var err error
		switch k {
		case "username":
			u.Username, err = r.str(raw)
		case "uid":
			u.UID, err = r.str(raw)
		case "groups":
			u.Groups, err = r.strings(raw, r.groups[:0])
		case "extra":
			if string(raw) == "null" {
				u.Extra = nil
			}
			err = members(raw, func(k string, raw []byte) error {
				vals, err := r.strings(raw, nil)
				if err != nil {
					return err
				}
				if u.Extra == nil {
					u.Extra = map[string][]string{}
				}
				u.Extra[k] = vals
				return nil
			})
		}
		return err
	})
}

// strings decodes an array of strings, appending to dst; null is nil. raw
// has been validated as JSON, so the scan only has to find each element.
func (r *request) strings(raw []byte, dst []string) ([]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, &fieldError{"an array of strings", raw}
	}
	for i := 1; i < len(raw); {
		switch raw[i] {
		case ' ', '\t', '\n', '\r', ',':
			i++
			continue
		case ']':
			if dst == nil {
				dst = []string{}
			}
			return dst, nil
		case '"':
		default:
			return nil, &fieldError{"an array of strings", raw}
		}
		j := i + 1
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(raw) {
			break
		}
		s, err := r.str(raw[i : j+1])
		if err != nil {
			return nil, err
		}
		dst = append(dst, s)
		i = j + 1
	}
	return nil, &fieldError{"an array of strings", raw}
}

// str decodes a string member into the request's text; null counts as
// empty. raw has been validated as JSON: a string without escapes, all
// UTF-8, is its own text.
func (r *request) str(raw []byte) (string, error) {
	if string(raw) == "null" {
		return "", nil
	}
	if len(raw) < 2 || raw[0] != '"' {
		return "", &fieldError{"a string", raw}
	}
	text := raw[1 : len(raw)-1]
	if bytes.IndexByte(text, '\\') >= 0 || !utf8.Valid(text) {
		s, err := value.DecodeString(raw) // rare: unescaping builds a new string
		if err != nil {
			return "", fmt.Errorf(": %w", err)
		}
		return s, nil
	}
	if len(text) == 0 {
		return "", nil
	}
	// A strings.Builder never changes the text it has handed out: the
	// strings taken before it grows keep the old storage.
	n := r.text.Len()
	r.text.Write(text)
	return r.text.String()[n:], nil
}

// operationField decodes the operation without allocating when it is one
// of admission.k8s.io's (decodeReview refuses any other).
func operationField(raw []byte) (string, error) {
	op, err := constField(raw, "", "CREATE", "UPDATE", "DELETE", "CONNECT")
	if err != nil {
		return "", &fieldError{"a string", raw}
	}
	return op, nil
}

// boolField decodes a boolean member; null counts as false.
func boolField(raw []byte) (bool, error) {
	switch string(raw) {
	case "true":
		return true, nil
	case "false", "null":
		return false, nil
	}
	return false, &fieldError{"a boolean", raw}
}

// constField decodes a string member, returning the one of consts it
// spells without allocating.
func constField(raw []byte, name string, consts ...string) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' {
		for _, c := range consts {
			if string(raw[1:len(raw)-1]) == c {
				return c, nil
			}
		}
	}
	return stringField(raw, name)
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
	// AuditAnnotations go into the request's audit record (the API server
	// prefixes each key with the webhook's name); nil when none.
	AuditAnnotations map[string]string
}

// appendResponse encodes an AdmissionReview response. It is hand-written
// (the hot path of every review); TestResponseEncoding checks it against
// encoding/json and the Kubernetes types.
func appendResponse(b []byte, r *response) []byte {
	return appendResponseDetails(b, r, nil)
}

// appendResponseDetails is appendResponse with the status's details (a
// validation denial) when details != nil and r.Code != 0. They are not in
// response, which the dragnet allocates for every review and never gives
// details.
func appendResponseDetails(b []byte, r *response, details *StatusDetails) []byte {
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
		if details != nil {
			b = appendDetails(b, details)
		}
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(r.Code), 10)
		b = append(b, '}')
	}
	if r.Patch != nil {
		b = append(b, `,"patch":"`...)
		b = appendBase64(b, r.Patch)
		b = append(b, `","patchType":"JSONPatch"`...)
	}
	if len(r.AuditAnnotations) > 0 {
		b = append(b, `,"auditAnnotations":{`...)
		keys := make([]string, 0, len(r.AuditAnnotations))
		for k := range r.AuditAnnotations {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, r.AuditAnnotations[k])
		}
		b = append(b, '}')
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

// appendDetails encodes a status's details as encoding/json does
// metav1.StatusDetails (its members in their order, empty ones omitted).
func appendDetails(b []byte, d *StatusDetails) []byte {
	b = append(b, `,"details":{`...)
	sep := false
	member := func(name, v string) {
		if v == "" {
			return
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = appendString(b, v)
	}
	member("name", d.Name)
	member("group", d.Group)
	member("kind", d.Kind)
	if len(d.Causes) > 0 {
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, `"causes":[`...)
		for i, c := range d.Causes {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			sep = false
			member("reason", c.Type)
			member("message", c.Message)
			member("field", c.Field)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}
