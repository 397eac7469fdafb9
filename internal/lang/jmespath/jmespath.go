package jmespath

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"strconv"

	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/interpreter"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"

	"github.com/modwright/modwright/internal/lang"
)

// VarContext is the variable whose value is the document an expression is
// evaluated over (for a Kyverno-style Policy, the whole context: request,
// images, variables...). When an Activation has no such variable, the
// document is Activation.Object.
const VarContext = "context"

// Language is the JMESPath language with Kyverno's functions; its zero
// value is ready to use.
type Language struct{}

// Name returns "jmespath".
func (Language) Name() string { return "jmespath" }

// Compile parses src once; a syntax error becomes a Diagnostic at the
// library's offset. env's variables are not checked: an expression reads
// the one document Eval builds (see VarContext). The library has no
// evaluation bounds: an env asking for limits is refused.
func (l Language) Compile(env *lang.Env, src string) (lang.Program, []lang.Diagnostic) {
	p, ds := l.CompileExpr(env, src)
	if ds != nil {
		return nil, ds
	}
	return p, nil
}

// CompileExpr is Compile returning the concrete *Program.
func (Language) CompileExpr(env *lang.Env, src string) (*Program, []lang.Diagnostic) {
	if env.Limits != (lang.Limits{}) {
		return nil, []lang.Diagnostic{{Pos: -1, Msg: "environment " + strconv.Quote(env.Name) + " sets limits, which jmespath cannot honour (it has no evaluation bounds)"}}
	}
	if d := checkDepth(src); d != nil {
		return nil, []lang.Diagnostic{*d}
	}
	node, err := parse(src)
	if err != nil {
		var se parsing.SyntaxError
		if errors.As(err, &se) {
			return nil, []lang.Diagnostic{{Pos: se.Offset, Msg: err.Error()}}
		}
		return nil, []lang.Diagnostic{{Pos: -1, Msg: err.Error()}}
	}
	fs := allFunctions()
	known := make(map[string]bool, len(fs))
	for _, f := range fs {
		known[f.Name] = true
	}
	if ds := unknownCalls(src, node, known, nil); ds != nil {
		return nil, ds
	}
	return &Program{src: src, node: node, caller: caller{interpreter.NewFunctionCaller(fs...)}}, nil
}

// parse is the library's parser; a panic of it (its lexer has had some)
// is a syntax error, never a crash of the process loading the rule.
func parse(src string) (node parsing.ASTNode, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the parser panicked: %v", ErrPanic, r)
		}
	}()
	return parsing.NewParser().Parse(src)
}

// unknownCalls appends a Diagnostic for each call of a function the table
// lacks: an error at load, where the library would fail at evaluation
// (Kyverno too, only when the call is reached). The AST has no offsets:
// the position is the first "name(" in src, or -1.
func unknownCalls(src string, n parsing.ASTNode, known map[string]bool, ds []lang.Diagnostic) []lang.Diagnostic {
	if n.NodeType == parsing.ASTFunctionExpression {
		if name, ok := n.Value.(string); ok && !known[name] {
			pos := -1
			if m := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*\(`).FindStringIndex(src); m != nil {
				pos = m[0]
			}
			ds = append(ds, lang.Diagnostic{Pos: pos, Msg: "unknown function: " + name})
		}
	}
	for _, c := range n.Children {
		ds = unknownCalls(src, c, known, ds)
	}
	return ds
}

// allFunctions returns the function table's entries in order: JMESPath's
// built-ins, then Kyverno's functions (which replace a built-in of the
// same name, as in Kyverno).
func allFunctions() []functions.FunctionEntry {
	fs := functions.GetDefaultFunctions()
	return append(fs[:len(fs):len(fs)], kyvernoFunctions()...)
}

// Program is a compiled expression. It is immutable and safe for
// concurrent use.
type Program struct {
	src    string
	node   parsing.ASTNode
	caller interpreter.FunctionCaller
}

var _ lang.Program = (*Program)(nil)

// Source returns the text the expression was compiled from.
func (p *Program) Source() string { return p.src }

// Eval evaluates the expression over in.Vars[VarContext], or in.Object when
// that variable is absent. The document's json.Number values are given to
// the library as float64 (a copy of the containers holding them is made;
// a lang.Lazy is read whole), and the result comes back as a JSON value
// tree: integral numbers as json.Number integer text, others as their
// shortest float text. The evaluation is bounded (MaxWork, MaxOutput)
// and stops when ctx ends.
func (p *Program) Eval(ctx context.Context, in *lang.Activation) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	doc, ok := in.Vars[VarContext]
	if !ok {
		doc = in.Object
	}
	data, _, err := toLib(doc)
	if err != nil {
		return nil, err
	}
	res, err := p.Search(ctx, data)
	if err != nil {
		return nil, err
	}
	return fromLib(res), nil
}

// Search evaluates the expression over data, a document Prepare
// returned (or any tree in the library's form: float64 numbers), and
// returns the library's result. Evaluating many expressions over one
// document, a caller prepares it once and calls Search (then Result).
// The evaluation is the library's semantics within the bounds (MaxWork,
// MaxOutput; errors in the chain of lang.ErrLimit) and stops when ctx
// ends (its error).
func (p *Program) Search(ctx context.Context, data any) (any, error) {
	return search(ctx, p.node, p.caller, data)
}

// Prepare converts a JSON value tree to the library's form (see Eval);
// the containers holding no json.Number nor lang.Lazy are shared, not
// copied, and v is not modified.
func Prepare(v any) (any, error) {
	out, _, err := toLib(v)
	return out, err
}

// Result converts a result of Search to a JSON value tree (see Eval).
func Result(v any) any { return fromLib(v) }

// toLib converts a JSON value tree to the library's form: json.Number to
// float64, a lang.Lazy to a map of all its members. Containers holding no
// such value are returned as they are (changed is false), so a tree with
// float64 numbers only is not copied.
func toLib(v any) (out any, changed bool, err error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, false, err
		}
		return f, true, nil
	case int:
		return float64(x), true, nil
	case int64:
		return float64(x), true, nil
	case float32:
		return float64(x), true, nil
	case lang.Lazy:
		m := make(map[string]any, len(x.Names()))
		for _, k := range x.Names() {
			mv, ok, err := x.Member(k)
			if err != nil {
				return nil, false, err
			}
			if !ok {
				continue
			}
			if m[k], _, err = toLib(mv); err != nil {
				return nil, false, err
			}
		}
		return m, true, nil
	case map[string]any:
		var m map[string]any
		for k, e := range x {
			c, ch, err := toLib(e)
			if err != nil {
				return nil, false, err
			}
			if ch && m == nil {
				m = maps.Clone(x)
			}
			if m != nil {
				m[k] = c
			}
		}
		if m == nil {
			return x, false, nil
		}
		return m, true, nil
	case []any:
		var s []any
		for i, e := range x {
			c, ch, err := toLib(e)
			if err != nil {
				return nil, false, err
			}
			if ch && s == nil {
				s = make([]any, len(x))
				copy(s, x)
			}
			if s != nil {
				s[i] = c
			}
		}
		if s == nil {
			return x, false, nil
		}
		return s, true, nil
	}
	return v, false, nil
}

// fromLib converts the library's result to a JSON value tree.
func fromLib(v any) any {
	switch x := v.(type) {
	case float64:
		return number(x)
	case int:
		return json.Number(strconv.Itoa(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = fromLib(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fromLib(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	return v
}

// number renders f as a JSON number: integral values as integer text.
func number(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// Projection is a name and the compiled expression that gives its value
// (Kyverno's GlobalContextEntry projections).
type Projection struct {
	Name string
	Prog *Program
}

// Project evaluates each projection over data, a JSON value tree: an
// object of their names, each its expression's result. The error names
// the projection that failed.
func Project(ctx context.Context, data any, ps []Projection) (map[string]any, error) {
	lib, err := Prepare(data)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(ps))
	for _, p := range ps {
		v, err := p.Prog.Search(ctx, lib)
		if err != nil {
			return nil, fmt.Errorf("projection %s: %w", p.Name, err)
		}
		out[p.Name] = Result(v)
	}
	return out, nil
}
