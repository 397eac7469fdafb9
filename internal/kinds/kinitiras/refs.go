package kinitiras

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/modwright/modwright/internal/engine"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/rules"
)

// Readers are what references read beyond the object: objects of any
// kind (k8s, owner) and HTTP responses (http). A nil reader makes a
// reference that needs it an error naming what is missing.
type Readers struct {
	Kinds engine.KindReader
	HTTP  engine.HTTPReader
	// Namespace confines k8s references to one namespace: a namespaced
	// OverridePolicy's ("" for the cluster kinds: any namespace, and
	// cluster-scoped objects).
	Namespace string
	// Authorize, with a Namespace, checks that the namespace's rule reader
	// may read an object (engine.Handle.AuthorizeRead); nil: not checked.
	Authorize func(owner, group, resource, namespace, name string) error
}

// authorize checks a namespaced policy's read of kind in namespace (name
// "" for a list) as its rule reader.
func (rd *Readers) authorize(apiVersion, kind, namespace, name string) error {
	if rd.Namespace == "" || rd.Authorize == nil {
		return nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return err
	}
	plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(kind))
	return rd.Authorize(rd.Namespace, gv.Group, plural.Resource, namespace, name)
}

// ErrOutsideNamespace is in the chain of the error of a namespaced
// policy's k8s reference to another namespace or a cluster-scoped object:
// a namespaced rule never sees past its namespace (docs/security.md).
var ErrOutsideNamespace = errors.New("outside the policy's namespace")

// tasks runs the processing.http tasks of cue programs through the HTTP
// reader (nil without one: such a program then fails, naming why).
func (rd *Readers) tasks() cuelang.Tasks {
	if rd == nil || rd.HTTP == nil {
		return nil
	}
	return func(ctx context.Context, t cuelang.Task) ([]byte, error) {
		resp, err := rd.HTTP.Fetch(ctx, engine.HTTPRequest{Method: t.Method, URL: t.URL, Header: t.Header, Body: t.Body})
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
}

// ErrNoReader is wrapped by the error of a reference whose source has no
// reader (offline: no --context objects or recorded responses).
var ErrNoReader = engine.NoReader("no reader for this reference")

// extRef is one reference resolved outside the object, and the name its
// value has in data.extraParams.
type extRef struct {
	key   string
	field string // the reference's field, for errors
	ref   *ResourceRef
}

// externalRefs are a template's references to other objects and HTTP.
func overrideRefs(t *OverrideTemplate, field string) []extRef {
	if t == nil || t.ValueRef == nil || !external(t.ValueRef.From) {
		return nil
	}
	return []extRef{{refKey(t.ValueRef.From, ""), field + ".valueRef", t.ValueRef}}
}

func validateRefs(t *ValidateTemplate, field string) []extRef {
	if t == nil || t.Condition == nil {
		return nil
	}
	var out []extRef
	if r := t.Condition.ValueRef; r != nil && external(r.From) {
		out = append(out, extRef{refKey(r.From, ""), field + ".condition.valueRef", r})
	}
	if r := t.Condition.DataRef; r != nil && external(r.From) {
		out = append(out, extRef{refKey(r.From, "_d"), field + ".condition.dataRef", r})
	}
	return out
}

// extraParams resolves refs for obj into data.extraParams. A source that
// resolves to nothing (an owner-less object, a label selector that picks
// nothing, a {{ path }} the object lacks) is left out, so the program's
// `!= _|_` guards skip it.
func extraParams(ctx context.Context, rd *Readers, obj map[string]any, refs []extRef) (map[string]any, error) {
	out := map[string]any{}
	for _, r := range refs {
		v, err := resolveRef(ctx, rd, obj, r.ref)
		if err != nil {
			return nil, fmt.Errorf("%s (from %s): %w", r.field, r.ref.From, err)
		}
		if v != nil {
			out[r.key] = v
		}
	}
	return out, nil
}

func resolveRef(ctx context.Context, rd *Readers, obj map[string]any, r *ResourceRef) (any, error) {
	if rd == nil {
		rd = &Readers{}
	}
	switch r.From {
	case FromK8s:
		if rd.Kinds == nil {
			return nil, fmt.Errorf("%w: objects of other kinds (offline: give them with --context)", ErrNoReader)
		}
		return k8sObject(ctx, rd, obj, r.K8s)
	case FromOwner:
		md, _ := obj["metadata"].(map[string]any)
		if owners, _ := md["ownerReferences"].([]any); len(owners) == 0 {
			return nil, nil // no owner: nothing to read
		}
		if rd.Kinds == nil {
			return nil, fmt.Errorf("%w: the owner object (offline: give it with --context)", ErrNoReader)
		}
		return ownerObject(ctx, rd, obj)
	case FromHTTP:
		if rd.HTTP == nil {
			return nil, fmt.Errorf("%w: HTTP responses (offline: record them in the context)", ErrNoReader)
		}
		return httpResponse(ctx, rd.HTTP, obj, r.Http)
	}
	return nil, nil
}

// refValue matches a {{ path }} reference to the object.
var refValue = regexp.MustCompile(`\{\{(.*?)\}\}`)

// subst replaces the first {{ a.b.c }} of s with the object's string at
// that dotted path, as kinitiras does; ok is false when the object has no
// string there.
func subst(s string, obj map[string]any) (string, bool, error) {
	if strings.Contains(s, "{{}}") {
		return "", false, fmt.Errorf("%q: an empty {{}} reference", s)
	}
	m := refValue.FindStringSubmatchIndex(s)
	if m == nil {
		return s, true, nil
	}
	key := s[m[2]:m[3]]
	var cur any = obj
	for _, k := range strings.Split(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		if cur, ok = mm[k]; !ok {
			return "", false, nil
		}
	}
	v, ok := cur.(string)
	if !ok {
		return "", false, nil
	}
	return s[:m[0]] + v + s[m[1]:], true, nil
}

func k8sObject(ctx context.Context, rd *Readers, obj map[string]any, sel *ResourceSelector) (any, error) {
	kr, confine := rd.Kinds, rd.Namespace
	if sel == nil {
		return nil, fmt.Errorf("from k8s needs k8s (the object's selector)")
	}
	ns, ok, err := subst(sel.Namespace, obj)
	if err != nil || !ok {
		return emptyObject(ok), err
	}
	if confine != "" && ns != confine {
		return nil, fmt.Errorf("%w: %s in %q, the policy is in %q", ErrOutsideNamespace, sel.Kind, ns, confine)
	}
	if sel.Name != "" {
		name, ok, err := subst(sel.Name, obj)
		if err != nil || !ok {
			return emptyObject(ok), err
		}
		if err := rd.authorize(sel.APIVersion, sel.Kind, ns, name); err != nil {
			return nil, err
		}
		o, err := kr.GetKind(ctx, sel.APIVersion, sel.Kind, ns, name)
		if err != nil {
			return nil, err
		}
		if o == nil {
			return nil, fmt.Errorf("%s %s not found", sel.Kind, joinKey(ns, name))
		}
		return o, nil
	}
	if sel.LabelSelector == nil {
		return nil, nil
	}
	ls := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for k, v := range sel.LabelSelector.MatchLabels {
		x, ok, err := subst(v, obj)
		if err != nil || !ok {
			return emptyObject(ok), err
		}
		ls.MatchLabels[k] = x
	}
	for _, e := range sel.LabelSelector.MatchExpressions {
		var vals []string
		for _, v := range e.Values {
			x, ok, err := subst(v, obj)
			if err != nil || !ok {
				return emptyObject(ok), err
			}
			vals = append(vals, x)
		}
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: vals})
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	if err := rd.authorize(sel.APIVersion, sel.Kind, ns, ""); err != nil {
		return nil, err
	}
	list, err := kr.ListKind(ctx, sel.APIVersion, sel.Kind, ns, s.String(), 0) // the first by name: all of them
	if err != nil || len(list) == 0 {
		return nil, err
	}
	// kinitiras takes the lister's first; modwright the first by name.
	sort.Slice(list, func(i, j int) bool { return objName(list[i]) < objName(list[j]) })
	return list[0], nil
}

// emptyObject is what kinitiras gives for a reference whose {{ path }}
// the object lacks: an empty object.
func emptyObject(ok bool) any {
	if ok {
		return nil
	}
	return map[string]any{}
}

func objName(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

func joinKey(ns, name string) string { return rules.Key(ns, name) }

// ownerObject is the object's first owner, in the object's namespace;
// nil when it has none (kinitiras fails the request).
func ownerObject(ctx context.Context, rd *Readers, obj map[string]any) (any, error) {
	kr := rd.Kinds
	md, _ := obj["metadata"].(map[string]any)
	owners, _ := md["ownerReferences"].([]any)
	if len(owners) == 0 {
		return nil, nil
	}
	o, _ := owners[0].(map[string]any)
	av, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	name, _ := o["name"].(string)
	if name == "" {
		return map[string]any{}, nil
	}
	ns, _ := md["namespace"].(string)
	if err := rd.authorize(av, kind, ns, name); err != nil {
		return nil, err
	}
	got, err := kr.GetKind(ctx, av, kind, ns, name)
	if err != nil {
		return nil, err
	}
	if got == nil {
		return nil, fmt.Errorf("owner %s %s not found", kind, joinKey(ns, name))
	}
	return got, nil
}

// httpResponse makes the reference's request: its URL and params with
// {{ path }} references filled, its headers and body, and a bearer token
// (static, or fetched from authUrl with basic auth and reused until it
// expires). The response is {body, header, trailer}; body must be a JSON
// object, as kinitiras requires.
func httpResponse(ctx context.Context, hr engine.HTTPReader, obj map[string]any, r *HTTPRef) (any, error) {
	if r == nil || r.URL == "" {
		return nil, fmt.Errorf("from http needs http.url")
	}
	query := url.Values{}
	for k, v := range r.Params {
		x, ok, err := subst(v, obj)
		if err != nil || !ok {
			return emptyObject(ok), err
		}
		query.Set(k, x)
	}
	u, ok, err := subst(r.URL, obj)
	if err != nil || !ok {
		return emptyObject(ok), err
	}
	if len(r.Params) > 0 {
		u += "?" + query.Encode()
	}
	req := engine.HTTPRequest{Method: strings.ToUpper(r.Method), URL: u, Header: map[string]string{}}
	if req.Method == "" {
		req.Method = "GET"
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if len(r.Body.Raw) > 0 && string(r.Body.Raw) != "null" {
		req.Body = r.Body.Raw
	}
	if r.Auth != nil {
		tok, err := bearerToken(ctx, hr, r.Auth)
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		req.Header["Authorization"] = "Bearer " + tok
	}
	resp, err := hr.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("%s %s: the response is not a JSON object: %w", req.Method, u, err)
	}
	header := map[string]any{}
	for k, vs := range resp.Header {
		l := make([]any, len(vs))
		for i, v := range vs {
			l[i] = v
		}
		header[k] = l
	}
	return map[string]any{"body": body, "header": header, "trailer": map[string]any{}}, nil
}

// defaultTokenLife is how long a fetched token is reused when neither the
// token endpoint nor expireDuration says (kinitiras: 5 minutes).
const defaultTokenLife = 5 * time.Minute

// bearerToken is the bearer token of an auth: static, already set, or fetched
// from authUrl (POST with basic auth, answering {token, expireAt}) and
// reused by the HTTP reader's cache for its life.
func bearerToken(ctx context.Context, hr engine.HTTPReader, a *HTTPAuth) (string, error) {
	switch {
	case a.StaticToken != "":
		return a.StaticToken, nil
	case a.Token != "":
		return a.Token, nil
	case a.AuthURL == "":
		return "", errors.New("no token: set staticToken, or authUrl with username and password")
	}
	life := defaultTokenLife
	if a.ExpireDuration.Duration > 0 {
		life = a.ExpireDuration.Duration
	}
	basic := base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password))
	resp, err := hr.Fetch(ctx, engine.HTTPRequest{Method: "POST", URL: a.AuthURL, Header: map[string]string{"Authorization": "Basic " + basic}, MaxAge: life})
	if err != nil {
		return "", err
	}
	if resp.Status != 0 && (resp.Status < 200 || resp.Status > 299) {
		return "", fmt.Errorf("POST %s: status %d", a.AuthURL, resp.Status)
	}
	var t struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(resp.Body, &t); err != nil || t.Token == "" {
		return "", fmt.Errorf("POST %s: no token in the response", a.AuthURL)
	}
	return t.Token, nil
}
