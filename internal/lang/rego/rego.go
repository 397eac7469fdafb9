package rego

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	oparego "github.com/open-policy-agent/opa/v1/rego"
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

// Module is one Rego source file.
type Module struct {
	File, Source string
}

// Program is modules and an entrypoint compiled once. It is immutable and
// safe for concurrent use.
type Program struct {
	entrypoint string
	// eval is the prepared query's Eval (a test replaces it to reach the
	// panic guard).
	eval    func(ctx context.Context, opts ...oparego.EvalOption) (oparego.ResultSet, error)
	timeout time.Duration
}

// Compile compiles modules (Rego v1) for a query of entrypoint
// (data.pkg.rule); timeout is the evaluation budget, clamped. An error
// wraps ErrCompile and names the file and position.
func Compile(ctx context.Context, entrypoint string, timeout time.Duration, modules ...Module) (*Program, error) {
	opts := []func(*oparego.Rego){oparego.Query(entrypoint), oparego.Capabilities(capabilities()), oparego.StrictBuiltinErrors(true)}
	for _, m := range modules {
		// Parsed here, not by rego.New, which flattens parse errors to text.
		pm, err := ast.ParseModuleWithOpts(m.File, m.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrCompile, compileText(err))
		}
		opts = append(opts, oparego.ParsedModule(pm))
	}
	pq, err := oparego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCompile, compileText(err))
	}
	t, _ := ClampTimeout(timeout)
	return &Program{entrypoint: entrypoint, eval: pq.Eval, timeout: t}, nil
}

// compileText is OPA's compile errors one per line as file:row:col:
// message (without OPA's echo of the source line).
func compileText(err error) string {
	var errs ast.Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		return err.Error()
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		loc := ""
		if e.Location != nil {
			loc = fmt.Sprintf("%s:%d:%d: ", e.Location.File, e.Location.Row, e.Location.Col)
		}
		lines[i] = loc + e.Message
	}
	return strings.Join(lines, "; ")
}

// Eval evaluates the entrypoint with input (a JSON tree): its value (a
// set is a list), or nil when it is undefined. It stops at the program's
// time budget or ctx's end, whichever comes first.
func (p *Program) Eval(ctx context.Context, input any) (out any, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v\n%s", ErrEvalPanic, r, debug.Stack())
		}
	}()
	rs, err := p.eval(ctx, oparego.EvalInput(input))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w after %v: %s", ErrEvalTimeout, p.timeout, p.entrypoint)
		}
		return nil, err
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, nil
	}
	return rs[0].Expressions[0].Value, nil
}
