package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
	"k8s.io/apimachinery/pkg/api/meta"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The offline stand-ins for what the operator reads from the cluster,
// given as context documents (--context, --user-info, a suite's context):
//
//	apiVersion: cli.modwright.io/v1alpha1
//	kind: APICallResponse        # one recorded apiCall answer
//	urlPath: /api/v1/namespaces/team-a/pods
//	method: GET                  # default GET
//	data: {...}                  # a POST body, compared as JSON
//	response: {...}              # any JSON
//
//	apiVersion: cli.modwright.io/v1alpha1
//	kind: HTTPResponse           # one recorded HTTP answer (kinitiras' http references)
//	url: http://example.com/api?val=x   # with its query, as requested
//	method: GET                  # default GET
//	data: {...}                  # a request body, compared as JSON
//	status: 200                  # default 200
//	response: {...}              # the JSON body
//
//	apiVersion: cli.modwright.io/v1alpha1   # or Kyverno's cli.kyverno.io/v1alpha1
//	kind: UserInfo               # the requester (one per context)
//	userInfo: {username, uid, groups, extra}
//	roles: [namespace:name, ...]
//	clusterRoles: [name, ...]
const (
	cliAPIVersion        = "cli.modwright.io/v1alpha1"
	kyvernoCLIAPIVersion = "cli.kyverno.io/v1alpha1"
	kindAPICallResponse  = "APICallResponse"
	kindUserInfo         = "UserInfo"
	kindHTTPResponse     = "HTTPResponse"
)

// offlineUser is a UserInfo context document.
type offlineUser struct {
	user                engine.UserInfo
	roles, clusterRoles []string
	origin              string
}

// isContextData reports whether d is one of the documents above.
func isContextData(d *source.Document) bool {
	av := d.APIVersion()
	return (av == cliAPIVersion || av == kyvernoCLIAPIVersion) && (d.Kind() == kindAPICallResponse || d.Kind() == kindUserInfo || d.Kind() == kindContext || d.Kind() == kindHTTPResponse && av == cliAPIVersion)
}

// apiKey identifies a recorded call: method, path and the body's JSON.
func apiKey(method, path string, body any) (string, error) {
	if method == "" {
		method = "GET"
	}
	b, err := json.Marshal(canonical(body))
	if err != nil {
		return "", err
	}
	return method + " " + path + " " + string(b), nil
}

// canonical makes equal JSON values encode alike: numbers as float64
// (1 and 1.0 are one number); encoding/json sorts keys.
func canonical(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return string(x)
		}
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canonical(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	}
	return v
}

// addContextData records an APICallResponse, HTTPResponse, UserInfo or
// Context document.
func (r *staticResolver) addContextData(d *source.Document) error {
	c := contextDoc{d}
	switch d.Kind() {
	case kindAPICallResponse:
		return r.addAPICall(c)
	case kindHTTPResponse:
		return r.addHTTP(c)
	case kindUserInfo:
		return r.addUser(c)
	case kindContext:
		return r.addContextFile(c)
	}
	return nil
}

// contextDoc reads the members of a context document.
type contextDoc struct{ *source.Document }

// str is the string member k ("" when absent or null).
func (c contextDoc) str(k string) (string, error) {
	v, ok := c.Object[k]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: %s %s: %s must be a string", c.Origin, c.APIVersion(), c.Kind(), k)
	}
	return s, nil
}

// strs is m's member k, a list of strings (nil when absent or null).
func (c contextDoc) strs(m map[string]any, k string) ([]string, error) {
	out, err := stringsOf(m, k)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.Origin, c.Kind(), err)
	}
	return out, nil
}

// stringsOf is m's member k, a list of strings (nil when absent or null).
func stringsOf(m map[string]any, k string) ([]string, error) {
	v, ok := m[k]
	if !ok || v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list of strings", k)
	}
	out := make([]string, len(l))
	for i, e := range l {
		if out[i], ok = e.(string); !ok {
			return nil, fmt.Errorf("%s[%d] must be a string", k, i)
		}
	}
	return out, nil
}

// userInfoOf reads an authentication.k8s.io/v1 UserInfo tree (username,
// uid, groups, extra).
func userInfoOf(ui map[string]any) (engine.UserInfo, error) {
	var u engine.UserInfo
	u.Username, _ = ui["username"].(string)
	u.UID, _ = ui["uid"].(string)
	var err error
	if u.Groups, err = stringsOf(ui, "groups"); err != nil {
		return u, err
	}
	if extra, ok := ui["extra"].(map[string]any); ok {
		u.Extra = map[string][]string{}
		for k := range extra {
			if u.Extra[k], err = stringsOf(extra, k); err != nil {
				return u, fmt.Errorf("extra: %w", err)
			}
		}
	}
	return u, nil
}

// addAPICall records a recorded apiCall response.
func (r *staticResolver) addAPICall(c contextDoc) error {
	o := c.Object
	path, err := c.str("urlPath")
	if err != nil {
		return err
	}
	if path == "" {
		return fmt.Errorf("%s: APICallResponse: urlPath is required", c.Origin)
	}
	method, err := c.str("method")
	if err != nil {
		return err
	}
	if method != "" && method != "GET" && method != "POST" {
		return fmt.Errorf("%s: APICallResponse: method %q: use GET or POST", c.Origin, method)
	}
	resp, ok := o["response"]
	if !ok {
		return fmt.Errorf("%s: APICallResponse %s: response is required (null is a response)", c.Origin, path)
	}
	key, err := apiKey(method, path, o["data"])
	if err != nil {
		return fmt.Errorf("%s: APICallResponse %s: data: %w", c.Origin, path, err)
	}
	body, err := value.Encode(resp)
	if err != nil {
		return fmt.Errorf("%s: APICallResponse %s: response: %w", c.Origin, path, err)
	}
	if r.api == nil {
		r.api = map[string][]byte{}
	}
	r.api[key] = body
	return nil
}

// addHTTP records a recorded HTTP response.
func (r *staticResolver) addHTTP(c contextDoc) error {
	o := c.Object
	u, err := c.str("url")
	if err != nil {
		return err
	}
	if u == "" {
		return fmt.Errorf("%s: HTTPResponse: url is required", c.Origin)
	}
	method, err := c.str("method")
	if err != nil {
		return err
	}
	resp, ok := o["response"]
	if !ok {
		return fmt.Errorf("%s: HTTPResponse %s: response is required", c.Origin, u)
	}
	status := 200
	if st, ok := o["status"]; ok {
		n, err := strconv.Atoi(fmt.Sprint(st))
		if err != nil {
			return fmt.Errorf("%s: HTTPResponse %s: status %v is not a number", c.Origin, u, st)
		}
		status = n
	}
	key, err := apiKey(strings.ToUpper(method), u, o["data"])
	if err != nil {
		return fmt.Errorf("%s: HTTPResponse %s: data: %w", c.Origin, u, err)
	}
	body, err := value.Encode(resp)
	if err != nil {
		return fmt.Errorf("%s: HTTPResponse %s: response: %w", c.Origin, u, err)
	}
	if r.http == nil {
		r.http = map[string]*engine.HTTPResponse{}
	}
	r.http[key] = &engine.HTTPResponse{Status: status, Body: body}
	return nil
}

// addUser records the requester.
func (r *staticResolver) addUser(c contextDoc) error {
	o := c.Object
	if r.user != nil {
		return fmt.Errorf("%s: a second UserInfo (the first is in %s): a request has one requester", c.Origin, r.user.origin)
	}
	u := &offlineUser{origin: c.Origin}
	ui, _ := o["userInfo"].(map[string]any)
	if ui == nil {
		return fmt.Errorf("%s: UserInfo: userInfo (username, groups) is required", c.Origin)
	}
	var err error
	if u.user, err = userInfoOf(ui); err != nil {
		return fmt.Errorf("%s: %s: userInfo: %w", c.Origin, c.Kind(), err)
	}
	if u.roles, err = c.strs(o, "roles"); err != nil {
		return err
	}
	if u.clusterRoles, err = c.strs(o, "clusterRoles"); err != nil {
		return err
	}
	r.user = u
	return nil
}

var (
	_ engine.APIReader  = (*staticResolver)(nil)
	_ engine.RoleReader = (*staticResolver)(nil)
	_ engine.KindReader = (*staticResolver)(nil)
	_ engine.HTTPReader = (*staticResolver)(nil)
)

// Fetch answers an HTTP request from the recorded responses.
func (r *staticResolver) Fetch(_ context.Context, req engine.HTTPRequest) (*engine.HTTPResponse, error) {
	var body any
	if len(req.Body) > 0 {
		v, err := value.Decode(req.Body)
		if err != nil {
			return nil, err
		}
		body = v
	}
	key, err := apiKey(req.Method, req.URL, body)
	if err != nil {
		return nil, err
	}
	if resp, ok := r.http[key]; ok {
		return resp, nil
	}
	if resp := r.answerAny(req.Method, req.URL); resp != nil {
		return resp, nil
	}
	recorded := make([]string, 0, len(r.http))
	for k := range r.http {
		recorded = append(recorded, k)
	}
	sort.Strings(recorded)
	hint := "record one in a --context file: apiVersion: " + cliAPIVersion + ", kind: " + kindHTTPResponse + ", url, method, data, status, response"
	if len(recorded) > 0 {
		hint += "; recorded: " + strings.Join(recorded, ", ")
	}
	return nil, fmt.Errorf("%w: %s %s (%s)", engine.ErrNoAPIResponse, req.Method, req.URL, hint)
}

// GetKind returns the context object of that apiVersion's group, kind,
// namespace and name, or nil.
func (r *staticResolver) GetKind(_ context.Context, apiVersion, kind, namespace, name string) (map[string]any, error) {
	if kinds.IsClusterScoped(kind) {
		namespace = ""
	}
	return r.objects[engine.ObjectRef{Group: apiGroup(apiVersion), Kind: kind, Namespace: namespace, Name: name}], nil
}

// Namespaced reports a kind's scope: a built-in kind's as Kubernetes has
// it; another kind is namespaced unless the context holds objects of it
// and none has a namespace.
func (r *staticResolver) Namespaced(apiVersion, kind string) (bool, error) {
	if clientgoscheme.Scheme.Recognizes(schema.FromAPIVersionAndKind(apiVersion, kind)) {
		return !kinds.IsClusterScoped(kind), nil
	}
	seen := false
	for ref := range r.objects {
		if ref.Group == apiGroup(apiVersion) && ref.Kind == kind {
			if ref.Namespace != "" {
				return true, nil
			}
			seen = true
		}
	}
	return !seen, nil
}

// ResourceFor is the resource of a kind: a built-in kind's as Kubernetes
// names it, else, when the context holds objects of the kind, its plural
// (Kubernetes' rule for CRDs that name none); else an error naming what
// to give.
func (r *staticResolver) ResourceFor(apiVersion, kind string) (string, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	known := clientgoscheme.Scheme.Recognizes(gvk)
	for ref := range r.objects {
		known = known || (ref.Group == gvk.Group && ref.Kind == kind)
	}
	if !known {
		return "", fmt.Errorf("no resource known for %s %s (give an object of it with the context)", apiVersion, kind)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return gvr.Resource, nil
}

// KindFor is the kind of a resource: a context object's whose kind gives
// that resource, else a built-in kind's.
func (r *staticResolver) KindFor(group, version, resource string) (string, error) {
	for ref := range r.objects {
		if ref.Group != group {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Group: group, Version: version, Kind: ref.Kind}); plural.Resource == resource {
			return ref.Kind, nil
		}
	}
	gv := schema.GroupVersion{Group: group, Version: version}
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.GroupVersion() != gv || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == resource {
			return gvk.Kind, nil
		}
	}
	return "", fmt.Errorf("no kind known for %s (give an object of it with the context)", schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
}

// ListKind returns the context objects of that kind in namespace (""
// for all) whose labels the selector matches, by name.
func (r *staticResolver) ListKind(_ context.Context, apiVersion, kind, namespace, selector string, limit int) ([]map[string]any, error) {
	sel, err := k8slabels.Parse(selector)
	if err != nil {
		return nil, err
	}
	var refs []engine.ObjectRef
	for ref, o := range r.objects {
		if ref.Group != apiGroup(apiVersion) || ref.Kind != kind || namespace != "" && ref.Namespace != namespace {
			continue
		}
		if sel.Matches(labelsOf(o)) {
			refs = append(refs, ref)
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	if limit > 0 && len(refs) > limit {
		refs = refs[:limit]
	}
	out := make([]map[string]any, len(refs))
	for i, ref := range refs {
		out[i] = r.objects[ref]
	}
	return out, nil
}

// Call answers an apiCall from the recorded responses.
func (r *staticResolver) Call(_ context.Context, c engine.APICall) ([]byte, error) {
	var body any
	if len(c.Data) > 0 {
		v, err := value.Decode(c.Data)
		if err != nil {
			return nil, err
		}
		body = v
	}
	key, err := apiKey(c.Method, c.Path, body)
	if err != nil {
		return nil, err
	}
	if b, ok := r.api[key]; ok {
		return b, nil
	}
	if resp := r.answerAny(c.Method, c.Path); resp != nil {
		if resp.Status < 200 || resp.Status > 299 {
			return nil, fmt.Errorf("%s %s: the recorded response has status %d", c.Method, c.Path, resp.Status)
		}
		return resp.Body, nil
	}
	if b, ok, err := r.answerObjects(c.Method, c.Path); ok {
		return b, err
	}
	recorded := make([]string, 0, len(r.api))
	for k := range r.api {
		recorded = append(recorded, k)
	}
	sort.Strings(recorded)
	hint := "record one in a --context file: apiVersion: " + cliAPIVersion + ", kind: " + kindAPICallResponse + ", urlPath, method, data, response"
	if len(recorded) > 0 {
		hint += "; recorded: " + strings.Join(recorded, ", ")
	}
	return nil, fmt.Errorf("%w: %s %s (%s)", engine.ErrNoAPIResponse, c.Method, c.Path, hint)
}

// addAnyBody records a response to method ("": any) and target (a URL or
// an API path) whatever the request's body, as Kyverno's apiCallResponses.
func (r *staticResolver) addAnyBody(method, target string, resp *engine.HTTPResponse) error {
	key := strings.ToUpper(method) + " " + target
	if r.anyBody == nil {
		r.anyBody = map[string]*engine.HTTPResponse{}
	}
	if _, dup := r.anyBody[key]; dup {
		return fmt.Errorf("a second response for %s %s", method, target)
	}
	r.anyBody[key] = resp
	return nil
}

// answerAny is the response addAnyBody recorded for method and target
// (that method's, else any method's), or nil.
func (r *staticResolver) answerAny(method, target string) *engine.HTTPResponse {
	if method == "" {
		method = "GET"
	}
	if resp, ok := r.anyBody[strings.ToUpper(method)+" "+target]; ok {
		return resp
	}
	return r.anyBody[" "+target]
}

// Roles gives the UserInfo document's roles (none without one).
func (r *staticResolver) Roles(context.Context, engine.UserInfo, string) ([]string, []string, error) {
	if r.user == nil {
		return nil, nil, nil
	}
	return slices.Clone(r.user.roles), slices.Clone(r.user.clusterRoles), nil
}

// userOf is the requester a context names (zero without a UserInfo).
func userOf(objects engine.ObjectReader) engine.UserInfo {
	if r, ok := objects.(*staticResolver); ok && r != nil && r.user != nil {
		return r.user.user
	}
	return engine.UserInfo{}
}

var _ engine.InventoryReader = (*staticResolver)(nil)

// Inventory is every context object (Gatekeeper's data.inventory offline),
// in a fixed order; the set never changes.
func (r *staticResolver) Inventory(context.Context) (uint64, []map[string]any, error) {
	refs := slices.SortedFunc(maps.Keys(r.objects), func(a, b engine.ObjectRef) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out := make([]map[string]any, len(refs))
	for i, ref := range refs {
		out[i] = r.objects[ref]
	}
	return 1, out, nil
}
