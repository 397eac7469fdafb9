package cel

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/quantity"
)

// MaxOutput bounds the size in bytes (elements, for a list) of the result
// of a call that can multiply its arguments (replace, join, +,
// lists.range): the call is refused before it allocates, with an error in
// lang.ErrLimit's chain. cel-go charges a call's cost only after it ran,
// so a per-call budget alone lets one call allocate without bound
// (a replace of the empty string, through variables).
const MaxOutput = 16 << 20

// ErrTooLarge is the error of a call refused by MaxOutput.
var ErrTooLarge = errors.New("cel: result exceeds the output bound")

// guard checks a call's evaluated arguments before the call runs: nil to
// let it run, else the error it fails with.
type guard func(args []ref.Val) error

// guards are the functions whose calls are checked, by name: those that
// can multiply their arguments, and the quantity library's parsing
// (apimachinery's arithmetic on "1e999999999" does not end).
var guards = map[string]guard{
	"replace":     guardReplace,
	"join":        guardJoin,
	"lists.range": guardRange,
	"_+_":         guardAdd,
	"quantity":    guardQuantity,
	"isQuantity":  guardQuantity,
}

// boundCalls returns the decorator that replaces each call of a guarded
// function by one that checks its arguments, evaluated once, then calls
// the same implementation (found in env's bindings by the call's
// overload, else its function's dynamic dispatch).
func boundCalls(env *cel.Env) (cel.ProgramOption, error) {
	impls := map[string]*functions.Overload{}
	for name, decl := range env.Functions() {
		if _, ok := guards[name]; !ok {
			continue
		}
		bs, err := decl.Bindings()
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			impls[name+"/"+b.Operator] = b
		}
	}
	return cel.CustomDecorator(func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok {
			return i, nil
		}
		g, ok := guards[call.Function()]
		if !ok {
			return i, nil
		}
		impl := impls[call.Function()+"/"+call.OverloadID()]
		if impl == nil {
			impl = impls[call.Function()+"/"+call.Function()]
		}
		if impl == nil {
			return i, nil // no binding: the planner's own error stands
		}
		op := overloadOp(impl)
		return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
			if err := g(args); err != nil {
				return types.WrapErr(err)
			}
			return op(args...)
		}), nil
	}), nil
}

// overloadOp is an overload's implementation as a function of any arity.
func overloadOp(o *functions.Overload) functions.FunctionOp {
	return func(args ...ref.Val) ref.Val {
		switch {
		case len(args) == 1 && o.Unary != nil:
			return o.Unary(args[0])
		case len(args) == 2 && o.Binary != nil:
			return o.Binary(args[0], args[1])
		case o.Function != nil:
			return o.Function(args...)
		}
		return types.NoSuchOverloadErr()
	}
}

func tooLarge(function string, size int) error {
	return lang.Limit(fmt.Errorf("%w: %s would give about %d bytes, at most %d", ErrTooLarge, function, size, MaxOutput))
}

// guardReplace: s.replace(old, new[, n]) gives len(s) plus, per
// replacement (every occurrence of old, every position when old is
// empty, at most n), len(new) - len(old).
func guardReplace(args []ref.Val) error {
	if len(args) < 3 {
		return nil
	}
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 || len(repl) <= len(old) {
		return nil
	}
	var count int
	if old == "" {
		count = utf8.RuneCountInString(string(s)) + 1
	} else {
		count = strings.Count(string(s), string(old))
	}
	if len(args) > 3 {
		if n, ok := args[3].(types.Int); ok && n >= 0 && int64(n) < int64(count) {
			count = int(n)
		}
	}
	if size := len(s) + count*(len(repl)-len(old)); size > MaxOutput {
		return tooLarge("replace", size)
	}
	return nil
}

// guardJoin: list.join([sep]) gives the sum of the elements' lengths and
// a separator between each two.
func guardJoin(args []ref.Val) error {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return nil
	}
	sep := 0
	if len(args) > 1 {
		if s, ok := args[1].(types.String); ok {
			sep = len(s)
		}
	}
	size := 0
	it := l.Iterator()
	for it.HasNext() == types.True {
		if s, ok := it.Next().(types.String); ok {
			size += len(s)
		}
		if size += sep; size > MaxOutput {
			return tooLarge("join", size)
		}
	}
	return nil
}

// guardRange: lists.range(n) allocates n elements.
func guardRange(args []ref.Val) error {
	if n, ok := args[0].(types.Int); ok && n > MaxOutput/16 {
		return tooLarge("lists.range", int(min(int64(n), 1<<40))*16)
	}
	return nil
}

// guardAdd: a + b of strings, bytes or lists gives both (doubling a value
// through variables is cheap to write).
func guardAdd(args []ref.Val) error {
	if len(args) != 2 {
		return nil
	}
	size := 0
	for _, a := range args {
		switch x := a.(type) {
		case types.String:
			size += len(x)
		case types.Bytes:
			size += len(x)
		case traits.Lister:
			if n, ok := x.Size().(types.Int); ok {
				size += int(n) * 16
			}
		default:
			return nil
		}
	}
	if size > MaxOutput {
		return tooLarge("+", size)
	}
	return nil
}

// guardQuantity: quantity(s) and isQuantity(s) refuse a string beyond
// package quantity's bounds.
func guardQuantity(args []ref.Val) error {
	if s, ok := args[0].(types.String); ok {
		return quantity.Check(string(s))
	}
	return nil
}
