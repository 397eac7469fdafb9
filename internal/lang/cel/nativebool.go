package cel

import (
	"cmp"
	"math"
	"unicode/utf8"

	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// nativeBool is a condition a Program evaluates without cel-go when the
// object holds what it tests: `has()` of a member; a member compared with
// a constant (==, !=, <, <=, >, >=: a string, an integer, a double or a
// bool of the same type as the constant) or looked up in a list of
// constants of its type (in), the member reached by plain steps or by
// optional ones ending in orValue(constant); a constant key looked up in
// a member that is a map ('team' in object.metadata.labels); and !, &&
// and || of those. Its value and cost are then cel-go's, exactly: an
// attribute costs one and one per member selected (a has() test's last
// member nothing, an optional step's missing member nothing, orValue
// nothing); a comparison one (a string's the tenth of the shorter's code
// points, rounded up); ! one; && and || nothing, each evaluated left to
// right until one decides (as cel-go's, which stops at the first false of
// an &&, the first true of an ||); `in` a list of constants nothing
// (cel-go looks it up in a set), `in` a map one. Anything else (a member
// missing on the way, null, a value of another type: an error, or cel-go's
// rules for mixed types) is left to cel-go, which evaluates the whole
// condition again and says what it says.
type nativeBool struct {
	kind     boolKind
	path     []string // has, cmp, in, key
	strict   int      // cmp, in: the plain steps of path (memberOf)
	def      any      // cmp, in: orValue's constant, when hasDef
	hasDef   bool
	op       string       // cmp: the operator, the member on its left
	constant any          // cmp: string, int64, float64 or bool; in: an element (its type); key: the key
	set      map[any]bool // in
	kids     []*nativeBool
	value    bool // lit
}

type boolKind uint8

const (
	boolLit boolKind = iota
	boolHas
	boolCmp
	boolIn
	boolKey
	boolNot
	boolAnd
	boolOr
)

// nativeBoolOf recognizes a nativeBool in a checked expression, or nil.
// A bare constant is left to cel-go (it costs nothing there either).
func nativeBoolOf(e celast.Expr) *nativeBool {
	n := boolNode(e)
	if n == nil || n.kind == boolLit {
		return nil
	}
	return n
}

func boolNode(e celast.Expr) *nativeBool {
	switch e.Kind() {
	case celast.LiteralKind:
		if b, ok := e.AsLiteral().(types.Bool); ok {
			return &nativeBool{kind: boolLit, value: bool(b)}
		}
		return nil
	case celast.SelectKind:
		sel := e.AsSelect()
		if !sel.IsTestOnly() {
			return nil
		}
		if path := plainPath(sel.Operand()); path != nil || isObject(sel.Operand()) {
			return &nativeBool{kind: boolHas, path: append(path, sel.FieldName())}
		}
		return nil
	case celast.CallKind:
	default:
		return nil
	}
	call := e.AsCall()
	args := call.Args()
	if call.IsMemberFunction() {
		return nil
	}
	switch fn := call.FunctionName(); fn {
	case operators.LogicalNot:
		if len(args) != 1 {
			return nil
		}
		if k := boolNode(args[0]); k != nil {
			return &nativeBool{kind: boolNot, kids: []*nativeBool{k}}
		}
	case operators.LogicalAnd, operators.LogicalOr:
		n := &nativeBool{kind: boolAnd}
		if fn == operators.LogicalOr {
			n.kind = boolOr
		}
		for _, a := range args {
			k := boolNode(a)
			if k == nil {
				return nil
			}
			n.kids = append(n.kids, k)
		}
		return n
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		if len(args) != 2 {
			return nil
		}
		for i := range 2 {
			c, ok := constantOf(args[1-i])
			path, strict, def, hasDef := memberOf(args[i])
			if !ok || path == nil {
				continue
			}
			op := fn
			if i == 1 { // the constant on the left: the mirror operator
				op = mirrored[fn]
			}
			return &nativeBool{kind: boolCmp, path: path, strict: strict, def: def, hasDef: hasDef, op: op, constant: c}
		}
	case operators.In:
		if key, ok := stringLiteral(args[0]); ok {
			// A key of a map: 'team' in object.metadata.labels.
			if path := plainPath(args[1]); path != nil {
				return &nativeBool{kind: boolKey, path: path, constant: key}
			}
			return nil
		}
		path, strict, def, hasDef := memberOf(args[0])
		if path == nil || args[1].Kind() != celast.ListKind || len(args[1].AsList().OptionalIndices()) > 0 {
			return nil
		}
		els := args[1].AsList().Elements()
		if len(els) == 0 {
			return nil // cel-go makes `x in []` the constant false
		}
		n := &nativeBool{kind: boolIn, path: path, strict: strict, def: def, hasDef: hasDef, set: make(map[any]bool, len(els))}
		var first any
		for i, el := range els {
			c, ok := constantOf(el)
			if !ok {
				return nil
			}
			switch c.(type) {
			case string, int64:
			default:
				return nil
			}
			if i == 0 {
				first = c
			} else if !sameType(first, c) {
				return nil
			}
			n.set[c] = true
		}
		n.constant = first // its type: the member's must be it
		return n
	}
	return nil
}

var mirrored = map[string]string{
	operators.Equals: operators.Equals, operators.NotEquals: operators.NotEquals,
	operators.Less: operators.Greater, operators.LessEquals: operators.GreaterEquals,
	operators.Greater: operators.Less, operators.GreaterEquals: operators.LessEquals,
}

func isObject(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == VarObject }

// constantOf is a literal as the Go value a JSON tree holds for it.
func constantOf(e celast.Expr) (any, bool) {
	if e.Kind() != celast.LiteralKind {
		return nil, false
	}
	switch v := e.AsLiteral().(type) {
	case types.String:
		return string(v), true
	case types.Int:
		return int64(v), true
	case types.Double:
		return float64(v), true
	case types.Bool:
		return bool(v), true
	}
	return nil, false
}

func sameType(a, b any) bool {
	switch a.(type) {
	case string:
		_, ok := b.(string)
		return ok
	case int64:
		_, ok := b.(int64)
		return ok
	case float64:
		_, ok := b.(float64)
		return ok
	case bool:
		_, ok := b.(bool)
		return ok
	}
	return false
}

// eval is the condition's value over the object and its cost, and whether
// it is decided here (false: leave the whole condition to cel-go).
func (n *nativeBool) eval(obj any) (bool, uint64, bool) {
	switch n.kind {
	case boolLit:
		return n.value, 0, true
	case boolNot:
		v, c, ok := n.kids[0].eval(obj)
		return !v, c + 1, ok
	case boolAnd, boolOr:
		var cost uint64
		decides := n.kind == boolOr // an || stops at true, an && at false
		for _, k := range n.kids {
			v, c, ok := k.eval(obj)
			if !ok {
				return false, 0, false
			}
			cost += c
			if v == decides {
				return v, cost, true
			}
		}
		return !decides, cost, true
	case boolHas:
		parent, ok := memberAt(obj, n.path[:len(n.path)-1])
		m, isMap := parent.(map[string]any)
		if !ok || !isMap {
			return false, 0, false
		}
		v, present := m[n.path[len(n.path)-1]]
		// The attribute and the members before the tested one.
		return present && v != nil, uint64(len(n.path)), true
	}
	if n.kind == boolKey {
		v, ok := memberAt(obj, n.path)
		m, isMap := v.(map[string]any)
		if !ok || !isMap {
			return false, 0, false
		}
		// The attribute, then `in` a map: one.
		member, present := m[n.constant.(string)]
		return present && member != nil, uint64(2 + len(n.path)), true
	}
	v, quals, ok := n.member(obj)
	if !ok || !sameType(v, n.constant) {
		return false, 0, false
	}
	// The attribute and the members it selected (an optional step's
	// missing member is not one; orValue costs nothing more).
	cost := uint64(1 + quals)
	if n.kind == boolIn {
		return n.set[v], cost, true
	}
	switch c := n.constant.(type) {
	case string:
		s := v.(string)
		size := min(utf8.RuneCountInString(s), utf8.RuneCountInString(c))
		cost += uint64(math.Ceil(float64(size) * common.StringTraversalCostFactor))
		return compare(n.op, cmp.Compare(s, c)), cost, true
	case int64:
		return compare(n.op, cmp.Compare(v.(int64), c)), cost + 1, true
	case float64:
		return compare(n.op, cmp.Compare(v.(float64), c)), cost + 1, true
	case bool:
		b := v.(bool)
		switch n.op {
		case operators.Equals:
			return b == c, cost + 1, true
		case operators.NotEquals:
			return b != c, cost + 1, true
		}
	}
	return false, 0, false // an order of bools: cel-go's
}

// member is the value a comparison reads and the members selected on the
// way: at path, or, a member from strict on missing (or null), orValue's
// constant; false where cel-go fails (a plain step's member missing, a
// path through what is not an object).
func (n *nativeBool) member(obj any) (any, int, bool) {
	v := obj
	for i, name := range n.path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, 0, false
		}
		next, present := m[name]
		if !present || next == nil {
			if i < n.strict || !n.hasDef {
				return nil, 0, false
			}
			return n.def, i, true
		}
		v = next
	}
	return v, len(n.path), true
}

// memberAt is the value at path from obj through objects, and whether
// every member on the way is there (a null or a missing one is not).
func memberAt(obj any, path []string) (any, bool) {
	v := obj
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[name]; !ok || v == nil {
			return nil, false
		}
	}
	return v, true
}

func compare(op string, c int) bool {
	switch op {
	case operators.Equals:
		return c == 0
	case operators.NotEquals:
		return c != 0
	case operators.Less:
		return c < 0
	case operators.LessEquals:
		return c <= 0
	case operators.Greater:
		return c > 0
	}
	return c >= 0 // GreaterEquals
}
