package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/images"
	"github.com/modwright/modwright/internal/kinds/kyvernoreq"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Request time: Kyverno's context as a run reads it (kyverno.go: load
// time).

// The JMESPath document of a run: Kyverno's context, in the library's
// form, built member by member as expressions ask.

// jpDoc returns the run's document with the members e reads.
func (ev *run) jpDoc(e *jpExpr) (map[string]any, error) {
	if ev.doc == nil {
		ev.doc = sharedOf(ev.h).docMap()
	}
	if e.all {
		for _, n := range builtinRoots {
			if err := ev.member(n); err != nil {
				return nil, err
			}
		}
		for i := range ev.r.vars {
			if err := ev.member(ev.r.vars[i].name); err != nil {
				return nil, err
			}
		}
		return ev.doc, nil
	}
	for _, n := range e.roots {
		if err := ev.member(n); err != nil {
			return nil, err
		}
	}
	return ev.doc, nil
}

// member puts the member name in the run's document, once.
func (ev *run) member(name string) error {
	if _, ok := ev.doc[name]; ok {
		return nil
	}
	s := sharedOf(ev.h)
	switch name {
	case rootRequest:
		req, err := s.kyvernoRequest(ev.h, ev.r.usesRoles)
		if err != nil {
			return err
		}
		ev.doc[name] = req
		return nil
	case rootSAName, rootSANamespace:
		ns, n := serviceAccount(ev.h.Request().UserInfo.Username)
		ev.doc[rootSANamespace], ev.doc[rootSAName] = ns, n
		return nil
	case rootImages:
		imgs, err := s.imageInfos(ev.h)
		if err != nil {
			return fmt.Errorf("images: %w", err)
		}
		ev.doc[name] = imgs
		return nil
	case varSelf, varOldSelf:
		return nil // set by a scoped validation
	}
	i, ok := ev.r.varIndex[name]
	if !ok {
		return nil // undefined: the expression reads null
	}
	v, err := ev.libValue(i)
	if err != nil {
		return err
	}
	ev.doc[name] = v
	return nil
}

// libValue is variable or context entry i in the library's form.
func (ev *run) libValue(i int) (any, error) {
	if ev.libOK[i] {
		return ev.libs[i], nil
	}
	v, err := ev.variable(i)
	if err != nil {
		return nil, err
	}
	if !ev.libOK[i] { // a CEL value
		lv, err := jmespath.Prepare(cel.JSON(v))
		if err != nil {
			return nil, fmt.Errorf("variable %q: %w", ev.r.vars[i].name, err)
		}
		ev.libs[i], ev.libOK[i] = lv, true
	}
	return ev.libs[i], nil
}

// search evaluates e over the run's document; the result is in the
// library's form.
func (ev *run) search(e *jpExpr) (any, error) {
	if err := ev.ctx.Err(); err != nil {
		return nil, err
	}
	doc, err := ev.jpDoc(e)
	if err != nil {
		return nil, err
	}
	return e.prog.Search(ev.ctx, doc)
}

// Resolve evaluates a {{ }} variable's expression (subst.Resolver): a
// plain field chain that reaches a missing key is undefined, as in
// Kyverno.
func (ev *run) Resolve(_ context.Context, src string) (any, error) {
	e, err := ev.r.progs.get(src)
	if err != nil {
		return nil, err
	}
	v, err := ev.search(e)
	if err != nil {
		return nil, err
	}
	if v == nil && e.path != nil {
		if missing := missingKey(ev.doc, e.path); missing != "" {
			return nil, fmt.Errorf("%w: {{ %s }}: unknown key %q", subst.ErrUndefined, src, missing)
		}
	}
	res := jmespath.Result(v)
	if ev.tr != nil {
		ev.tr.Substitutions = append(ev.tr.Substitutions, Step{Field: ev.at, Lang: "jmespath", Source: "{{ " + src + " }}", Value: res})
	}
	return res, nil
}

var _ subst.Resolver = (*run)(nil)

// missingKey returns the first key of path an object lacks, or "".
func missingKey(doc map[string]any, path []string) string {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		if cur, ok = m[k]; !ok {
			return k
		}
	}
	return ""
}

// render substitutes a template in field.
func (ev *run) render(field string, t *subst.Template) (any, error) {
	prev := ev.at
	ev.at = field
	defer func() { ev.at = prev }()
	v, err := t.Render(ev.ctx, ev, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}

// renderText substitutes a template that must give text.
func (ev *run) renderText(field string, t *subst.Template) (string, error) {
	v, err := ev.render(field, t)
	if err != nil {
		return "", err
	}
	s, err := subst.Text(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return s, nil
}

func (ev *run) substitute(field string, d *subst.Document) (any, error) {
	prev := ev.at
	ev.at = field
	defer func() { ev.at = prev }()
	v, err := d.Substitute(ev.ctx, ev)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}

// evalJPBool evaluates a JMESPath slot that must give a boolean.
func (ev *run) evalJPBool(e *jpExpr) (bool, error) {
	v, err := ev.search(e)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("the expression gave %s, want a boolean", value.TypeName(jmespath.Result(v)))
	}
	return b, nil
}

// serviceAccount splits a service account's user name
// (system:serviceaccount:NAMESPACE:NAME); others give "", "".
func serviceAccount(user string) (ns, name string) {
	rest, ok := strings.CutPrefix(user, saPrefix)
	if !ok {
		return "", ""
	}
	ns, name, ok = strings.Cut(rest, ":")
	if !ok {
		return "", ""
	}
	return ns, name
}

// docMap returns the shared, cleared map a run builds its document in.
func (s *shared) docMap() map[string]any {
	if s.doc == nil {
		s.doc = make(map[string]any, 8)
	} else {
		clear(s.doc)
	}
	return s.doc
}

// kyvernoRequest is Kyverno's request: the admission request's
// attributes with object and oldObject (on DELETE, object is the old
// object, as Kyverno), and the user's roles when a policy reads them.
// It is built once per object (a mutation makes a new one).
func (s *shared) kyvernoRequest(h *engine.Handle, roles bool) (map[string]any, error) {
	obj := h.Object()
	if s.kreq != nil && patch.Same(s.kreqFor, obj) && (!roles || s.kreqRoles) {
		return s.kreq, nil
	}
	libObj, err := jmespath.Prepare(obj)
	if err != nil {
		return nil, err
	}
	req := maps.Clone(s.request(h))
	req["object"] = libObj
	switch h.Request().Operation {
	case rules.Delete:
		req["oldObject"] = libObj
	case rules.Update:
		old, err := jmespath.Prepare(s.oldObject(h))
		if err != nil {
			return nil, err
		}
		req["oldObject"] = old
	default:
		req["oldObject"] = nil
	}
	if roles {
		rs, crs, err := s.roles(h)
		if err != nil {
			return nil, err
		}
		req["roles"], req["clusterRoles"] = rs, crs
	}
	s.kreq, s.kreqFor, s.kreqRoles = req, obj, roles
	return req, nil
}

// roles reads the user's roles once per request.
func (s *shared) roles(h *engine.Handle) (roles, clusterRoles []any, err error) {
	if s.rolesDone {
		return s.rolesV, s.clusterRolesV, s.rolesErr
	}
	s.rolesDone = true
	s.rolesV, s.clusterRolesV = []any{}, []any{}
	rr := h.Roles()
	if rr == nil {
		return s.rolesV, s.clusterRolesV, nil
	}
	q := h.Request()
	rs, crs, err := rr.Roles(h.Context(), q.UserInfo, q.Namespace)
	if err != nil {
		s.rolesErr = fmt.Errorf("request.roles: %w", err)
		return nil, nil, s.rolesErr
	}
	for _, r := range rs {
		s.rolesV = append(s.rolesV, r)
	}
	for _, r := range crs {
		s.clusterRolesV = append(s.clusterRolesV, r)
	}
	return s.rolesV, s.clusterRolesV, nil
}

// imageInfos is Kyverno's images variable of the object, once per object.
func (s *shared) imageInfos(h *engine.Handle) (any, error) {
	obj := h.Object()
	if s.imgsDone && patch.Same(s.imgsFor, obj) {
		return s.imgs, s.imgsErr
	}
	m, _ := obj.(map[string]any)
	v, err := images.Extract(h.Kind(), m)
	if err == nil && v != nil {
		var lv any
		lv, err = jmespath.Prepare(v)
		s.imgs = lv
	} else {
		s.imgs = nil
	}
	s.imgsErr, s.imgsFor, s.imgsDone = err, obj, true
	return s.imgs, s.imgsErr
}

// evalEntry computes context entry i (a JSON tree, and the library's
// form when it is one already).
func (ev *run) evalEntry(i int) (val any, lib any, libOK bool, err error) {
	v := &ev.r.vars[i]
	ce := v.entry
	switch {
	case ce.configMap != nil:
		val, err = ev.configMap(v.field, ce.configMap)
	case ce.apiCall != nil:
		return ev.apiCall(v.field, ce.apiCall)
	case ce.graph != nil:
		val, err = ev.graphEdges(v.field, ce.graph)
	default:
		return ev.contextVariable(v.field, ce.variable)
	}
	return val, nil, false, err
}

func (ev *run) textOr(field, s string, t *subst.Template) (string, error) {
	if t == nil {
		return s, nil
	}
	return ev.renderText(field, t)
}

func (ev *run) configMap(field string, cm *cmEntry) (any, error) {
	name, err := ev.textOr(field+".configMap.name", cm.name, cm.nameT)
	if err != nil {
		return nil, err
	}
	ns, err := ev.textOr(field+".configMap.namespace", cm.namespace, cm.nsT)
	if err != nil {
		return nil, err
	}
	if ns == "" {
		ns = ev.r.Namespace
		if ev.r.cluster {
			ns = ev.h.Namespace()
		}
	}
	if !ev.r.cluster && ns != ev.r.Namespace {
		return nil, fmt.Errorf("%s.configMap.namespace: %w: ConfigMap %s/%s, the ModwrightPolicy is in %q", field, ErrOutsideNamespace, ns, name, ev.r.Namespace)
	}
	objs := ev.h.Objects()
	if objs == nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", ns, name, engine.NoReader("no object reader (offline, pass the ConfigMap with --context)"))
	}
	if !ev.r.cluster {
		if err := ev.h.AuthorizeRead(ev.r.Namespace, "", "configmaps", ns, name); err != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s: %w", ns, name, err)
		}
	}
	obj, err := objs.Get(ev.ctx, engine.ObjectRef{Kind: "ConfigMap", Namespace: ns, Name: name})
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", ns, name, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("ConfigMap %s/%s not found", ns, name)
	}
	return obj, nil
}

// graphEdges are the object's edges the entry selects (a list, incoming
// first).
func (ev *run) graphEdges(field string, g *graphEntry) (any, error) {
	gr := ev.h.Graph()
	if gr == nil {
		return nil, fmt.Errorf("%s.graph: no relationship graph (offline, pass the objects with --context)", field)
	}
	obj, _ := ev.h.Object().(map[string]any)
	q := ev.h.Request()
	name := q.Name
	if name == "" {
		md, _ := obj["metadata"].(map[string]any)
		name, _ = md["name"].(string)
	}
	kind := q.Kind.Kind
	if kind == "" {
		kind, _ = obj["kind"].(string)
	}
	in, out, err := gr.Edges(ev.ctx, engine.ObjectRef{Group: q.Kind.Group, Kind: kind, Namespace: q.Namespace, Name: name}, obj)
	if err != nil && in == nil && out == nil {
		return nil, fmt.Errorf("%s.graph: %w", field, err)
	}
	edges := []any{}
	pick := func(es []any) {
		for _, e := range es {
			em, _ := e.(map[string]any)
			t, _ := em["type"].(string)
			if (len(g.types) == 0 || slices.Contains(g.types, t)) && (ev.r.cluster || engine.EdgeWithin(e, ev.r.Namespace)) {
				edges = append(edges, e)
			}
		}
	}
	if g.in {
		pick(in)
	}
	if g.out {
		pick(out)
	}
	return edges, nil
}

func (ev *run) apiCall(field string, a *apiEntry) (any, any, bool, error) {
	res, lib, err := ev.callAPI(field, a)
	if err == nil && lib == nil && res != nil {
		lib, err = jmespath.Prepare(res)
	}
	if a.jmesPath != nil || a.jmesPathT != nil {
		if err == nil {
			lib, err = ev.transform(a.jmesPathField, a.jmesPath, a.jmesPathT, lib)
		}
		res = nil
	}
	if (err != nil || lib == nil) && a.hasDef {
		if err != nil && ev.tr != nil {
			ev.tr.Context = append(ev.tr.Context, Step{Field: field, Source: "default after error", Err: err})
		}
		return a.def, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	if res == nil {
		res = jmespath.Result(lib)
	}
	return res, lib, true, nil
}

// ErrOutsideNamespace is in the chain of the error of a namespaced
// Policy's context entry that would read outside the Policy's namespace:
// a namespaced rule never sees past its namespace (docs/security.md).
var ErrOutsideNamespace = errors.New("outside the ModwrightPolicy's namespace")

// ErrURLPath is in the chain of the error of an apiCall whose urlPath a
// variable's value would change the shape of (kyvernoreq.ErrURLPath).
var ErrURLPath = kyvernoreq.ErrURLPath

// renderPath renders an apiCall's urlPath (kyvernoreq.RenderPath).
func (ev *run) renderPath(field, s string, t *subst.Template) (string, error) {
	prev := ev.at
	ev.at = field
	defer func() { ev.at = prev }()
	p, err := kyvernoreq.RenderPath(ev.ctx, ev, s, t)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return p, nil
}

// callAPI renders and makes the call; the response is a JSON tree.
func (ev *run) callAPI(field string, a *apiEntry) (any, any, error) {
	path, err := ev.renderPath(field+".apiCall.urlPath", a.path, a.pathT)
	if err != nil {
		return nil, nil, err
	}
	if !ev.r.cluster && !kyvernoreq.Confined(path, ev.r.Namespace) {
		return nil, nil, fmt.Errorf("%s.apiCall.urlPath: %w: %q is not a path under /api/v1/namespaces/%s or /apis/GROUP/VERSION/namespaces/%s", field, ErrOutsideNamespace, kyvernoreq.Truncate(path, 200), ev.r.Namespace, ev.r.Namespace)
	}
	call := engine.APICall{Method: a.method, Path: path}
	if !ev.r.cluster {
		call.Owner = ev.r.Namespace
	}
	if a.data != nil {
		body, err := ev.substitute(field+".apiCall.data", a.data)
		if err != nil {
			return nil, nil, err
		}
		if call.Data, err = value.Encode(body); err != nil {
			return nil, nil, fmt.Errorf("%s.apiCall.data: %w", field, err)
		}
	}
	api := ev.h.API()
	if api == nil {
		return nil, nil, fmt.Errorf("%s %s: %w", call.Method, call.Path, ErrNoAPI)
	}
	body, err := api.Call(ev.ctx, call)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", call.Method, call.Path, err)
	}
	res, err := value.Decode(body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: the response is not JSON: %w", call.Method, call.Path, err)
	}
	return res, nil, nil
}

// transform applies a context entry's jmesPath to lib (the library's
// form); a jmesPath holding variables is rendered, then compiled (once
// per text).
func (ev *run) transform(field string, e *jpExpr, t *subst.Template, lib any) (any, error) {
	if t != nil {
		src, err := ev.renderText(field, t)
		if err != nil {
			return nil, err
		}
		if e, err = ev.r.progs.get(src); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
	}
	v, err := e.prog.Search(ev.ctx, lib)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}

func (ev *run) contextVariable(field string, cv *varEntry) (any, any, bool, error) {
	var (
		lib any
		err error
	)
	switch {
	case cv.value != nil:
		var v any
		if v, err = ev.substitute(field+".variable.value", cv.value); err == nil {
			lib, err = jmespath.Prepare(v)
		}
		if err == nil && (cv.jmesPath != nil || cv.jmesPathT != nil) {
			lib, err = ev.transform(field+".variable.jmesPath", cv.jmesPath, cv.jmesPathT, lib)
		}
	case cv.jmesPathT != nil:
		var e *jpExpr
		var src string
		if src, err = ev.renderText(field+".variable.jmesPath", cv.jmesPathT); err == nil {
			if e, err = ev.r.progs.get(src); err == nil {
				lib, err = ev.search(e)
			}
		}
	default:
		lib, err = ev.search(cv.jmesPath)
	}
	if err != nil {
		return nil, nil, false, err
	}
	if lib == nil && cv.hasDef {
		return cv.def, nil, false, nil
	}
	return jmespath.Result(lib), lib, true, nil
}
