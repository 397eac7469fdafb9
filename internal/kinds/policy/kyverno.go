package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/images"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// The names Kyverno's context has beside the variables and context
// entries: what a JMESPath expression or a {{ }} variable reads.
const (
	rootRequest     = "request"
	rootSANamespace = "serviceAccountNamespace"
	rootSAName      = "serviceAccountName"
	rootImages      = "images"
	saPrefix        = "system:serviceaccount:"
)

// builtinRoots are the members of the JMESPath document that are not
// variables nor context entries.
var builtinRoots = []string{rootRequest, rootSAName, rootSANamespace, rootImages}

// ErrNoAPI is in the chain of the error of an apiCall context entry when
// the engine has no API reader (offline without recorded responses).
var ErrNoAPI = engine.NoReader("no API reader: offline, record the response in a --context file or the test suite")

// jpExpr is a compiled JMESPath expression with what it reads of the
// document.
type jpExpr struct {
	prog  *jmespath.Program
	roots []string
	all   bool
	path  []string // a plain field chain, for undefined keys; else nil
}

func newJPExpr(p *jmespath.Program) *jpExpr {
	roots, all := p.Roots()
	return &jpExpr{prog: p, roots: roots, all: all, path: p.FieldPath()}
}

// compileJP compiles JMESPath source (no {{ }}: a caller renders those).
func compileJP(src string) (*jpExpr, []lang.Diagnostic) {
	p, ds := jmespath.Language{}.CompileExpr(&lang.Env{Name: "jmespath"}, src)
	if len(ds) > 0 {
		return nil, ds
	}
	return newJPExpr(p), nil
}

// expr is a compiled expression slot: one language member.
type expr struct {
	field string // spec.validations[0].cel, ...jmespath
	cel   *cel.Program
	jp    *jpExpr
	rego  *regoProg
}

func (e *expr) ok() bool { return e.cel != nil || e.jp != nil || e.rego != nil }

func (e *expr) source() string {
	switch {
	case e.cel != nil:
		return e.cel.Source()
	case e.jp != nil:
		return e.jp.prog.Source()
	case e.rego != nil:
		return e.rego.source
	}
	return ""
}

func (e *expr) language() string {
	switch {
	case e.jp != nil:
		return "jmespath"
	case e.rego != nil:
		return "rego"
	}
	return "cel"
}

// programs holds the JMESPath programs of a policy's {{ }} variables,
// compiled at load by their text; the text of a nested variable is known
// only per request: nested compiles it then (a cache outside the rule).
type programs struct {
	static map[string]*jpExpr
	// fields[src] is the first field a variable's text is in (for lint).
	fields map[string]string
	nested *NestedCache
}

func (p *programs) get(src string) (*jpExpr, error) {
	if e := p.static[src]; e != nil {
		return e, nil
	}
	return p.nested.get(src)
}

// template compiles a string that may hold {{ }} variables; nil when it
// holds none (the string is used as it is).
func (c *compiler) template(r *Rule, field, s string) *subst.Template {
	if !strings.Contains(s, "{{") && !strings.Contains(s, `\$(`) && !strings.Contains(s, `\{{`) {
		return nil
	}
	t, err := subst.Compile(subst.UnescapeReferences(s))
	if err != nil {
		c.substErr(field, err)
		return nil
	}
	if !t.HasVariables() {
		return t
	}
	c.precompile(r, field, t.Expressions())
	r.noteNested(field, t.NestedExpressions())
	return t
}

// document compiles a JSON value whose strings may hold variables.
func (c *compiler) document(r *Rule, field string, v any) *subst.Document {
	d, err := subst.CompileDocument(v)
	if err != nil {
		c.substErr(field, err)
		return nil
	}
	c.precompile(r, field, d.Expressions())
	r.noteNested(field, d.NestedExpressions())
	return d
}

func (c *compiler) substErr(field string, err error) {
	var se *subst.SyntaxError
	if errors.As(err, &se) {
		c.errorf(field, se.Pos, "%s", se.Msg)
		return
	}
	c.errorf(field, -1, "%v", err)
}

// noteNested records, for lint (W207), the expressions of variables nested
// in another variable at field.
func (r *Rule) noteNested(field string, srcs []string) {
	for _, src := range srcs {
		r.nested = append(r.nested, fieldExpr{field: field, src: src})
	}
}

// fieldExpr is a variable's expression and the field it is in.
type fieldExpr struct{ field, src string }

// precompile compiles the expressions of a template's variables.
func (c *compiler) precompile(r *Rule, field string, srcs []string) {
	for _, src := range srcs {
		if _, ok := r.progs.static[src]; ok {
			continue
		}
		e, ds := compileJP(src)
		if len(ds) > 0 {
			c.errorf(field, -1, "variable {{ %s }}: %s", src, ds[0].Msg)
			continue
		}
		r.progs.static[src] = e
		r.progs.fields[src] = field
	}
}

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

// Context entries.

type contextEntry struct {
	configMap *cmEntry
	apiCall   *apiEntry
	variable  *varEntry
	graph     *graphEntry
}

// graphEntry reads the object's edges.
type graphEntry struct {
	in, out bool
	types   []string // none: every type
}

type cmEntry struct {
	name, namespace string
	nameT, nsT      *subst.Template
}

type apiEntry struct {
	method        string
	path          string
	pathT         *subst.Template
	data          *subst.Document // an object of the data keys; nil: none
	jmesPath      *jpExpr
	jmesPathT     *subst.Template
	def           any
	hasDef        bool
	field         string
	jmesPathField string
}

type varEntry struct {
	value     *subst.Document // nil: none
	jmesPath  *jpExpr
	jmesPathT *subst.Template
	def       any
	hasDef    bool
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
		return nil, fmt.Errorf("%s.configMap.namespace: %w: ConfigMap %s/%s, the Policy is in %q", field, ErrOutsideNamespace, ns, name, ev.r.Namespace)
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
var ErrOutsideNamespace = errors.New("outside the Policy's namespace")

// confined reports whether an API path stays in namespace ns: a
// namespaced resource's path under /api/v1/namespaces/ns or
// /apis/group/version/namespaces/ns (the Namespace object itself
// included).
func confined(p, ns string) bool {
	p, _, _ = strings.Cut(p, "?")
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 4 && segs[0] == "api" && segs[1] == "v1" && segs[2] == "namespaces":
		rest = segs[3:]
	case len(segs) >= 5 && segs[0] == "apis" && segs[3] == "namespaces":
		rest = segs[4:]
	default:
		return false
	}
	name, err := url.PathUnescape(rest[0])
	return err == nil && name == ns
}

// ErrURLPath is in the chain of the error of an apiCall whose urlPath a
// variable's value would change the shape of.
var ErrURLPath = errors.New("invalid urlPath")

// MaxURLPath bounds a rendered urlPath (with its query), checked before it
// reaches the API reader, its cache, its authorization and the errors that
// name it: an object's text could make it any length; a URL of 8 KiB is
// beyond what HTTP servers commonly take.
const MaxURLPath = 8 << 10

// pathSegment is a variable's value in a urlPath: one path segment,
// escaped. A value holding "/" or being "." or ".." is refused: an
// object's text must not redirect the call (Kyverno splices it as it is;
// docs/compatibility.md).
func pathSegment(s string) (string, error) {
	if s == "" || s == "." || s == ".." || strings.Contains(s, "/") {
		return "", fmt.Errorf("%w: the value %q is not one path segment", ErrURLPath, truncateText(s, 64))
	}
	return url.PathEscape(s), nil
}

// truncateText is s cut to n bytes, "..." marking the cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// renderPath renders an apiCall's urlPath: variables' values are path
// segments (pathSegment), and the result must be a clean absolute path
// (no "." or ".." segment, no "//"), so that no value leaves the prefix
// the policy wrote.
func (ev *run) renderPath(field, s string, t *subst.Template) (string, error) {
	if t != nil {
		prev := ev.at
		ev.at = field
		var err error
		s, err = t.RenderEscaped(ev.ctx, ev, pathSegment)
		ev.at = prev
		if err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
	}
	if len(s) > MaxURLPath {
		return "", fmt.Errorf("%s: %w: %d bytes, over the %d limit", field, ErrURLPath, len(s), MaxURLPath)
	}
	p, _, _ := strings.Cut(s, "?")
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p && path.Clean(p)+"/" != p {
		return "", fmt.Errorf("%s: %w: %q is not a clean absolute path", field, ErrURLPath, truncateText(s, 200))
	}
	return s, nil
}

// callAPI renders and makes the call; the response is a JSON tree.
func (ev *run) callAPI(field string, a *apiEntry) (any, any, error) {
	path, err := ev.renderPath(field+".apiCall.urlPath", a.path, a.pathT)
	if err != nil {
		return nil, nil, err
	}
	if !ev.r.cluster && !confined(path, ev.r.Namespace) {
		return nil, nil, fmt.Errorf("%s.apiCall.urlPath: %w: %q is not a path under /api/v1/namespaces/%s or /apis/GROUP/VERSION/namespaces/%s", field, ErrOutsideNamespace, truncateText(path, 200), ev.r.Namespace, ev.r.Namespace)
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

// compileContext compiles spec.context into variables placed before
// spec.variables.
func (r *Rule) compileContext(c *compiler, entries []v1alpha1.ContextEntry) {
	for i, ce := range entries {
		field := fmt.Sprintf("spec.context[%d]", i)
		if _, dup := r.varIndex[ce.Name]; dup {
			c.errorf(field+".name", -1, "context entry %q is defined twice", ce.Name)
		} else if !cel.IsIdentifier(ce.Name) {
			c.errorf(field+".name", -1, "context entry name %q is not an identifier (letters, digits, _; not starting with a digit)", ce.Name)
		} else if slices.Contains(builtinRoots, ce.Name) {
			c.errorf(field+".name", -1, "context entry name %q hides Kyverno's variable of that name", ce.Name)
		}
		r.varIndex[ce.Name] = len(r.vars)
		entry := &contextEntry{}
		n := 0
		if m := ce.ConfigMap; m != nil {
			n++
			entry.configMap = &cmEntry{name: m.Name, namespace: m.Namespace,
				nameT: c.template(r, field+".configMap.name", m.Name), nsT: c.template(r, field+".configMap.namespace", m.Namespace)}
			if m.Name == "" {
				c.errorf(field+".configMap.name", -1, "a configMap entry needs a name")
			}
		}
		if a := ce.APICall; a != nil {
			n++
			ae := &apiEntry{method: a.Method, path: a.URLPath, pathT: c.template(r, field+".apiCall.urlPath", a.URLPath),
				field: field, jmesPathField: field + ".apiCall.jmesPath"}
			switch ae.method {
			case "":
				ae.method = "GET"
			case "GET", "POST":
			default:
				c.errorf(field+".apiCall.method", -1, "unknown method %q: use GET or POST", a.Method)
			}
			if a.URLPath == "" {
				c.errorf(field+".apiCall.urlPath", -1, "an apiCall needs a urlPath")
			}
			if len(a.Data) > 0 {
				if ae.method != "POST" {
					c.errorf(field+".apiCall.data", -1, "data is the body of a POST")
				}
				body := map[string]any{}
				for j, d := range a.Data {
					var raw []byte
					if d.Value != nil {
						raw = d.Value.Raw
					}
					v, _ := jsonOf(c, fmt.Sprintf("%s.apiCall.data[%d].value", field, j), raw)
					body[d.Key] = v
				}
				ae.data = c.document(r, field+".apiCall.data", body)
			}
			ae.jmesPath, ae.jmesPathT = c.jmesPathField(r, ae.jmesPathField, a.JMESPath)
			ae.def, ae.hasDef = jsonOf(c, field+".apiCall.default", rawOf(a.Default))
			entry.apiCall = ae
		}
		if g := ce.Graph; g != nil {
			n++
			ge := &graphEntry{types: g.Types}
			switch g.Direction {
			case "", "incoming":
				ge.in = true
			case "outgoing":
				ge.out = true
			case "both":
				ge.in, ge.out = true, true
			default:
				c.errorf(field+".graph.direction", -1, "direction %q: use incoming, outgoing or both", g.Direction)
			}
			entry.graph = ge
		}
		if v := ce.Variable; v != nil {
			n++
			ve := &varEntry{}
			if val, ok := jsonOf(c, field+".variable.value", rawOf(v.Value)); ok {
				ve.value = c.document(r, field+".variable.value", val)
			}
			ve.jmesPath, ve.jmesPathT = c.jmesPathField(r, field+".variable.jmesPath", v.JMESPath)
			ve.def, ve.hasDef = jsonOf(c, field+".variable.default", rawOf(v.Default))
			if v.Value == nil && v.JMESPath == "" {
				c.errorf(field+".variable", -1, "a variable needs a value or a jmesPath")
			}
			entry.variable = ve
		}
		if n != 1 {
			c.errorf(field, -1, "exactly one of configMap, apiCall, variable and graph must be set")
		}
		r.vars = append(r.vars, variable{name: ce.Name, field: field, entry: entry})
	}
	r.contextEntries = len(entries)
}

// jmesPathField compiles a context entry's jmesPath: at load, or, when it
// holds variables, as a template rendered per request.
func (c *compiler) jmesPathField(r *Rule, field, src string) (*jpExpr, *subst.Template) {
	if src == "" {
		return nil, nil
	}
	if t := c.template(r, field, src); t != nil && t.HasVariables() {
		return nil, t
	}
	e, ds := compileJP(src)
	if len(ds) > 0 {
		c.diags(field, ds)
		return nil, nil
	}
	return e, nil
}

func rawOf(j *apiextensionsv1.JSON) []byte {
	if j == nil {
		return nil
	}
	return j.Raw
}

// jsonOf decodes a schemaless field; ok is false when it is absent.
func jsonOf(c *compiler, field string, raw []byte) (any, bool) {
	if raw == nil {
		return nil, false
	}
	v, err := value.Decode(raw)
	if err != nil {
		c.errorf(field, -1, "%v", err)
		return nil, false
	}
	return v, true
}

// what names the kind of a variable in errors.
func (v *variable) what() string {
	if v.entry != nil {
		return "context entry"
	}
	return "variable"
}

func (v *variable) lang() string {
	if v.entry != nil {
		return "context"
	}
	return v.e.language()
}

// describe is a context entry's source, for explanations.
func (ce *contextEntry) describe() string {
	switch {
	case ce.configMap != nil:
		ns := ce.configMap.namespace
		if ns == "" {
			ns = "(default namespace)"
		}
		return "configMap " + ns + "/" + ce.configMap.name
	case ce.apiCall != nil:
		return "apiCall " + ce.apiCall.method + " " + ce.apiCall.path
	}
	return "variable"
}

// refFields are the fields of a spec whose strings Kyverno resolves
// `$( )` references in: condition blocks, messages, context entries and
// patch values (never CEL nor JMESPath slots, whose text is code).
var refFields = regexp.MustCompile(`^/(validations/\d+/(deny/|message$)|matchConditions/\d+/conditions/|context/|mutations/\d+/patch/)`)

// resolveReferences resolves the `$(./../key)` references of spec, each
// relative to the field holding it (a condition's value may read its key),
// once at load; a spec without one is returned as it is.
func (c *compiler) resolveReferences(spec *v1alpha1.PolicySpec) *v1alpha1.PolicySpec {
	b, err := json.Marshal(spec)
	if err != nil || !bytes.Contains(b, []byte("$(")) {
		return spec
	}
	tree, err := value.Decode(b)
	if err != nil {
		return spec
	}
	resolved, err := subst.ResolveReferences(tree, refFields.MatchString)
	if err != nil {
		c.refsFailed = true
		var pe *subst.PathError
		if errors.As(err, &pe) {
			c.errorf("spec"+fieldOf(pe.Path), -1, "%v", pe.Err)
		} else {
			c.errorf("spec", -1, "%v", err)
		}
		return spec
	}
	out, err := value.Encode(resolved)
	if err != nil {
		return spec
	}
	var rs v1alpha1.PolicySpec
	if err := json.Unmarshal(out, &rs); err != nil {
		return spec
	}
	return &rs
}

// fieldOf turns a JSON pointer into a field path: /validations/0/message
// is .validations[0].message.
func fieldOf(pointer string) string {
	var b strings.Builder
	for _, seg := range strings.Split(strings.Trim(pointer, "/"), "/") {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
		} else {
			b.WriteString("." + seg)
		}
	}
	return b.String()
}
