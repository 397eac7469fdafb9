package kyverno

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyvernoreq"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/value"
)

// celData answers Kyverno's data libraries (resource, image, http,
// globalContext) for one evaluation of a CEL policy, through the engine's
// readers: objects through its APIReader (a namespaced policy's reads in
// its own namespace, made as its namespace's rule reader could), images
// through its ImageReader, requests through its HTTPReader (the hosts the
// operator allows), global context entries through its
// GlobalContextReader. At most maxDataReads per evaluation.
type celData struct {
	h     *engine.Handle
	owner string // a namespaced policy's namespace; "" for a cluster-scoped one
	reads int
}

var _ cel.KyvernoData = (*celData)(nil)

// maxDataReads bounds the reads of one evaluation of a policy (an
// expression over every container of a large object, say).
const maxDataReads = 1000

// ErrTooManyReads is in the chain of the error of a read past
// maxDataReads.
var ErrTooManyReads = errors.New("too many reads")

func (d *celData) count() error {
	d.reads++
	if d.reads > maxDataReads {
		return fmt.Errorf("%w: more than %d reads in one evaluation", ErrTooManyReads, maxDataReads)
	}
	return nil
}

// maxPathPart bounds a part of an API path an expression gives: a name
// or a namespace (a DNS subdomain), a group, a version, a resource.
const maxPathPart = 253

// pathSegment matches what may stand between two slashes of an API path
// (a name, a namespace, a resource): no slash, no query, no escapes, not
// "." or "..".
var pathSegment = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9_.:]*$`)

// resourcePath is the API path of resource (with a subresource after a
// slash: "pods/status") in apiVersion, namespace ("" for cluster-scoped
// or across namespaces) and name ("" for the collection). Every part is
// checked: a name an object carries cannot climb the path.
func resourcePath(apiVersion, resource, namespace, name string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if len(apiVersion) > 2*maxPathPart || err != nil || gv.Version == "" || (gv.Group != "" && !pathSegment.MatchString(gv.Group)) || !pathSegment.MatchString(gv.Version) {
		return "", fmt.Errorf("apiVersion %.100q is not GROUP/VERSION", apiVersion)
	}
	res, sub, _ := strings.Cut(resource, "/")
	if len(resource) > 2*maxPathPart || !pathSegment.MatchString(res) || (sub != "" && (!pathSegment.MatchString(sub) || name == "")) {
		return "", fmt.Errorf("resource %.100q is not a resource (a plural: configmaps) or RESOURCE/SUBRESOURCE of a named object", resource)
	}
	for _, p := range [...]struct{ what, s string }{{"namespace", namespace}, {"name", name}} {
		if p.s != "" && (len(p.s) > maxPathPart || !pathSegment.MatchString(p.s)) {
			return "", fmt.Errorf("%s %.100q names no object", p.what, p.s)
		}
	}
	var b strings.Builder
	if gv.Group == "" {
		b.WriteString("/api/" + gv.Version)
	} else {
		b.WriteString("/apis/" + gv.Group + "/" + gv.Version)
	}
	if namespace != "" {
		b.WriteString("/namespaces/" + namespace)
	}
	b.WriteString("/" + res)
	if name != "" {
		b.WriteString("/" + name)
	}
	if sub != "" {
		b.WriteString("/" + sub)
	}
	return b.String(), nil
}

// call makes an API call for the policy: a namespaced policy's in its
// own namespace (its reads take no namespace argument).
func (d *celData) call(method, apiVersion, resource, namespace, name, query string, data map[string]any) (map[string]any, error) {
	if err := d.count(); err != nil {
		return nil, err
	}
	if d.owner != "" {
		namespace = d.owner
	}
	path, err := resourcePath(apiVersion, resource, namespace, name)
	if err != nil {
		return nil, err
	}
	if len(path)+len(query) > kyvernoreq.MaxURLPath {
		return nil, fmt.Errorf("%w: %s with a query of %d bytes (at most %d in all)", kyvernoreq.ErrURLPath, path, len(query), kyvernoreq.MaxURLPath)
	}
	api := d.h.API()
	if api == nil {
		return nil, engine.NoReader(fmt.Sprintf("%s %s: no API server to read (offline, give the objects with --context or a test's context file)", method, path))
	}
	c := engine.APICall{Method: method, Path: path + query, Owner: d.owner}
	if data != nil {
		if c.Data, err = value.Encode(data); err != nil {
			return nil, err
		}
	}
	body, err := api.Call(d.h.Context(), c)
	if err != nil {
		return nil, err
	}
	v, err := value.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: the response is not JSON: %w", method, c.Path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s %s: the response is not an object", method, c.Path)
	}
	return m, nil
}

// GetResource reads one object; nil when the API server has none.
func (d *celData) GetResource(apiVersion, resource, namespace, name string) (map[string]any, error) {
	if name == "" {
		return nil, errors.New("an object's name is empty")
	}
	o, err := d.call(http.MethodGet, apiVersion, resource, namespace, name, "", nil)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return o, err
}

// ListResources lists objects, those with labels when not empty.
func (d *celData) ListResources(apiVersion, resource, namespace string, labels map[string]string) (map[string]any, error) {
	query := ""
	if len(labels) > 0 {
		sel := make([]string, 0, len(labels))
		for k, v := range labels {
			sel = append(sel, k+"="+v)
		}
		sort.Strings(sel)
		query = "?labelSelector=" + url.QueryEscape(strings.Join(sel, ","))
	}
	l, err := d.call(http.MethodGet, apiVersion, resource, namespace, "", query, nil)
	if err != nil {
		return nil, err
	}
	// The API server leaves out the items' apiVersion and kind in a typed
	// list; Kyverno's dynamic client gives them, from the list's.
	av, _ := l["apiVersion"].(string)
	kind, _ := l["kind"].(string)
	kind, isList := strings.CutSuffix(kind, "List")
	items, _ := l["items"].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && isList && av != "" {
			if _, ok := m["apiVersion"]; !ok {
				m["apiVersion"] = av
			}
			if _, ok := m["kind"]; !ok {
				m["kind"] = kind
			}
		}
	}
	return l, nil
}

// PostResource creates data (a SubjectAccessReview, say): in the cluster
// only when the operator allows apiCall POSTs.
func (d *celData) PostResource(apiVersion, resource, namespace string, data map[string]any) (map[string]any, error) {
	return d.call(http.MethodPost, apiVersion, resource, namespace, "", "", data)
}

// ImageData reads an image's data.
func (d *celData) ImageData(image string) (map[string]any, error) {
	if err := d.count(); err != nil {
		return nil, err
	}
	return readImage(d.h, image)
}

// maxImageRef bounds an image reference an object gives before any
// reader parses it, caches it or names it in an error (a registry host
// and a repository path fit many times over).
const maxImageRef = 4096

// readImage reads an image's data through the engine's ImageReader (an
// error wrapping engine.ErrNoReader without one).
func readImage(h *engine.Handle, image string) (map[string]any, error) {
	if len(image) > maxImageRef {
		return nil, fmt.Errorf("an image reference of %d bytes (at most %d)", len(image), maxImageRef)
	}
	r := h.Images()
	if r == nil {
		return nil, engine.NoReader(fmt.Sprintf("image %s: no image reader (offline, give the image's data in a test's context file)", image))
	}
	return r.ImageData(h.Context(), image)
}

// maxHTTPBody and maxHTTPHeaders bound a request body and the headers the
// http library sends.
const (
	maxHTTPBody    = 1 << 20
	maxHTTPHeaders = 64 << 10
)

// HTTP makes a request as Kyverno's http library does: a JSON body (a
// POST's data), headers; the answer is the JSON response, an object with
// statusCode added, else {body, statusCode} (body null when not JSON).
func (d *celData) HTTP(method, u string, body any, headers map[string]string, caBundle string) (any, error) {
	if err := d.count(); err != nil {
		return nil, err
	}
	web := d.h.HTTP()
	if web == nil {
		return nil, engine.NoReader("no HTTP client (offline, record the response in a --context file)")
	}
	if len(u) > kyvernoreq.MaxURLPath {
		return nil, fmt.Errorf("a URL of %d bytes (at most %d)", len(u), kyvernoreq.MaxURLPath)
	}
	headerBytes := 0
	for k, v := range headers {
		headerBytes += len(k) + len(v)
	}
	if headerBytes > maxHTTPHeaders {
		return nil, fmt.Errorf("headers of %d bytes (at most %d)", headerBytes, maxHTTPHeaders)
	}
	req := engine.HTTPRequest{Method: method, URL: u, Header: headers, CABundle: []byte(caBundle)}
	if method == http.MethodPost {
		b, err := value.Encode(body)
		if err != nil {
			return nil, err
		}
		if len(b) > maxHTTPBody {
			return nil, fmt.Errorf("a request body of %d bytes (at most %d)", len(b), maxHTTPBody)
		}
		req.Body = b
		if req.Header == nil {
			req.Header = map[string]string{}
		}
		if _, ok := req.Header["Content-Type"]; !ok {
			req.Header["Content-Type"] = "application/json"
		}
	}
	resp, err := web.Fetch(d.h.Context(), req)
	if err != nil {
		return nil, err
	}
	status := json.Number(strconv.Itoa(resp.Status))
	v, err := value.Decode(resp.Body)
	if err != nil {
		v = nil
	}
	if m, ok := v.(map[string]any); ok {
		out := make(map[string]any, len(m)+1)
		for k, x := range m {
			out[k] = x
		}
		out["statusCode"] = status
		return out, nil
	}
	return map[string]any{"body": v, "statusCode": status}, nil
}

// GlobalContext reads a global context entry.
func (d *celData) GlobalContext(name, projection string) (any, error) {
	if err := d.count(); err != nil {
		return nil, err
	}
	g := d.h.Globals()
	if g == nil {
		return nil, engine.NoReader("no global context entries (offline, give them in a test's globalContextEntries, or GlobalContextEntry documents with --context)")
	}
	if d.owner != "" {
		return nil, fmt.Errorf("%w: a namespaced policy (%s) does not read global context entries: they hold data of the whole cluster", ErrOutsideNamespace, d.owner)
	}
	v, err := readGlobal(d.h.Context(), g, name, projection)
	if errors.Is(err, engine.ErrNoGlobalContextEntry) {
		return nil, nil // as Kyverno: an entry not found is null
	}
	return v, err
}

// ResourceResolver is a KindReader that knows a kind's resource (in the
// cluster its REST mapping; offline the context objects', else a
// built-in kind's). Without one, a built-in kind's resource is
// Kubernetes'.
type ResourceResolver interface {
	ResourceFor(apiVersion, kind string) (string, error)
}

// errNoResource: a kind whose resource is not known.
var errNoResource = errors.New("no resource is known for the kind")

// ResourceFor is resource.ToGVR's resource of kind in apiVersion (a
// mapping, not a read of objects; counted as one all the same).
func (d *celData) ResourceFor(apiVersion, kind string) (string, error) {
	if err := d.count(); err != nil {
		return "", err
	}
	return resourceOf(d.h, apiVersion, kind)
}

// resourceOf is the resource of kind in apiVersion, both checked: the
// engine's ResourceResolver's, else a built-in kind's.
func resourceOf(h *engine.Handle, apiVersion, kind string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if len(apiVersion) > 2*maxPathPart || err != nil || gv.Version == "" {
		return "", fmt.Errorf("apiVersion %.100q is not GROUP/VERSION", apiVersion)
	}
	if len(kind) > maxPathPart || !pathSegment.MatchString(kind) {
		return "", fmt.Errorf("%.100q is not a kind", kind)
	}
	if rr, ok := h.Kinds().(ResourceResolver); ok {
		return rr.ResourceFor(apiVersion, kind)
	}
	return builtinResource(gv.WithKind(kind))
}

// builtinResource is a built-in kind's resource, as Kubernetes names it.
func builtinResource(gvk schema.GroupVersionKind) (string, error) {
	if !clientgoscheme.Scheme.Recognizes(gvk) {
		return "", fmt.Errorf("%w: %s (not a built-in kind: in the cluster its CRD names it; offline, give an object of it with the context)", errNoResource, gvk)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return gvr.Resource, nil
}
