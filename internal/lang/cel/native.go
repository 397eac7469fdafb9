package cel

import (
	"math"
	"unicode/utf8"

	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/modwright/modwright/internal/lang"
)

// nativeValue is an expression a Program evaluates without cel-go when
// the object holds what it expects: a string of the object, alone or
// joined to a constant (`object.metadata.name + '-x'`, the value of many
// a mutation). Its value and cost are then cel-go's, exactly (an
// attribute costs one and one per member selected, a string's + the
// tenth of the code points joined, rounded up: cel-go's runtime cost);
// anything else (a member missing, null, a value of another type, a
// cost over the budget, a result over MaxOutput) is left to cel-go, which
// says what it says.
type nativeValue struct {
	path           []string
	prefix, suffix string // the constant joined before or after, if any
	concat         bool
	litRunes       int
}

// nativeValueOf recognizes a nativeValue in a checked expression, or nil.
func nativeValueOf(e celast.Expr) *nativeValue {
	if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == operators.Add && !e.AsCall().IsMemberFunction() && len(e.AsCall().Args()) == 2 {
		args := e.AsCall().Args()
		for i := range 2 {
			lit, ok := stringLiteral(args[1-i])
			if !ok {
				continue
			}
			path := plainPath(args[i])
			if path == nil {
				return nil
			}
			n := &nativeValue{path: path, concat: true, litRunes: utf8.RuneCountInString(lit)}
			if i == 0 {
				n.suffix = lit
			} else {
				n.prefix = lit
			}
			return n
		}
		return nil
	}
	if path := plainPath(e); path != nil {
		return &nativeValue{path: path}
	}
	return nil
}

// plainPath is the members e selects from object with plain steps (.f,
// ['f']), or nil.
func plainPath(e celast.Expr) []string {
	r, path, _, optional, ok := refPath(e, nil)
	if !ok || optional || r.kind != rootObject {
		return nil
	}
	return path
}

// memberOf is memberRef of a member of the object.
func memberOf(e celast.Expr) (member, bool) {
	m, ok := memberRef(e, nil)
	return m, ok && m.root.kind == rootObject
}

// eval is the value and cost over in, and whether it is one (false: leave
// it to cel-go). budget is the program's cost limit.
func (n *nativeValue) eval(in *lang.Activation, budget uint64) (refVal, uint64, bool) {
	if in == nil {
		return nil, 0, false
	}
	be := boolEval{in: in}
	v, ok := be.walk(root{kind: rootObject}, n.path)
	s, isStr := v.(string)
	if !ok || !isStr {
		return nil, 0, false
	}
	// The attribute: one for the variable, one for each member.
	cost := uint64(1 + len(n.path))
	if n.concat {
		if len(s)+len(n.prefix)+len(n.suffix) > MaxOutput {
			return nil, 0, false // cel-go's + refuses it (guardAdd)
		}
		cost += uint64(math.Ceil(float64(utf8.RuneCountInString(s)+n.litRunes) * common.StringTraversalCostFactor))
		s = n.prefix + s + n.suffix
	}
	if cost > budget {
		return nil, 0, false
	}
	return types.String(s), cost, true
}
