package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/value"
)

// Load time: Kyverno's {{ }} variables and context entries compiled
// (kyverno_eval.go: the same at request time).

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
