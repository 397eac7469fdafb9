package jsonpath

import (
	"context"
	"errors"
	"slices"
	"unsafe"

	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/lang"
)

// VarObject is the variable a query's root '$' denotes: Activation.Object.
// An Env must declare it.
const VarObject = "object"

// Language is the JSONPath language; its zero value is ready to use.
type Language struct{}

// Name returns "jsonpath".
func (Language) Name() string { return "jsonpath" }

// Compile parses src against env: env must declare VarObject, and its
// MaxValues and MaxWork limits must be zero or the leaf's MaxValues and
// MaxVisits. A syntax error becomes a Diagnostic at the leaf's position.
func (l Language) Compile(env *lang.Env, src string) (lang.Program, []lang.Diagnostic) {
	p, ds := l.CompileQuery(env, src)
	if ds != nil {
		return nil, ds
	}
	return p, nil
}

// CompileQuery is Compile returning the concrete *Program.
func (l Language) CompileQuery(env *lang.Env, src string) (*Program, []lang.Diagnostic) {
	var ds []lang.Diagnostic
	if !env.Has(VarObject) {
		ds = append(ds, lang.Diagnostic{Pos: -1, Msg: "environment " + quote(env.Name) + " declares no " + quote(VarObject) + " variable for a query's root"})
	}
	if d, bad := lang.FixedLimit(l.Name(), "MaxValues", int64(env.Limits.MaxValues), jsonpath.MaxValues); bad {
		ds = append(ds, d)
	}
	if d, bad := lang.FixedLimit(l.Name(), "MaxWork", env.Limits.MaxWork, jsonpath.MaxVisits); bad {
		ds = append(ds, d)
	}
	if ds != nil {
		return nil, ds
	}
	e, err := jsonpath.Parse(src)
	if err != nil {
		var se *jsonpath.SyntaxError
		if errors.As(err, &se) {
			return nil, []lang.Diagnostic{{Pos: se.Pos, Msg: se.Msg}}
		}
		return nil, []lang.Diagnostic{{Pos: -1, Msg: err.Error()}}
	}
	return &Program{e: e, names: names(e)}, nil
}

// names is e's path as member names, or nil when it is not a path of
// names only.
func names(e *jsonpath.Expr) []string {
	pattern, ok := e.Pattern()
	if !ok || len(pattern) == 0 {
		return nil
	}
	ns := make([]string, len(pattern))
	for i, p := range pattern {
		n, ok := p.(string)
		if !ok {
			return nil
		}
		ns[i] = n
	}
	return ns
}

func quote(s string) string { return `"` + s + `"` }

// Program is a compiled query. It is immutable and safe for concurrent use.
type Program struct {
	e *jsonpath.Expr
	// names: see Names.
	names []string
}

var _ lang.Query = (*Program)(nil)

// Source returns the text the query was compiled from.
func (p *Program) Source() string { return p.e.Source() }

// Canonical returns the query's canonical form.
func (p *Program) Canonical() string { return p.e.String() }

// Eval returns the values ([]any) the query yields from in.Object.
func (p *Program) Eval(ctx context.Context, in *lang.Activation) (any, error) {
	res, err := p.e.Evaluate(ctx, in.Object)
	if err != nil {
		return nil, limit(err)
	}
	return res.Values, nil
}

// Values appends the values the query yields from root to dst (see the
// leaf's EvaluateAppend); it allocates no more than the leaf does.
func (p *Program) Values(ctx context.Context, root any, dst []any) ([]any, bool, error) {
	res, err := p.e.EvaluateAppend(ctx, root, dst)
	if err != nil {
		err = limit(err)
	}
	return res.Values, res.Single, err
}

// limit marks the leaf's bounds with lang.ErrLimit.
func limit(err error) error {
	if errors.Is(err, jsonpath.ErrTooManyValues) || errors.Is(err, jsonpath.ErrTooMuchWork) {
		return lang.Limit(err)
	}
	return err
}

// Nodes returns the selected values with the keys their capturing steps
// went through (the leaf's Keys, shared, not copied: read-only), a '..'
// step's key as a lang.Path. A computed expression has no nodes: the error
// wraps the leaf's ErrNotQuery.
func (p *Program) Nodes(ctx context.Context, root any) ([]lang.Node, error) {
	ns, _, err := p.NodesTo(ctx, root, nil, nil)
	if len(ns) == 0 {
		ns = nil
	}
	return ns, err
}

// NodesTo is Nodes appending to dst and keys (lang.Query).
func (p *Program) NodesTo(ctx context.Context, root any, dst []lang.Node, ks []any) ([]lang.Node, []any, error) {
	start := len(dst)
	// The leaf's nodes and lang's are the same (see below): dst is given
	// to the leaf as its own, and what it appends is converted in place.
	leafDst := unsafe.Slice((*jsonpath.Node)(unsafe.Pointer(unsafe.SliceData(dst))), cap(dst))[:len(dst)]
	ns, ks, err := p.e.SelectTo(ctx, root, leafDst, ks)
	if err != nil {
		return dst, ks, limit(err)
	}
	for i := start; i < len(ns); i++ {
		ns[i].Keys = keys(ns[i].Keys)
	}
	return unsafe.Slice((*lang.Node)(unsafe.Pointer(unsafe.SliceData(ns))), cap(ns))[:len(ns)], ks, nil
}

// The leaf's Node and lang.Node have the same fields of the same types at
// the same offsets (Value any, Keys []any), which Nodes relies on; these
// fail to compile otherwise.
var (
	_ [unsafe.Sizeof(jsonpath.Node{}) - unsafe.Sizeof(lang.Node{})]struct{}
	_ [unsafe.Sizeof(lang.Node{}) - unsafe.Sizeof(jsonpath.Node{})]struct{}
	_ [unsafe.Offsetof(jsonpath.Node{}.Keys) - unsafe.Offsetof(lang.Node{}.Keys)]struct{}
	_ [unsafe.Offsetof(lang.Node{}.Keys) - unsafe.Offsetof(jsonpath.Node{}.Keys)]struct{}
	_ = [1]struct{}{}[unsafe.Offsetof(lang.Node{}.Value)]
	_ = func(n jsonpath.Node) lang.Node { return lang.Node(n) } // same field names and types
)

// keys gives the leaf's keys, with each Descent as a lang.Path (a copy of
// the slice only when there is one).
func keys(ks []any) []any {
	for i, k := range ks {
		if _, ok := k.(jsonpath.Descent); !ok {
			continue
		}
		out := make([]any, len(ks))
		copy(out, ks)
		for j := i; j < len(out); j++ {
			if d, ok := out[j].(jsonpath.Descent); ok {
				out[j] = lang.Path(d)
			}
		}
		return out
	}
	return ks
}

// IsPath reports whether the query is a path, not a computed expression.
func (p *Program) IsPath() bool { return p.e.IsQuery() }

// Definite reports whether the query is a path none of whose steps can
// yield more than one node.
func (p *Program) Definite() bool { return p.e.Definite() }

// Captures returns the number of capturing steps of a path.
func (p *Program) Captures() int { return p.e.Captures() }

// PathOf is the full path of a node Nodes returned from root (the leaf's
// Expr.PathOf; a '..' key is a lang.Path).
func (p *Program) PathOf(root any, keys []any) ([]any, bool) {
	var ks []any // a copy, when a key is converted
	for i, k := range keys {
		if d, ok := k.(lang.Path); ok {
			if ks == nil {
				ks = slices.Clone(keys)
			}
			ks[i] = jsonpath.Descent(d)
		}
	}
	if ks == nil {
		ks = keys
	}
	return p.e.PathOf(root, ks)
}

// Names is the query's path when it is one of member names only
// ($.metadata.labels['app']): the same slice at each call, which the
// caller must not change (so that equal queries of a cache share it).
func (p *Program) Names() ([]string, bool) { return p.names, p.names != nil }

// Pattern is the query's path as its text says it (the leaf's
// Expr.Pattern): names, indices and jsonpath.AnyMember.
func (p *Program) Pattern() ([]any, bool) { return p.e.Pattern() }
