package gotemplate

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/template"
)

// The variables a template may read, by their names in the template's
// context (template.Data's fields).
const (
	VarTarget         = "Target"         // Activation.Object
	VarNamespace      = "Namespace"      // Activation.Namespace
	VarSelectedItem   = "SelectedItem"   // Activation.Item
	VarSelectKeyParts = "SelectKeyParts" // Activation.Keys
)

// Language is the Go template language; its zero value is ready to use.
type Language struct{}

// Name returns "gotemplate".
func (Language) Name() string { return "gotemplate" }

// Compile compiles src as a template named env.Name. env may declare only
// the Var* variables, and its MaxOutput and MaxWork limits must be zero or
// the leaf's MaxOutput and MaxWork.
func (l Language) Compile(env *lang.Env, src string) (lang.Program, []lang.Diagnostic) {
	p, ds := l.CompileText(env, src)
	if ds != nil {
		return nil, ds
	}
	return p, nil
}

// CompileText is Compile returning the concrete *Program.
func (l Language) CompileText(env *lang.Env, src string) (*Program, []lang.Diagnostic) {
	ds := lang.Undeclared(l.Name(), env, VarTarget, VarNamespace, VarSelectedItem, VarSelectKeyParts)
	if d, bad := lang.FixedLimit(l.Name(), "MaxOutput", int64(env.Limits.MaxOutput), template.MaxOutput); bad {
		ds = append(ds, d)
	}
	if d, bad := lang.FixedLimit(l.Name(), "MaxWork", env.Limits.MaxWork, template.MaxWork); bad {
		ds = append(ds, d)
	}
	if ds != nil {
		return nil, ds
	}
	t, err := template.Compile(env.Name, src)
	if err != nil {
		return nil, []lang.Diagnostic{{Pos: errorPos(err.Error(), env.Name, src), Msg: err.Error()}}
	}
	return &Program{t: t, pool: sync.Pool{New: func() any { return new(template.Data) }}}, nil
}

// errorPos finds the position text/template gives in msg ("template:
// NAME:LINE: ..." or "template: NAME:LINE:COL: ...", COL a 0-based byte
// offset in the line) and returns the byte offset in src it names: the
// start of the line when there is no column, or when the leaf rewrote
// `.#N` placeholders (columns then count in the rewritten text); -1 when msg
// names no line of src.
func errorPos(msg, name, src string) int {
	prefix := "template: " + name + ":"
	i := strings.Index(msg, prefix)
	if i < 0 {
		return -1
	}
	rest := msg[i+len(prefix):]
	line, rest := leadingInt(rest)
	if line < 1 {
		return -1
	}
	pos := 0
	for ; line > 1; line-- {
		j := strings.IndexByte(src[pos:], '\n')
		if j < 0 {
			return -1
		}
		pos += j + 1
	}
	if strings.HasPrefix(rest, ":") && !strings.Contains(src, ".#") {
		end := strings.IndexByte(src[pos:], '\n')
		if end < 0 {
			end = len(src) - pos
		}
		if col, _ := leadingInt(rest[1:]); col >= 0 && col < end {
			pos += col
		}
	}
	return pos
}

// leadingInt parses the decimal digits s starts with: -1 when there are
// none.
func leadingInt(s string) (int, string) {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	v, err := strconv.Atoi(s[:n])
	if err != nil {
		return -1, s
	}
	return v, s[n:]
}

// Program is a compiled template. It is immutable and safe for concurrent
// use.
type Program struct {
	t *template.Template
	// pool holds the template.Data renders bind an Activation to (the leaf
	// takes it as an interface, so a stack value would escape).
	pool sync.Pool
}

var _ lang.Text = (*Program)(nil)

// Source returns the template's text.
func (p *Program) Source() string { return p.t.Text() }

// Static reports whether the text has no actions; Source is then the
// rendered text.
func (p *Program) Static() bool { return p.t.Static() }

// Eval returns the rendered text (a string).
func (p *Program) Eval(ctx context.Context, in *lang.Activation) (any, error) {
	s, err := p.Render(ctx, in)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Render renders the template from in. The leaf takes no context: Render
// returns ctx.Err() when ctx is done before it starts, and the leaf's
// bounds (template.MaxWork and the others) bound the run.
func (p *Program) Render(ctx context.Context, in *lang.Activation) (string, error) {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
	if p.t.Static() {
		return p.t.Text(), nil
	}
	d := p.pool.Get().(*template.Data)
	*d = template.Data{Target: in.Object, Namespace: in.Namespace, SelectedItem: in.Item, SelectKeyParts: in.Keys}
	s, err := p.t.Execute(d)
	*d = template.Data{} // keep no part of the Activation
	p.pool.Put(d)
	if err != nil && errors.Is(err, template.ErrLimit) {
		err = lang.Limit(err)
	}
	return s, err
}

// ErrNotStatic is returned by Value for a program that reads variables.
var ErrNotStatic = errors.New("gotemplate: the template is not static")

// Value returns the value a static program's text denotes (ParseValue of
// its text), so that a caller can compute it once; a program that is not
// static has no value before it renders (ErrNotStatic).
func (p *Program) Value() (any, error) {
	if !p.t.Static() {
		return nil, ErrNotStatic
	}
	return template.ParseValue(p.t.Text())
}

// ParseValue turns rendered text into the JSON value it denotes, as the
// leaf's template.ParseValue does (YAML as kubectl reads it).
func ParseValue(text string) (any, error) { return template.ParseValue(text) }

// ErrLimit is the template evaluator's sentinel for its bounds (output
// size, work, nesting): in the chain of every error of a Render that hit
// one, beside lang.ErrLimit, for callers that must tell a template's bound
// from another language's.
var ErrLimit = template.ErrLimit
