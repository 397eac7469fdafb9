package kyverno

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyvernoreq"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// ctxEntry is a compiled context entry.
type ctxEntry struct {
	name  string
	field string
	// variable
	val      *subst.Document
	hasVal   bool
	jp       *subst.Template // jmesPath, with {{ }} variables
	def      *subst.Document
	hasDef   bool
	isVar    bool
	cmName   *subst.Template
	cmNS     *subst.Template
	isCM     bool
	api      *apiEntry
	global   *globalRefEntry
	image    *imageRegistryEntry
	offline  string // an entry read only in the cluster (imageRegistry, globalReference without a GlobalContextReader)
	jpSource string
}

// apiEntry is a compiled apiCall: a call to the API server through the
// engine's APIReader (as the rule's owner could make it).
type apiEntry struct {
	method  string
	path    string
	pathT   *subst.Template
	data    *subst.Document
	jp      *subst.Template
	def     *subst.Document
	service *serviceEntry
}

// serviceEntry is a compiled apiCall.service: a call to a JSON web
// service through the engine's HTTPReader (the hosts the operator allows).
type serviceEntry struct {
	url      *subst.Template
	headers  []serviceHeader
	caBundle []byte
}

type serviceHeader struct {
	key   string
	value *subst.Template
}

func (c *compiler) contextEntries(field string, es []kyvernov1.ContextEntry) []*ctxEntry {
	var out []*ctxEntry
	for i := range es {
		e := &es[i]
		f := fmt.Sprintf("%s[%d]", field, i)
		ce := &ctxEntry{name: e.Name, field: f}
		if e.Name == "" {
			c.errf(f+".name", "a context entry needs a name")
		}
		n := 0
		if v := e.Variable; v != nil {
			n++
			ce.isVar = true
			if v.Value != nil {
				ce.val, ce.hasVal = c.document(f+".variable.value", v.Value.Raw), true
			}
			if v.JMESPath != "" {
				ce.jp, ce.jpSource = c.template(f+".variable.jmesPath", v.JMESPath), v.JMESPath
			}
			if v.Default != nil {
				ce.def, ce.hasDef = c.document(f+".variable.default", v.Default.Raw), true
			}
		}
		if cm := e.ConfigMap; cm != nil {
			n++
			ce.isCM = true
			ce.cmName = c.template(f+".configMap.name", cm.Name)
			ce.cmNS = c.template(f+".configMap.namespace", cm.Namespace)
		}
		if a := e.APICall; a != nil {
			n++
			ae := &apiEntry{method: a.Method, path: a.URLPath}
			if ae.method == "" {
				ae.method = "GET"
			}
			if ae.method != "GET" && ae.method != "POST" {
				c.errf(f+".apiCall.method", "must be GET or POST, not %q", a.Method)
			}
			switch {
			case a.URLPath == "" && a.Service == nil:
				c.errf(f+".apiCall.urlPath", "an apiCall needs a urlPath or a service")
			case a.URLPath != "" && a.Service != nil:
				c.errf(f+".apiCall.service", "an apiCall has a urlPath or a service, not both")
			case a.Service != nil:
				ae.service = c.service(f+".apiCall.service", a.Service)
			}
			if subst.HasReference(a.URLPath) || strings.Contains(a.URLPath, "{{") {
				ae.pathT = c.template(f+".apiCall.urlPath", a.URLPath)
			}
			if len(a.Data) > 0 {
				body := map[string]any{}
				for _, d := range a.Data {
					var v any
					if d.Value != nil {
						v, _ = value.Decode(d.Value.Raw)
					}
					body[d.Key] = v
				}
				raw, _ := value.Encode(body)
				ae.data = c.document(f+".apiCall.data", raw)
			}
			if a.JMESPath != "" {
				ae.jp = c.template(f+".apiCall.jmesPath", a.JMESPath)
			}
			if a.Default != nil {
				ae.def = c.document(f+".apiCall.default", a.Default.Raw)
			}
			ce.api = ae
		}
		if e.ImageRegistry != nil {
			n++
			ce.offline = "imageRegistry"
			ce.image = c.imageRegistry(f+".imageRegistry", e.ImageRegistry.Raw)
		}
		if e.GlobalReference != nil {
			n++
			ce.offline = "globalReference"
			ce.global = c.globalRef(f+".globalReference", e.GlobalReference.Raw)
		}
		if n != 1 {
			c.errf(f, "a context entry needs exactly one of variable, configMap, apiCall, imageRegistry or globalReference")
		}
		out = append(out, ce)
	}
	return out
}

func (c *compiler) service(field string, sc *kyvernov1.ServiceCall) *serviceEntry {
	se := &serviceEntry{url: c.template(field+".url", sc.URL)}
	if sc.URL == "" {
		c.errf(field+".url", "a service call needs a url")
	}
	for i, h := range sc.Headers {
		if h.Key == "" {
			c.errf(fmt.Sprintf("%s.headers[%d].key", field, i), "a header needs a key")
		}
		se.headers = append(se.headers, serviceHeader{h.Key, c.template(fmt.Sprintf("%s.headers[%d].value", field, i), h.Value)})
	}
	if sc.CABundle != "" {
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(sc.CABundle)) {
			c.errf(field+".caBundle", "holds no PEM certificate")
		}
		se.caBundle = []byte(sc.CABundle)
	}
	return se
}

func (c *compiler) document(field string, raw []byte) *subst.Document {
	v, err := value.Decode(raw)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	d, err := subst.CompileDocument(v)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	c.p.progs.add(c, field, d.Expressions())
	return d
}

// scope is Kyverno's JSON context for one rule (or one foreach element):
// the document JMESPath programs and {{ }} variables read, in the
// library's form.
type scope struct {
	ctx    context.Context
	doc    map[string]any
	progs  *programs
	delete bool   // DELETE: request.object reads request.oldObject
	obj    any    // the object patterns validate
	owner  string // a Policy's namespace ("" for a ClusterPolicy): its reads stay there
}

var _ subst.Resolver = (*scope)(nil)

// Resolve evaluates a {{ }} variable's expression: a plain field chain
// that reaches a missing key is undefined, as Kyverno's JMESPath.
func (s *scope) Resolve(_ context.Context, src string) (any, error) {
	if s.delete {
		src = strings.ReplaceAll(src, "request.object", "request.oldObject")
	}
	e, err := s.progs.compile(src)
	if err != nil {
		return nil, err
	}
	v, err := s.search(e)
	if err != nil {
		return nil, err
	}
	return jmespath.Result(v), nil
}

// search evaluates e over the document (library form in and out).
func (s *scope) search(e *jpExpr) (any, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	v, err := e.prog.Search(s.ctx, s.doc)
	if err != nil {
		return nil, err
	}
	if v == nil && e.path != nil {
		if missing := missingKey(s.doc, e.path); missing != "" {
			return nil, fmt.Errorf("%w: {{ %s }}: unknown key %q", subst.ErrUndefined, e.prog.Source(), missing)
		}
	}
	return v, nil
}

// missingKey returns the first key of path a document lacks, or "".
func missingKey(doc map[string]any, path []string) string {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		v, ok := m[k]
		if !ok {
			return k
		}
		cur = v
	}
	return ""
}

// with is a copy of the scope whose document adds name = v (library
// form); a dotted name sets a nested member, copying the maps on its way.
func (s *scope) with(name string, v any) *scope {
	out := *s
	out.doc = setPath(s.doc, strings.Split(name, "."), v)
	return &out
}

func setPath(doc map[string]any, path []string, v any) map[string]any {
	out := maps.Clone(doc)
	if out == nil {
		out = map[string]any{}
	}
	if len(path) == 1 {
		out[path[0]] = v
		return out
	}
	child, _ := out[path[0]].(map[string]any)
	out[path[0]] = setPath(child, path[1:], v)
	return out
}

// load adds a rule's context entries to the scope, in order.
func (s *scope) load(h *engine.Handle, es []*ctxEntry) (*scope, error) {
	for _, e := range es {
		var err error
		if s, err = s.loadOne(h, e); err != nil {
			return s, fmt.Errorf("%s: %w", e.field, err)
		}
	}
	return s, nil
}

func (s *scope) loadOne(h *engine.Handle, e *ctxEntry) (*scope, error) {
	switch {
	case e.isVar:
		v, err := s.variable(e)
		if err != nil {
			return s, err
		}
		lib, err := jmespath.Prepare(v)
		if err != nil {
			return s, err
		}
		return s.with(e.name, lib), nil
	case e.isCM:
		cm, err := s.configMap(h, e)
		if err != nil {
			return s, err
		}
		if cm == nil {
			return s, nil
		}
		lib, err := jmespath.Prepare(cm)
		if err != nil {
			return s, err
		}
		return s.with(e.name, lib), nil
	case e.api != nil:
		v, err := s.apiCall(h, e)
		if err != nil || v == nil {
			return s, err
		}
		lib, err := jmespath.Prepare(v)
		if err != nil {
			return s, err
		}
		return s.with(e.name, lib), nil
	case e.image != nil || e.global != nil:
		var v any
		var read bool
		var err error
		if e.image != nil {
			v, read, err = s.imageData(h, e.image)
		} else {
			v, read, err = s.globalRef(h, e.global)
		}
		if err != nil {
			return s, err
		}
		if read {
			lib, err := jmespath.Prepare(v)
			if err != nil {
				return s, err
			}
			return s.with(e.name, lib), nil
		}
	}
	// An entry read only in the cluster: as kyverno test, a value given
	// under its name (a values file) stands for it; else references fail.
	return s, nil
}

// ErrOutsideNamespace is in the chain of the error of a Policy's apiCall
// that would read outside the Policy's namespace: a namespaced rule never
// sees past its namespace (docs/security.md).
var ErrOutsideNamespace = errors.New("outside the Policy's namespace")

// apiCall makes an apiCall entry's call: to the API server through the
// engine's APIReader, to a service through its HTTPReader; nil, nil
// offline without one (as kyverno test: a value of the same name stands
// for it). A Policy's API calls stay in its namespace and are made as its
// namespace's rule reader could.
func (s *scope) apiCall(h *engine.Handle, e *ctxEntry) (any, error) {
	a := e.api
	var res any
	var err error
	switch api, web := h.API(), h.HTTP(); {
	case a.service != nil && web != nil:
		res, err = s.callService(web, a)
	case a.service == nil && api != nil:
		res, err = s.callAPI(api, a)
	default:
		return nil, nil
	}
	if err == nil {
		res, _, err = s.searchEntry(a.jp, res)
	}
	if (err != nil || res == nil) && a.def != nil {
		return a.def.Substitute(s.ctx, s)
	}
	return res, err
}

// callService calls an apiCall's service as Kyverno does: GET, or POST
// with the data as a JSON body; a status outside 2xx is an error with the
// response's text; the response is JSON.
func (s *scope) callService(web engine.HTTPReader, a *apiEntry) (any, error) {
	u, err := a.service.url.RenderEscaped(s.ctx, s, nil)
	if err != nil {
		return nil, fmt.Errorf("apiCall.service.url: %w", err)
	}
	req := engine.HTTPRequest{Method: a.method, URL: u, CABundle: a.service.caBundle}
	if len(a.service.headers) > 0 {
		req.Header = make(map[string]string, len(a.service.headers))
		for _, hd := range a.service.headers {
			if req.Header[hd.key], err = hd.value.RenderEscaped(s.ctx, s, nil); err != nil {
				return nil, fmt.Errorf("apiCall.service.headers %s: %w", hd.key, err)
			}
		}
	}
	if a.method == "POST" {
		body := any(map[string]any{})
		if a.data != nil {
			if body, err = a.data.Substitute(s.ctx, s); err != nil {
				return nil, fmt.Errorf("apiCall.data: %w", err)
			}
		}
		if req.Body, err = value.Encode(body); err != nil {
			return nil, fmt.Errorf("apiCall.data: %w", err)
		}
		if req.Header == nil {
			req.Header = map[string]string{}
		}
		if _, ok := req.Header["Content-Type"]; !ok {
			req.Header["Content-Type"] = "application/json"
		}
	}
	resp, err := web.Fetch(s.ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", a.method, u, err)
	}
	if resp.Status < 200 || resp.Status > 299 {
		return nil, fmt.Errorf("%s %s: HTTP %d %s: %s", a.method, u, resp.Status, http.StatusText(resp.Status), kyvernoreq.Truncate(string(resp.Body), 200))
	}
	res, err := value.Decode(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: the response is not JSON: %w", a.method, u, err)
	}
	return res, nil
}

func (s *scope) callAPI(api engine.APIReader, a *apiEntry) (any, error) {
	path, err := kyvernoreq.RenderPath(s.ctx, s, a.path, a.pathT)
	if err != nil {
		return nil, fmt.Errorf("apiCall.urlPath: %w", err)
	}
	if s.owner != "" && !kyvernoreq.Confined(path, s.owner) {
		return nil, fmt.Errorf("apiCall.urlPath: %w: %q is not a path under /api/v1/namespaces/%s or /apis/GROUP/VERSION/namespaces/%s",
			ErrOutsideNamespace, kyvernoreq.Truncate(path, 200), s.owner, s.owner)
	}
	call := engine.APICall{Method: a.method, Path: path, Owner: s.owner}
	if a.data != nil {
		body, err := a.data.Substitute(s.ctx, s)
		if err != nil {
			return nil, fmt.Errorf("apiCall.data: %w", err)
		}
		if call.Data, err = value.Encode(body); err != nil {
			return nil, fmt.Errorf("apiCall.data: %w", err)
		}
	}
	body, err := api.Call(s.ctx, call)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", call.Method, call.Path, err)
	}
	res, err := value.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: the response is not JSON: %w", call.Method, call.Path, err)
	}
	return res, nil
}

func (s *scope) variable(e *ctxEntry) (any, error) {
	var jp string
	if e.jp != nil {
		t, err := e.jp.RenderEscaped(s.ctx, s, nil)
		if err != nil {
			return nil, err
		}
		jp = t
	}
	var out any
	var err error
	switch {
	case e.hasVal:
		out, err = e.val.Substitute(s.ctx, s)
		if err == nil && jp != "" {
			var prog *jpExpr
			if prog, err = s.progs.compile(jp); err == nil {
				var lib any
				if lib, err = jmespath.Prepare(out); err == nil {
					var res any
					if res, err = prog.prog.Search(s.ctx, lib); err == nil {
						out = jmespath.Result(res)
					}
				}
			}
		}
	case jp != "":
		var prog *jpExpr
		if prog, err = s.progs.compile(jp); err == nil {
			var res any
			if res, err = s.search(prog); err == nil {
				out = jmespath.Result(res)
			}
		}
	}
	if (err != nil || out == nil) && e.hasDef {
		return e.def.Substitute(s.ctx, s)
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("failed to add context entry for variable %s since it evaluated to nil", e.name)
	}
	return out, nil
}

func (s *scope) configMap(h *engine.Handle, e *ctxEntry) (any, error) {
	name, err := e.cmName.RenderEscaped(s.ctx, s, nil)
	if err != nil {
		return nil, err
	}
	ns := ""
	if e.cmNS != nil {
		if ns, err = e.cmNS.RenderEscaped(s.ctx, s, nil); err != nil {
			return nil, err
		}
	}
	if ns == "" {
		ns = "default"
	}
	objs := h.Objects()
	if objs == nil {
		return nil, nil // offline without context objects: as kyverno test, not loaded
	}
	if s.owner != "" {
		// A Policy reads as its namespace's rule reader could
		// (docs/security.md): never past what its namespace may see.
		if err := h.AuthorizeRead(s.owner, "", "configmaps", ns, name); err != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s: %w", ns, name, err)
		}
	}
	cm, err := objs.Get(s.ctx, engine.ObjectRef{Kind: "ConfigMap", Namespace: ns, Name: name})
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", ns, name, err)
	}
	if cm == nil {
		return nil, fmt.Errorf("ConfigMap %s/%s not found", ns, name)
	}
	return cm, nil
}

// base builds the scope of a policy evaluation: Kyverno's request with the
// object (and old object), the service account, the images, and the
// values given for the policy and resource (a kyverno test suite's).
func (p *Policy) base(h *engine.Handle, st *evalState) (*scope, error) {
	doc, err := st.document(h)
	if err != nil {
		return nil, err
	}
	s := &scope{ctx: h.Context(), doc: doc, progs: &p.progs, delete: h.Request().Operation == rules.Delete, obj: h.Object(), owner: p.ns}
	if vals := p.opts.values; vals != nil {
		for _, kv := range vals.For(p.name, resourceName(h.Object())) {
			lib, err := jmespath.Prepare(kv.Value)
			if err != nil {
				return nil, err
			}
			s = s.with(kv.Name, lib)
		}
	}
	return s, nil
}

func resourceName(obj any) string {
	m, _ := obj.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}
