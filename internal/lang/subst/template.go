package subst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Resolver evaluates the expression inside one {{ }} (JMESPath text)
// against the substitution's context. An expression that reads a key the
// context does not have returns an error wrapping ErrUndefined.
type Resolver interface {
	Resolve(ctx context.Context, expr string) (any, error)
}

// ErrUndefined is in the chain of the error of a variable whose value is
// undefined (a Resolver reports it; Render adds the variable's text).
var ErrUndefined = errors.New("undefined variable")

// Bounds of a template, checked at Compile.
const (
	// MaxSource is the longest string Compile accepts.
	MaxSource = 1 << 20
	// MaxDepth bounds the nesting of variables ({{ a.{{ b }} }} is 2).
	MaxDepth = 32
)

// SyntaxError is a problem in a template's source: Pos is the 0-based byte
// offset.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("at %d: %s", e.Pos, e.Msg) }

// VarError is the error of one variable: Expr is the expression text
// evaluated (after nested variables were substituted), Pos the offset of
// its "{{" in the template's source.
type VarError struct {
	Expr string
	Pos  int
	Err  error
}

func (e *VarError) Error() string {
	return fmt.Sprintf("failed to resolve %s at %d: %v", e.Expr, e.Pos, e.Err)
}

func (e *VarError) Unwrap() error { return e.Err }

// part is a piece of a template: literal text or a variable.
type part struct {
	text string
	v    *variable
}

type variable struct {
	pos   int
	parts []part
	// static is the trimmed expression of a variable without nested ones;
	// shallow is its "{{-" form.
	static  string
	dynamic bool
	shallow bool
}

// Template is a compiled string: immutable, safe for concurrent use.
type Template struct {
	src      string
	parts    []part
	vars     bool
	current  bool
	escapes  bool
	unescape string
}

// Compile parses s once into a Template.
func Compile(s string) (*Template, error) {
	if len(s) > MaxSource {
		return nil, &SyntaxError{Pos: MaxSource, Msg: fmt.Sprintf("string longer than %d bytes", MaxSource)}
	}
	parts, err := parse(s)
	if err != nil {
		return nil, err
	}
	t := &Template{src: s, parts: parts, escapes: strings.Contains(s, `\{{`)}
	t.unescape = s
	if t.escapes {
		t.unescape = strings.ReplaceAll(s, `\{{`, "{{")
	}
	var walk func([]part)
	walk = func(ps []part) {
		for _, p := range ps {
			if p.v == nil {
				continue
			}
			t.vars = true
			if !p.v.dynamic && p.v.static == "@" {
				t.current = true
			}
			walk(p.v.parts)
		}
	}
	walk(parts)
	return t, nil
}

type frame struct {
	pos   int
	parts []part
	text  strings.Builder
}

func (f *frame) flush() {
	if f.text.Len() > 0 {
		f.parts = append(f.parts, part{text: f.text.String()})
		f.text.Reset()
	}
}

// parse finds the variables of s: "{{" opens one (the last two braces of a
// run of three or more), "}}" closes the innermost open one; `\{{` is
// literal; an opening never closed is literal text.
func parse(s string) ([]part, error) {
	root := &frame{pos: -1}
	stack := []*frame{root}
	for i := 0; i < len(s); {
		top := stack[len(stack)-1]
		switch {
		case s[i] == '\\' && strings.HasPrefix(s[i+1:], "{{"):
			top.text.WriteString(`\{{`)
			i += 3
		case strings.HasPrefix(s[i:], "{{{"):
			top.text.WriteByte('{')
			i++
		case strings.HasPrefix(s[i:], "{{"):
			if len(stack) > MaxDepth {
				return nil, &SyntaxError{Pos: i, Msg: fmt.Sprintf("variables nested deeper than %d", MaxDepth)}
			}
			top.flush()
			stack = append(stack, &frame{pos: i})
			i += 2
		case len(stack) > 1 && strings.HasPrefix(s[i:], "}}"):
			top.flush()
			stack = stack[:len(stack)-1]
			v, err := newVariable(top)
			if err != nil {
				return nil, err
			}
			parent := stack[len(stack)-1]
			parent.flush()
			parent.parts = append(parent.parts, part{v: v})
			i += 2
		default:
			top.text.WriteByte(s[i])
			i++
		}
	}
	// Openings never closed are text: fold them into their parents.
	for len(stack) > 1 {
		top := stack[len(stack)-1]
		top.flush()
		stack = stack[:len(stack)-1]
		parent := stack[len(stack)-1]
		parent.text.WriteString("{{")
		for _, p := range top.parts {
			if p.v == nil {
				parent.text.WriteString(p.text)
				continue
			}
			parent.flush()
			parent.parts = append(parent.parts, p)
		}
	}
	root.flush()
	return mergeText(root.parts), nil
}

func mergeText(ps []part) []part {
	out := ps[:0]
	for _, p := range ps {
		if p.v == nil && len(out) > 0 && out[len(out)-1].v == nil {
			out[len(out)-1].text += p.text
			continue
		}
		out = append(out, p)
	}
	return out
}

func newVariable(f *frame) (*variable, error) {
	v := &variable{pos: f.pos, parts: mergeText(f.parts)}
	for _, p := range v.parts {
		if p.v != nil {
			v.dynamic = true
		}
	}
	if v.dynamic {
		return v, nil
	}
	var text string
	if len(v.parts) == 1 {
		text = v.parts[0].text
	}
	expr, shallow := trimExpr(text)
	if expr == "" {
		return nil, &SyntaxError{Pos: f.pos, Msg: "empty variable"}
	}
	v.static, v.shallow = expr, shallow
	return v, nil
}

// trimExpr trims the expression text of a variable; a leading "-" makes
// it shallow.
func trimExpr(s string) (expr string, shallow bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		return strings.TrimSpace(s[1:]), true
	}
	return s, false
}

// Source is the text the template was compiled from.
func (t *Template) Source() string { return t.src }

// HasVariables reports whether the template holds a variable; a template
// without one renders its text (escapes removed) at no cost.
func (t *Template) HasVariables() bool { return t.vars }

// UsesCurrent reports whether the template reads {{@}}.
func (t *Template) UsesCurrent() bool { return t.current }

// Expressions lists the expressions of the variables that hold no nested
// variable, in source order: a Resolver may compile them once at load.
func (t *Template) Expressions() []string {
	var out []string
	var walk func([]part)
	walk = func(ps []part) {
		for _, p := range ps {
			if p.v == nil {
				continue
			}
			walk(p.v.parts)
			if !p.v.dynamic && p.v.static != "@" {
				out = append(out, p.v.static)
			}
		}
	}
	walk(t.parts)
	return out
}

// NestedExpressions lists the expressions of the variables nested in
// another variable ({{ a.{{ b }} }} gives "b"): their values are spliced
// into the outer expression's text, so lint can warn when they read what
// an object's author writes.
func (t *Template) NestedExpressions() []string {
	var out []string
	var inner func([]part)
	inner = func(ps []part) {
		for _, p := range ps {
			if p.v == nil {
				continue
			}
			inner(p.v.parts)
			if !p.v.dynamic && p.v.static != "@" {
				out = append(out, p.v.static)
			}
		}
	}
	var walk func([]part)
	walk = func(ps []part) {
		for _, p := range ps {
			if p.v == nil {
				continue
			}
			if p.v.dynamic {
				inner(p.v.parts)
			}
		}
	}
	walk(t.parts)
	return out
}

// currentFunc supplies the value of {{@}} on demand.
type currentFunc func(ctx context.Context) (any, error)

// Render substitutes the template's variables: a template that is one
// variable gives the value itself; otherwise the text, with every value
// rendered as text. cur is the value of {{@}}.
func (t *Template) Render(ctx context.Context, r Resolver, cur any) (any, error) {
	return t.render(ctx, r, func(context.Context) (any, error) { return cur, nil })
}

func (t *Template) render(ctx context.Context, r Resolver, cur currentFunc) (any, error) {
	if !t.vars {
		return t.unescape, nil
	}
	if len(t.parts) == 1 && t.parts[0].v != nil {
		val, _, err := t.parts[0].v.eval(ctx, r, cur)
		return val, err
	}
	return renderParts(ctx, r, cur, t.parts, true, nil)
}

// RenderEscaped substitutes the template's variables as text, each
// variable's text passed through escape before it is spliced in (a URL
// path's segments: a value is data, never structure); an error of escape
// names the variable. Nested variables' values are spliced into their
// outer expression as Render splices them; only the outermost variables'
// values are escaped.
func (t *Template) RenderEscaped(ctx context.Context, r Resolver, escape func(string) (string, error)) (string, error) {
	if !t.vars {
		return t.unescape, nil
	}
	cur := func(context.Context) (any, error) { return nil, nil }
	return renderParts(ctx, r, cur, t.parts, true, escape)
}

// renderParts renders parts as text: the template's own text (its escapes
// removed when unescape), then each value's text as it is (through
// escape, when not nil). A value is
// never scanned for variables again: a text an object holds ("{{
// settings.data.token }}") stays text, whoever echoes it (Kyverno scans
// again; docs/compatibility.md).
func renderParts(ctx context.Context, r Resolver, cur currentFunc, parts []part, unescape bool, escape func(string) (string, error)) (string, error) {
	var b strings.Builder
	for _, p := range parts {
		if p.v == nil {
			if unescape {
				b.WriteString(strings.ReplaceAll(p.text, `\{{`, "{{"))
			} else {
				b.WriteString(p.text)
			}
			continue
		}
		val, _, err := p.v.eval(ctx, r, cur)
		if err != nil {
			return "", err
		}
		s, err := Text(val)
		if err == nil && escape != nil {
			s, err = escape(s)
		}
		if err != nil {
			return "", &VarError{Expr: p.v.static, Pos: p.v.pos, Err: err}
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// eval evaluates a variable; shallow reports its "{{-" form (known only
// after nested variables rendered, for a dynamic one). A nested
// variable's value is spliced into the outer expression's text as it is
// (as Kyverno): docs/variables.md.
func (v *variable) eval(ctx context.Context, r Resolver, cur currentFunc) (val any, shallow bool, err error) {
	if !v.dynamic {
		val, err = resolve(ctx, r, cur, v.pos, v.static)
		return val, v.shallow, err
	}
	s, err := renderParts(ctx, r, cur, v.parts, false, nil)
	if err != nil {
		return nil, false, err
	}
	expr, shallow := trimExpr(s)
	val, err = resolve(ctx, r, cur, v.pos, expr)
	return val, shallow, err
}

func resolve(ctx context.Context, r Resolver, cur currentFunc, pos int, expr string) (any, error) {
	if expr == "@" {
		val, err := cur(ctx)
		if err != nil {
			return nil, &VarError{Expr: expr, Pos: pos, Err: err}
		}
		return val, nil
	}
	if expr == "" {
		return nil, &VarError{Expr: expr, Pos: pos, Err: errors.New("empty variable")}
	}
	val, err := r.Resolve(ctx, expr)
	if err != nil {
		return nil, &VarError{Expr: expr, Pos: pos, Err: err}
	}
	return val, nil
}

// Text renders a value as an embedded variable does: a string as it is,
// anything else as compact JSON (null as "null").
func Text(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ReplaceVariables returns the template's source with every innermost
// variable (one holding no nested variable) replaced by repl(its source
// text), the others kept as written: one pass of Kyverno's
// ReplaceAllVars, which checks a policy before any value is known.
func (t *Template) ReplaceVariables(repl func(src string) string) string {
	var b strings.Builder
	var write func([]part)
	write = func(ps []part) {
		for _, p := range ps {
			switch {
			case p.v == nil:
				b.WriteString(p.text)
			case !p.v.dynamic:
				var inner string
				if len(p.v.parts) == 1 {
					inner = p.v.parts[0].text
				}
				b.WriteString(repl("{{" + inner + "}}"))
			default:
				b.WriteString("{{")
				write(p.v.parts)
				b.WriteString("}}")
			}
		}
	}
	write(t.parts)
	return b.String()
}
