package rego

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	oparego "github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// The guardrails' errors, checked with errors.Is.
var (
	// ErrEvalTimeout: an evaluation ran out of its time budget.
	ErrEvalTimeout = errors.New("rego evaluation timed out")
	// ErrEvalPanic: the OPA runtime panicked during an evaluation (it was
	// recovered).
	ErrEvalPanic = errors.New("rego evaluation panicked")
	// ErrCompile: a module or an entrypoint does not compile.
	ErrCompile = errors.New("rego does not compile")
)

// The time budget of one evaluation: DefaultTimeout, clamped to
// [MinTimeout, MaxTimeout].
const (
	DefaultTimeout = 100 * time.Millisecond
	MinTimeout     = 50 * time.Millisecond
	MaxTimeout     = time.Second
)

// ClampTimeout is d within the bounds (0: the default); clamped reports
// whether d was out of them.
func ClampTimeout(d time.Duration) (t time.Duration, clamped bool) {
	switch {
	case d == 0:
		return DefaultTimeout, false
	case d < MinTimeout:
		return MinTimeout, true
	case d > MaxTimeout:
		return MaxTimeout, true
	}
	return d, false
}

// denied reports whether a builtin reads outside the input: rules are
// pure functions of their input.
func denied(name string) bool {
	switch {
	case name == "http.send", name == "opa.runtime", strings.HasPrefix(name, "net."),
		strings.HasPrefix(name, "time.now"), name == "rand.intn", strings.HasPrefix(name, "uuid."):
		return true
	}
	return false
}

// capabilities are OPA's builtins without the denied ones.
func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	kept := c.Builtins[:0:0]
	for _, b := range c.Builtins {
		if !denied(b.Name) {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	return c
}

// Module is one Rego source file, in Rego v1 unless V0 (OPA's former
// syntax, which Gatekeeper's templates are written in).
type Module struct {
	File, Source string
	V0           bool
}

// Program is modules and an entrypoint compiled once. It is immutable and
// safe for concurrent use.
// noMetrics: evaluations record no metrics.
var noMetrics = metrics.NoOp()

type Program struct {
	entrypoint string
	// binding is the query variable whose value is the result (a
	// specialized program's query binds it); "" for the entrypoint's value.
	binding string
	// modules and lax are what Specialize compiles from (nil in a
	// specialized program).
	modules []*ast.Module
	lax     bool
	// eval is the prepared query's Eval (a test replaces it to reach the
	// panic guard).
	eval    func(ctx context.Context, opts ...oparego.EvalOption) (oparego.ResultSet, error)
	timeout time.Duration
}

// Compile compiles modules (each in its version) for a query of entrypoint
// (data.pkg.rule); timeout is the evaluation budget, clamped. An error
// wraps ErrCompile and names the file and position. A builtin's error
// fails the evaluation.
func Compile(ctx context.Context, entrypoint string, timeout time.Duration, modules ...Module) (*Program, error) {
	return CompileWith(ctx, Options{Query: entrypoint, Timeout: timeout}, modules...)
}

// Options are what CompileWith compiles for.
type Options struct {
	// Query is the entrypoint (data.pkg.rule), or a query in Rego.
	Query string
	// Timeout is the evaluation budget, clamped.
	Timeout time.Duration
	// LaxBuiltins: a builtin's error makes its expression undefined, as
	// OPA does by default (and Gatekeeper with it), instead of failing the
	// evaluation.
	LaxBuiltins bool
}

// CompileWith compiles modules for o.Query; an error wraps ErrCompile and
// names the file and position.
func CompileWith(ctx context.Context, o Options, modules ...Module) (*Program, error) {
	opts := []func(*oparego.Rego){oparego.Query(o.Query), oparego.Capabilities(capabilities()), oparego.StrictBuiltinErrors(!o.LaxBuiltins)}
	parsed := make([]*ast.Module, 0, len(modules))
	for _, m := range modules {
		// Parsed here, not by rego.New, which flattens parse errors to text.
		v := ast.RegoV1
		if m.V0 {
			v = ast.RegoV0
		}
		pm, err := ast.ParseModuleWithOpts(m.File, m.Source, ast.ParserOptions{RegoVersion: v})
		if err != nil {
			return nil, compileErr(err)
		}
		opts = append(opts, oparego.ParsedModule(pm))
		parsed = append(parsed, pm)
	}
	pq, err := oparego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, compileErr(err)
	}
	t, _ := ClampTimeout(o.Timeout)
	return &Program{entrypoint: o.Query, eval: pq.Eval, timeout: t, modules: parsed, lax: o.LaxBuiltins}, nil
}

// Problem is one compile error: the module's File, the 1-based Row and
// Col in its source (0 when OPA gives none), and the message.
type Problem struct {
	File     string
	Row, Col int
	Msg      string
}

// CompileError is the error of a module or query that does not compile:
// its problems, positioned. It wraps ErrCompile.
type CompileError struct {
	Problems []Problem
	text     string
}

func (e *CompileError) Error() string { return ErrCompile.Error() + ": " + e.text }
func (e *CompileError) Unwrap() error { return ErrCompile }

// compileErr is OPA's error as a *CompileError: one problem per OPA error,
// its text one line per problem as file:row:col: message (without OPA's
// echo of the source line).
func compileErr(err error) *CompileError {
	var errs ast.Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		return &CompileError{Problems: []Problem{{Msg: err.Error()}}, text: err.Error()}
	}
	ce := &CompileError{}
	lines := make([]string, len(errs))
	for i, e := range errs {
		p := Problem{Msg: e.Message}
		loc := ""
		if e.Location != nil {
			p.File, p.Row, p.Col = e.Location.File, e.Location.Row, e.Location.Col
			loc = fmt.Sprintf("%s:%d:%d: ", e.Location.File, e.Location.Row, e.Location.Col)
		}
		ce.Problems = append(ce.Problems, p)
		lines[i] = loc + e.Message
	}
	ce.text = strings.Join(lines, "; ")
	return ce
}

// Value is a JSON tree converted once for OPA: a part of the input that
// several evaluations share (the object under review, a rule's
// parameters). It is immutable.
type Value struct{ v ast.Value }

// ToValue converts a JSON tree.
func ToValue(x any) (Value, error) {
	v, err := ast.InterfaceToValue(x)
	if err != nil {
		return Value{}, err
	}
	return Value{v}, nil
}

// EvalParts is Eval with the input an object of the given members, each
// converted already: no conversion of the input per evaluation.
func (p *Program) EvalParts(ctx context.Context, keys []string, vals []Value) (out any, err error) {
	return p.eval1(ctx, oparego.EvalParsedInput(partsObject(keys, vals)))
}

// partsObject is the object of the given members (a nil value: null).
func partsObject(keys []string, vals []Value) ast.Object {
	obj := ast.NewObject()
	for i, k := range keys {
		v := vals[i].v
		if v == nil {
			v = ast.NullValue
		}
		obj.Insert(ast.InternedTerm(k), ast.NewTerm(v))
	}
	return obj
}

// Eval evaluates the entrypoint with input (a JSON tree): its value (a
// set is a list), or nil when it is undefined. It stops at the program's
// time budget or ctx's end, whichever comes first.
func (p *Program) Eval(ctx context.Context, input any) (out any, err error) {
	return p.eval1(ctx, oparego.EvalInput(input))
}

func (p *Program) eval1(ctx context.Context, in oparego.EvalOption) (out any, err error) {
	// The evaluation stops at the time budget or ctx's end: both cancel
	// it through one flag topdown polls (no goroutine per evaluation, as
	// OPA's own cancellation starts).
	stop := topdown.NewCancel()
	timer := time.AfterFunc(p.timeout, stop.Cancel)
	defer timer.Stop()
	defer context.AfterFunc(ctx, stop.Cancel)()
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v\n%s", ErrEvalPanic, r, debug.Stack())
		}
	}()
	rs, err := p.eval(ctx, in, oparego.EvalExternalCancel(stop), oparego.EvalMetrics(noMetrics))
	if err != nil {
		if stop.Cancelled() {
			return nil, fmt.Errorf("%w after %v: %s", ErrEvalTimeout, p.timeout, p.entrypoint)
		}
		return nil, err
	}
	switch {
	case len(rs) == 0:
		return nil, nil
	case p.binding != "":
		return rs[0].Bindings[p.binding], nil
	case len(rs[0].Expressions) == 0:
		return nil, nil
	}
	return rs[0].Expressions[0].Value, nil
}

// Outline is what a module declares and reads: its package path
// ("lib.exempt_container"), its imports and every reference to data in its
// rules, as written ("data.inventory.namespace"), each with its 1-based
// row, and the names of its rules.
type Outline struct {
	Package string
	Imports []DataRef
	Data    []DataRef
	Rules   []string
}

// DataRef is one reference (or import path) and its 1-based row and
// column (0 when unknown).
type DataRef struct {
	Ref      string
	Row, Col int
}

// Inspect parses m (without compiling it) and outlines it; an error is a
// *CompileError.
func Inspect(m Module) (*Outline, error) {
	v := ast.RegoV1
	if m.V0 {
		v = ast.RegoV0
	}
	pm, err := ast.ParseModuleWithOpts(m.File, m.Source, ast.ParserOptions{RegoVersion: v})
	if err != nil {
		return nil, compileErr(err)
	}
	at := func(ref string, t *ast.Term) DataRef {
		if t != nil && t.Location != nil {
			return DataRef{Ref: ref, Row: t.Location.Row, Col: t.Location.Col}
		}
		return DataRef{Ref: ref}
	}
	o := &Outline{Package: strings.TrimPrefix(pm.Package.Path.String(), "data.")}
	for _, imp := range pm.Imports {
		o.Imports = append(o.Imports, at(imp.Path.String(), imp.Path))
	}
	for _, r := range pm.Rules {
		name := r.Head.Name.String()
		if name == "" && len(r.Head.Reference) > 0 {
			name = r.Head.Reference[0].Value.String()
		}
		if !slices.Contains(o.Rules, name) {
			o.Rules = append(o.Rules, name)
		}
		ast.WalkRefs(r, func(ref ast.Ref) bool {
			if ref.HasPrefix(ast.DefaultRootRef) {
				o.Data = append(o.Data, at(ref.String(), ref[0]))
			}
			return false
		})
	}
	return o, nil
}
