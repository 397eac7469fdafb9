package subst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrReference is in the chain of the error of a `$( )` reference that
// does not resolve to a field of the document.
var ErrReference = errors.New("unresolved reference")

// PathError is an error at one field of a document: Path is its JSON
// pointer, as Kyverno spells it ("/spec/name", "/" for the root).
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return fmt.Sprintf("at path %s: %v", e.Path, e.Err) }

func (e *PathError) Unwrap() error { return e.Err }

// Document is a compiled document (a rule as maps, lists and scalars): its
// `$( )` references resolved and every string leaf and map key compiled to
// a Template. It is immutable and safe for concurrent use.
type Document struct {
	root *dnode
}

// dnode is a compiled node: static when its subtree holds no variable.
type dnode struct {
	static any
	fixed  bool
	path   string
	tmpl   *Template
	keys   []string
	keyT   []*Template
	vals   []*dnode
	list   []*dnode
	isMap  bool
}

// references are `$(...)` not preceded by a backslash (greedy up to the
// last ")" before a space, as Kyverno's scanner); escaped ones are `\$(...)`.
var (
	reReference  = regexp.MustCompile(`(?:^|[^\\])\$\(.[^ ]*\)`)
	reEscapedRef = regexp.MustCompile(`\\\$\(.[^ )]*\)`)
	reAnchor     = regexp.MustCompile(`^[\^=X+<]?\((.+)\)$`)
)

// CompileDocument resolves the `$( )` references of doc against doc itself
// (relative paths from the referencing field; operator prefixes >=, <=,
// >, <, ! kept before the referenced value) and compiles every string.
// doc is not modified.
func CompileDocument(doc any) (*Document, error) {
	leaves := map[string]any{}
	collectLeaves(doc, "", leaves)
	resolved, err := substituteRefs(doc, "", leaves)
	if err != nil {
		return nil, err
	}
	root, err := compileNode(resolved, "")
	if err != nil {
		return nil, err
	}
	return &Document{root: root}, nil
}

// SubstituteAll compiles doc and substitutes it once: a convenience for
// callers that do not keep the compiled Document.
func SubstituteAll(ctx context.Context, doc any, r Resolver) (any, error) {
	d, err := CompileDocument(doc)
	if err != nil {
		return nil, err
	}
	return d.Substitute(ctx, r)
}

// HasVariables reports whether the document holds a {{ }} variable.
func (d *Document) HasVariables() bool { return !d.root.fixed }

func pointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// collectLeaves records the scalar leaves of doc by their path with the
// anchors ("(key)", "^(key)", "=(key)"...) removed.
func collectLeaves(v any, p string, out map[string]any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			collectLeaves(e, p+"/"+stripAnchor(k), out)
		}
	case []any:
		for i, e := range t {
			collectLeaves(e, p+"/"+strconv.Itoa(i), out)
		}
	default:
		out[pointer(p)] = v
	}
}

func stripAnchor(k string) string {
	if m := reAnchor.FindStringSubmatch(k); m != nil {
		return m[1]
	}
	return k
}

// ResolveReferences resolves the `$( )` references of doc's strings
// against doc itself, as CompileDocument does, in the strings whose JSON
// pointer include accepts (nil: all), leaving escaped references (`\$(`)
// as they are for a later CompileDocument of the same text to unescape.
// doc is not modified.
func ResolveReferences(doc any, include func(pointer string) bool) (any, error) {
	leaves := map[string]any{}
	collectLeaves(doc, "", leaves)
	r := refResolver{leaves: leaves, include: include}
	return r.substitute(doc, "")
}

func substituteRefs(v any, p string, leaves map[string]any) (any, error) {
	r := refResolver{leaves: leaves, unescape: true}
	return r.substitute(v, p)
}

// refResolver resolves references in a document's strings.
type refResolver struct {
	leaves   map[string]any
	include  func(pointer string) bool
	unescape bool
}

func (rr *refResolver) substitute(v any, p string) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := rr.substitute(e, p+"/"+k)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := rr.substitute(e, p+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case string:
		at := pointer(p)
		if rr.include != nil && !rr.include(at) {
			return t, nil
		}
		return substituteRefString(t, at, rr.leaves, rr.unescape)
	default:
		return v, nil
	}
}

func substituteRefString(s, at string, leaves map[string]any, unescape bool) (string, error) {
	if !strings.Contains(s, "$(") {
		return s, nil
	}
	for _, m := range reReference.FindAllString(s, -1) {
		ref, prefix := m, ""
		if !strings.HasPrefix(m, "$(") {
			_, size := utf8.DecodeRuneInString(m)
			ref, prefix = m[size:], m[:size]
		}
		val, err := resolveReference(ref, at, leaves)
		if err != nil {
			return "", &PathError{Path: at, Err: fmt.Errorf("%w %s: %v", ErrReference, ref, err)}
		}
		s = strings.Replace(s, m, prefix+val, 1)
	}
	if !unescape {
		return s, nil
	}
	return reEscapedRef.ReplaceAllStringFunc(s, func(m string) string { return m[1:] }), nil
}

// operators are the prefixes a reference may carry, longest first.
var operators = []string{">=", "<=", ">", "<", "!"}

func resolveReference(ref, at string, leaves map[string]any) (string, error) {
	p := strings.Trim(ref, "$()")
	op := ""
	if len(p) >= 2 {
		for _, o := range operators {
			if strings.HasPrefix(p, o) {
				op = o
				break
			}
		}
	}
	p = p[len(op):]
	if p == "" {
		return "", errors.New("expected path, found empty reference")
	}
	if !path.IsAbs(p) {
		p = path.Join(at, p)
	}
	val, ok := leaves[p]
	if !ok || val == nil {
		return "", fmt.Errorf("no value at %s", p)
	}
	if s, ok := val.(string); ok {
		return op + s, nil
	}
	if op == "" {
		return "", fmt.Errorf("the value at %s is not a string", p)
	}
	switch n := val.(type) {
	case int:
		return op + strconv.Itoa(n), nil
	case int64:
		return op + strconv.FormatInt(n, 10), nil
	case float64:
		return op + strconv.FormatFloat(n, 'f', 6, 64), nil
	case json.Number:
		// Kyverno reads the rule's numbers as float64.
		if f, err := n.Float64(); err == nil {
			return op + strconv.FormatFloat(f, 'f', 6, 64), nil
		}
	}
	return "", fmt.Errorf("operator %s does not apply to the value at %s", op, p)
}

func compileNode(v any, p string) (*dnode, error) {
	n := &dnode{path: pointer(p), static: v, fixed: true}
	switch t := v.(type) {
	case map[string]any:
		n.isMap = true
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		static := make(map[string]any, len(t))
		for _, k := range keys {
			kt, err := compileString(k, p+"/"+k)
			if err != nil {
				return nil, err
			}
			c, err := compileNode(t[k], p+"/"+k)
			if err != nil {
				return nil, err
			}
			if kt.HasVariables() || kt.escapes || !c.fixed {
				n.fixed = false
			}
			static[kt.unescape] = c.static
			n.keys = append(n.keys, k)
			n.keyT = append(n.keyT, kt)
			n.vals = append(n.vals, c)
		}
		n.static = static
	case []any:
		static := make([]any, len(t))
		for i, e := range t {
			c, err := compileNode(e, p+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			static[i] = c.static
			if !c.fixed {
				n.fixed = false
			}
			n.list = append(n.list, c)
		}
		n.static = static
	case string:
		tm, err := compileString(t, p)
		if err != nil {
			return nil, err
		}
		n.tmpl = tm
		if tm.HasVariables() {
			n.fixed = false
		} else {
			n.static = tm.unescape
		}
	}
	return n, nil
}

func compileString(s, p string) (*Template, error) {
	t, err := Compile(s)
	if err != nil {
		return nil, &PathError{Path: pointer(p), Err: err}
	}
	return t, nil
}

// Static returns the document with its escapes removed, when it holds no
// variable (HasVariables is false); otherwise nil. Callers must not modify
// it in place.
func (d *Document) Static() any {
	if !d.root.fixed {
		return nil
	}
	return d.root.static
}

// Substitute evaluates the document's variables. Parts of the document
// without variables are shared with the compiled document (and with other
// results): callers must not modify the result in place.
func (d *Document) Substitute(ctx context.Context, r Resolver) (any, error) {
	return d.root.substitute(ctx, r)
}

func (n *dnode) substitute(ctx context.Context, r Resolver) (any, error) {
	if n.fixed {
		return n.static, nil
	}
	switch {
	case n.tmpl != nil:
		v, err := n.tmpl.render(ctx, r, n.current(r))
		if err != nil {
			return nil, &PathError{Path: n.path, Err: err}
		}
		return v, nil
	case n.isMap:
		out := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			if kt := n.keyT[i]; kt.HasVariables() {
				kv, err := kt.render(ctx, r, n.vals[i].current(r))
				if err != nil {
					return nil, &PathError{Path: n.vals[i].path, Err: err}
				}
				if k, err = Text(kv); err != nil {
					return nil, &PathError{Path: n.vals[i].path, Err: err}
				}
			} else {
				k = kt.unescape
			}
			v, err := n.vals[i].substitute(ctx, r)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	default:
		out := make([]any, len(n.list))
		for i, c := range n.list {
			v, err := c.substitute(ctx, r)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
}

// current gives {{@}} as Kyverno: the value at the field's path in
// "target" when the context has one, else in "request.object", skipping
// the path up to a "foreach" element and then two more elements (the
// rule's "mutate/overlay", "validate/pattern"...).
func (n *dnode) current(r Resolver) currentFunc {
	return func(ctx context.Context) (any, error) {
		prefix := "target"
		if _, err := r.Resolve(ctx, "target"); err != nil {
			prefix = "request.object"
		}
		return r.Resolve(ctx, currentExpr(prefix, n.path))
	}
}

var reIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func currentExpr(prefix, p string) string {
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			segs = append(segs, s)
		}
	}
	for i, s := range segs {
		if s == "foreach" {
			segs = segs[i+1:]
			break
		}
	}
	if len(segs) > 2 {
		segs = segs[2:]
	} else {
		segs = nil
	}
	var b strings.Builder
	b.WriteString(prefix)
	for _, s := range segs {
		if _, err := strconv.ParseUint(s, 10, 64); err == nil {
			b.WriteString("[" + s + "]")
			continue
		}
		b.WriteByte('.')
		if reIdentifier.MatchString(s) {
			b.WriteString(s)
			continue
		}
		q, _ := json.Marshal(s)
		b.Write(q)
	}
	return b.String()
}

// HasReference reports whether s holds an unescaped `$( )` reference.
func HasReference(s string) bool { return reReference.MatchString(s) }

// Expressions lists the expressions of the document's variables that hold
// no nested variable (see Template.Expressions), keys' too: a Resolver may
// compile them once at load.
func (d *Document) Expressions() []string {
	var out []string
	d.eachTemplate(func(t *Template) { out = append(out, t.Expressions()...) })
	return out
}

// eachTemplate calls fn with each template of the document's strings
// that holds variables (keys and values).
func (d *Document) eachTemplate(fn func(*Template)) {
	var walk func(n *dnode)
	walk = func(n *dnode) {
		if n.fixed {
			return
		}
		if n.tmpl != nil {
			fn(n.tmpl)
		}
		for i, c := range n.vals {
			fn(n.keyT[i])
			walk(c)
		}
		for _, c := range n.list {
			walk(c)
		}
	}
	walk(d.root)
}

// NestedExpressions lists the expressions of the document's variables
// nested in another variable (Template.NestedExpressions).
func (d *Document) NestedExpressions() []string {
	var out []string
	d.eachTemplate(func(t *Template) { out = append(out, t.NestedExpressions()...) })
	return out
}

// UnescapeReferences turns escaped references (`\$(x)`) into their text
// (`$(x)`), as CompileDocument does, for a string compiled on its own.
func UnescapeReferences(s string) string {
	if !strings.Contains(s, `\$(`) {
		return s
	}
	return reEscapedRef.ReplaceAllStringFunc(s, func(m string) string { return m[1:] })
}
