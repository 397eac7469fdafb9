package cel

import (
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// orValueCompatName is the function x.orValue(y) is rewritten to when
// Language.OrValueCompat is set.
const orValueCompatName = "__orValueCompat__"

// orValueCompat are the options that make x.orValue(y) accept any x, as
// cel-go did before v0.28 and as Kyverno's CEL policies still expect: an
// optional gives its value or y; any other value is returned as it is
// (cel-go v0.28 answers "no such overload"). Kyverno's CEL environment
// does the same (a macro rewriting the call, and a function).
func orValueCompat() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Macros(cel.ReceiverMacro("orValue", 1, func(eh cel.MacroExprFactory, target celast.Expr, args []celast.Expr) (celast.Expr, *cel.Error) {
			return eh.NewCall(orValueCompatName, target, args[0]), nil
		})),
		cel.Function(orValueCompatName,
			cel.Overload(orValueCompatName+"_dyn_dyn", []*cel.Type{cel.DynType, cel.DynType}, cel.DynType,
				cel.BinaryBinding(func(lhs, rhs ref.Val) ref.Val {
					if o, ok := lhs.(*types.Optional); ok {
						if o.HasValue() {
							return o.GetValue()
						}
						return rhs
					}
					return lhs
				}))),
	}
}
