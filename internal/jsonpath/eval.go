package jsonpath

import (
	"context"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/modwright/modwright/internal/value"
)

// Result is what Evaluate returns.
type Result struct {
	// Values are the values the expression yields, in order; undefined values
	// are dropped.
	Values []any
	// Single is true when the expression yields at most one value by
	// construction: a definite query or a computed (non-query) expression.
	Single bool
}

// Node is a value selected by a query together with the keys its capturing
// steps went through.
type Node struct {
	Value any
	// Keys holds one entry per capturing step, in path order: an int for an
	// array index, a string for an object key, a Descent for a '..' step.
	// It is nil when the query has no capturing step. Nodes may share a
	// Descent: treat Keys as read-only.
	Keys []any
}

// Descent is the relative path (ints and strings) a '..' step went down to
// reach the node the following step started from. It may be empty.
type Descent []any

// Evaluate evaluates the expression against root (also the value of a
// top-level '@'). For a query, the result holds the selected values in
// order; for a computed expression, its single value, or nothing when it is
// undefined.
//
// Evaluate never modifies root. Errors caused by the expression wrap ErrEval
// (see EvalError); a query that selects more than MaxValues values fails
// with an error wrapping ErrTooManyValues; when ctx is done, the error wraps
// ctx.Err() instead.
func (e *Expr) Evaluate(ctx context.Context, root any) (Result, error) {
	return e.EvaluateAppend(ctx, root, nil)
}

// EvaluateAppend is Evaluate with the values appended to buf (into its spare
// capacity when there is room), so that a caller evaluating many expressions
// can use one backing array: pass a zero-length slice with capacity and
// Result.Values holds just the new values.
func (e *Expr) EvaluateAppend(ctx context.Context, root any, buf []any) (Result, error) {
	buf = buf[:len(buf):cap(buf)]
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return Result{}, ctxError(err)
	}
	if pn := e.path; pn != nil {
		if pn.definite {
			v, ok := lookup(pn.steps, root)
			if !ok {
				return Result{Values: buf, Single: true}, nil
			}
			return Result{Values: append(buf, v), Single: true}, nil
		}
		ev := evaluator{ctx: ctx, root: root, cur: root, maxVisits: MaxVisits}
		s := sink{mode: modeValues, vals: buf}
		if err := ev.walk(pn.steps, root, &s); err != nil {
			return Result{}, err
		}
		return Result{Values: s.vals}, nil
	}
	ev := evaluator{ctx: ctx, root: root, cur: root, maxVisits: MaxVisits}
	v, ok, err := ev.eval(e.root)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{Values: buf, Single: true}, nil
	}
	return Result{Values: append(buf, v), Single: true}, nil
}

// Select evaluates a query and returns the selected nodes with the keys their
// capturing steps went through, in the same order as Evaluate. It returns
// ErrNotQuery for a computed expression, and an error wrapping
// ErrTooManyValues beyond MaxValues nodes or MaxKeys captured keys.
func (e *Expr) Select(ctx context.Context, root any) ([]Node, error) {
	nodes, _, err := e.SelectTo(ctx, root, nil, nil)
	return nodes, err
}

// SelectTo is Select appending the nodes to dst and their captured keys to
// keys (each node's Keys a capped slice of it): a caller that reuses them
// from one query to the next allocates neither. The nodes are valid until
// the caller reuses dst or keys.
func (e *Expr) SelectTo(ctx context.Context, root any, dst []Node, keys []any) ([]Node, []any, error) {
	pn := e.path
	if pn == nil {
		return dst, keys, ErrNotQuery
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return dst, keys, ctxError(err)
	}
	if pn.definite {
		v, ok := lookup(pn.steps, root)
		if !ok {
			return dst, keys, nil
		}
		return append(dst, Node{Value: v}), keys, nil
	}
	ev := evaluator{ctx: ctx, root: root, cur: root, maxVisits: MaxVisits}
	s := sink{mode: modeNodes, nodes: dst, arena: keys}
	if err := ev.walk(pn.steps, root, &s); err != nil {
		return dst, keys, err
	}
	return s.nodes, s.arena, nil
}

// evaluator holds the state of one evaluation.
type evaluator struct {
	ctx   context.Context
	root  any // $
	cur   any // @
	ticks uint
	// maxVisits is MaxVisits (a field so that tests can lower it).
	maxVisits uint
	depth     int // levels of the active '..' steps
}

// tick counts a visited node and checks the context and MaxVisits every
// 1024 of them.
func (ev *evaluator) tick() error {
	ev.ticks++
	if ev.ticks&1023 == 0 {
		if ev.ticks > ev.maxVisits {
			return errTooMuchWork
		}
		if err := ev.ctx.Err(); err != nil {
			return ctxError(err)
		}
	}
	return nil
}

func (ev *evaluator) start(pn *pathNode) any {
	if pn.current {
		return ev.cur
	}
	return ev.root
}

// eval evaluates an expression node. ok is false when the value is
// undefined.
func (ev *evaluator) eval(n exprNode) (v any, ok bool, err error) {
	switch n := n.(type) {
	case *litNode:
		return n.val, true, nil
	case *pathNode:
		if n.definite {
			v, ok := lookup(n.steps, ev.start(n))
			return v, ok, nil
		}
		s := sink{mode: modeValues, vals: []any{}}
		if err := ev.walk(n.steps, ev.start(n), &s); err != nil {
			return nil, false, err
		}
		return s.vals, true, nil
	case *existsNode:
		found, err := ev.exists(n.path)
		return found, true, err
	case *unaryNode:
		return ev.unary(n)
	case *binaryNode:
		return ev.binary(n)
	case *callNode:
		return ev.call(n)
	}
	return nil, false, nil
}

// exists reports whether a query selects at least one value.
func (ev *evaluator) exists(pn *pathNode) (bool, error) {
	if pn.definite {
		_, ok := lookup(pn.steps, ev.start(pn))
		return ok, nil
	}
	s := sink{mode: modeExists}
	err := ev.walk(pn.steps, ev.start(pn), &s)
	if err == errStop {
		return true, nil
	}
	return false, err
}

// count returns the number of values a query selects.
func (ev *evaluator) count(pn *pathNode) (int, error) {
	s := sink{mode: modeCount}
	err := ev.walk(pn.steps, ev.start(pn), &s)
	return s.n, err
}

func typeOf(v any, ok bool) string {
	if !ok {
		return "undefined"
	}
	return value.TypeName(v)
}

func (ev *evaluator) unary(n *unaryNode) (any, bool, error) {
	x, ok, err := ev.eval(n.x)
	if err != nil {
		return nil, false, err
	}
	if n.op == tNot {
		b, isBool := x.(bool)
		if !ok || !isBool {
			return nil, false, evalErr(n.pos, "the operand of '!' must be a boolean, got %s", typeOf(x, ok))
		}
		return !b, true, nil
	}
	if !ok {
		return nil, false, nil
	}
	if i, isInt := value.ExactInt(x); isInt && i != math.MinInt64 {
		return -i, true, nil
	}
	if f, isNum := value.Float(x); isNum {
		return -f, true, nil
	}
	return nil, false, evalErr(n.pos, "cannot negate a %s", value.TypeName(x))
}

func (ev *evaluator) boolOperand(n *binaryNode, side string, x exprNode) (bool, error) {
	v, ok, err := ev.eval(x)
	if err != nil {
		return false, err
	}
	b, isBool := v.(bool)
	if !ok || !isBool {
		return false, evalErr(n.pos, "the %s operand of '%s' must be a boolean, got %s", side, opText[n.op], typeOf(v, ok))
	}
	return b, nil
}

func (ev *evaluator) binary(n *binaryNode) (any, bool, error) {
	switch n.op {
	case tAnd, tOr:
		l, err := ev.boolOperand(n, "left", n.l)
		if err != nil {
			return nil, false, err
		}
		if l != (n.op == tAnd) { // false && x, true || x
			return l, true, nil
		}
		r, err := ev.boolOperand(n, "right", n.r)
		if err != nil {
			return nil, false, err
		}
		return r, true, nil
	case tMatch, tNotMatch:
		l, ok, err := ev.eval(n.l)
		if err != nil {
			return nil, false, err
		}
		s, isStr := l.(string)
		if !ok || !isStr {
			return false, true, nil
		}
		return n.re.MatchString(s) == (n.op == tMatch), true, nil
	}
	l, lok, err := ev.eval(n.l)
	if err != nil {
		return nil, false, err
	}
	r, rok, err := ev.eval(n.r)
	if err != nil {
		return nil, false, err
	}
	switch n.op {
	case tEq:
		return lok && rok && equal(l, r), true, nil
	case tNe:
		return lok && rok && !equal(l, r), true, nil
	case tLt, tLe, tGt, tGe:
		return lok && rok && compare(n.op, l, r), true, nil
	}
	if !lok || !rok {
		return nil, false, nil
	}
	return arith(n, l, r)
}

// equal is value.Equal with a shortcut for the common string case.
func equal(a, b any) bool {
	if x, ok := a.(string); ok {
		y, ok := b.(string)
		return ok && x == y
	}
	return value.Equal(a, b)
}

func compare(op tokKind, l, r any) bool {
	var c int
	if ls, ok := l.(string); ok {
		rs, ok := r.(string)
		if !ok {
			return false
		}
		c = strings.Compare(ls, rs)
	} else {
		var ok bool
		if c, ok = value.CompareNumbers(l, r); !ok {
			return false
		}
	}
	switch op {
	case tLt:
		return c < 0
	case tLe:
		return c <= 0
	case tGt:
		return c > 0
	}
	return c >= 0
}

func arith(n *binaryNode, l, r any) (any, bool, error) {
	if n.op == tPlus {
		if ls, ok := l.(string); ok {
			if rs, ok := r.(string); ok {
				return ls + rs, true, nil
			}
		}
	}
	if n.op != tSlash {
		if a, ok := value.ExactInt(l); ok {
			if b, ok := value.ExactInt(r); ok {
				if v, ok, err := intArith(n, a, b); ok || err != nil {
					return v, ok, err
				}
			}
		}
	}
	a, aok := value.Float(l)
	b, bok := value.Float(r)
	if !aok || !bok {
		return nil, false, evalErr(n.pos, "cannot apply '%s' to %s and %s", opText[n.op], value.TypeName(l), value.TypeName(r))
	}
	var res float64
	switch n.op {
	case tPlus:
		res = a + b
	case tMinus:
		res = a - b
	case tStar:
		res = a * b
	case tSlash:
		if b == 0 {
			return nil, false, evalErr(n.pos, "division by zero")
		}
		res = a / b
	case tPercent:
		if b == 0 {
			return nil, false, evalErr(n.pos, "modulo by zero")
		}
		res = math.Mod(a, b)
	}
	if math.IsInf(res, 0) || math.IsNaN(res) {
		return nil, false, evalErr(n.pos, "result of '%s' is not a finite number", opText[n.op])
	}
	return res, true, nil
}

// intArith does integer arithmetic; ok is false on overflow, so that the
// caller falls back to float64.
func intArith(n *binaryNode, a, b int64) (any, bool, error) {
	switch n.op {
	case tPlus:
		s := a + b
		if (a^s)&(b^s) < 0 {
			return nil, false, nil
		}
		return s, true, nil
	case tMinus:
		s := a - b
		if (a^b)&(a^s) < 0 {
			return nil, false, nil
		}
		return s, true, nil
	case tStar:
		if a == 0 || b == 0 {
			return int64(0), true, nil
		}
		s := a * b
		if s/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
			return nil, false, nil
		}
		return s, true, nil
	case tPercent:
		if b == 0 {
			return nil, false, evalErr(n.pos, "modulo by zero")
		}
		if b == -1 {
			return int64(0), true, nil
		}
		return a % b, true, nil
	}
	return nil, false, nil
}

func (ev *evaluator) call(n *callNode) (any, bool, error) {
	pn, isQuery := n.arg.(*pathNode)
	multi := isQuery && !pn.definite
	switch n.fn {
	case fnLength:
		if multi {
			c, err := ev.count(pn)
			if err != nil {
				return nil, false, err
			}
			return int64(c), true, nil
		}
		v, ok, err := ev.eval(n.arg)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return int64(0), true, nil
		}
		switch x := v.(type) {
		case nil:
			return int64(0), true, nil
		case []any:
			return int64(len(x)), true, nil
		case map[string]any:
			return int64(len(x)), true, nil
		case string:
			return int64(utf8.RuneCountInString(x)), true, nil
		}
		return nil, false, evalErr(n.pos, "length of a %s is undefined (length takes an array, an object, a string or null)", value.TypeName(v))
	case fnIsDefined, fnIsUndefined:
		var defined bool
		if multi {
			found, err := ev.exists(pn)
			if err != nil {
				return nil, false, err
			}
			defined = found
		} else {
			_, ok, err := ev.eval(n.arg)
			if err != nil {
				return nil, false, err
			}
			defined = ok
		}
		return defined == (n.fn == fnIsDefined), true, nil
	default: // fnIsEmpty, fnIsNotEmpty
		var empty bool
		if multi {
			found, err := ev.exists(pn)
			if err != nil {
				return nil, false, err
			}
			empty = !found
		} else {
			v, ok, err := ev.eval(n.arg)
			if err != nil {
				return nil, false, err
			}
			empty = isEmptyValue(v, ok)
		}
		return empty == (n.fn == fnIsEmpty), true, nil
	}
}

func isEmptyValue(v any, ok bool) bool {
	if !ok {
		return true
	}
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
