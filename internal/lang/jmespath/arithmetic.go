package jmespath

import (
	"errors"
	"math"
	"strconv"
	"time"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"

	bounded "github.com/modwright/modwright/internal/lang/quantity"
)

// An operand of Kyverno's arithmetic: a JSON number (scalar), or a string
// that is a Kubernetes quantity ("12Ki", "12"), else a Go duration
// ("12s"), tried in that order, as Kyverno.
type operand struct {
	kind int // scalar, quantity or duration
	f    float64
	q    resource.Quantity
	d    time.Duration
}

const (
	scalar = iota
	quantity
	duration
)

var (
	errMismatch   = errors.New("Types mismatch")
	errZero       = errors.New("Zero divisor passed")
	errNonInteger = errors.New("Non-integer argument(s) passed for modulo")
)

func toOperand(name string, i int, v any) (operand, error) {
	switch x := v.(type) {
	case float64:
		return operand{kind: scalar, f: x}, nil
	case string:
		q, err := bounded.Parse(x)
		if err == nil {
			return operand{kind: quantity, q: q}, nil
		}
		if errors.Is(err, bounded.ErrOutOfRange) {
			return operand{}, &FunctionError{Function: name, Err: err}
		}
		if d, err := time.ParseDuration(x); err == nil {
			return operand{kind: duration, d: d}, nil
		}
		return operand{}, funcError(name, "argument #%d is neither a number, a quantity nor a duration: %q", i+1, x)
	}
	return operand{}, argError(name, i, "number, quantity or duration")
}

func operands(name string, a []any) (x, y operand, err error) {
	if x, err = toOperand(name, 0, a[0]); err != nil {
		return x, y, err
	}
	y, err = toOperand(name, 1, a[1])
	return x, y, err
}

// mismatch is the error of an operation on operands of kinds it does not
// combine.
func mismatch(name string) error { return funcError(name, "%v", errMismatch) }

// sumOf adds two operands of one kind: add and sum.
func sumOf(name string, x, y operand, sign float64) (operand, error) {
	if x.kind != y.kind {
		return operand{}, mismatch(name)
	}
	switch x.kind {
	case scalar:
		x.f += sign * y.f
	case quantity:
		if sign < 0 {
			x.q.Sub(y.q)
		} else {
			x.q.Add(y.q)
		}
	case duration:
		x.d += time.Duration(sign) * y.d
	}
	return x, nil
}

// float is an operand's value as a float64: a duration in seconds.
func (o operand) float() float64 {
	switch o.kind {
	case quantity:
		return o.q.AsApproximateFloat64()
	case duration:
		return o.d.Seconds()
	}
	return o.f
}

// result is an operand as a function result: scalars as numbers,
// quantities and durations as their text.
func (o operand) result() any {
	switch o.kind {
	case quantity:
		return o.q.String()
	case duration:
		return o.d.String()
	}
	return o.f
}

func jpAdd(a []any) (any, error) { return addSub("add", a, 1) }

func jpSubtract(a []any) (any, error) { return addSub("subtract", a, -1) }

func addSub(name string, a []any, sign float64) (any, error) {
	x, y, err := operands(name, a)
	if err != nil {
		return nil, err
	}
	r, err := sumOf(name, x, y, sign)
	if err != nil {
		return nil, err
	}
	return r.result(), nil
}

// jpSum adds the elements of an array, all of one kind.
func jpSum(a []any) (any, error) {
	items := a[0].([]any)
	if len(items) == 0 {
		return nil, funcError("sum", "at least one element in the array is required")
	}
	acc, err := toOperand("sum", 0, items[0])
	if err != nil {
		return nil, err
	}
	for i, it := range items[1:] {
		o, err := toOperand("sum", i+1, it)
		if err != nil {
			return nil, err
		}
		if acc, err = sumOf("sum", acc, o, 1); err != nil {
			return nil, err
		}
	}
	return acc.result(), nil
}

// scalarDec returns a scalar as an exact decimal (its shortest text, as
// Kyverno reads it through a quantity).
func scalarDec(name string, f float64) (*inf.Dec, error) {
	d, ok := new(inf.Dec).SetString(strconv.FormatFloat(f, 'f', -1, 64))
	if !ok {
		return nil, funcError(name, "invalid operand %v", f)
	}
	return d, nil
}

// mulQuantity returns q times f exactly, in q's format.
func mulQuantity(q resource.Quantity, f float64) (any, error) {
	d, err := scalarDec("multiply", f)
	if err != nil {
		return nil, err
	}
	return resource.NewDecimalQuantity(*new(inf.Dec).Mul(q.AsDec(), d), q.Format).String(), nil
}

// quoQuantity returns q divided by f, rounded down at the larger scale of
// the two, in q's format.
func quoQuantity(q resource.Quantity, f float64) (any, error) {
	d, err := scalarDec("divide", f)
	if err != nil {
		return nil, err
	}
	n := q.AsDec()
	scale := max(n.Scale(), d.Scale())
	return resource.NewDecimalQuantity(*new(inf.Dec).QuoRound(n, d, scale, inf.RoundDown), q.Format).String(), nil
}

// jpMultiply multiplies two scalars, or a quantity or a duration by a
// scalar (either order).
func jpMultiply(a []any) (any, error) {
	x, y, err := operands("multiply", a)
	if err != nil {
		return nil, err
	}
	if x.kind != scalar {
		x, y = y, x
	}
	if x.kind != scalar {
		return nil, mismatch("multiply")
	}
	switch y.kind {
	case quantity:
		return mulQuantity(y.q, x.f)
	case duration:
		return time.Duration(y.d.Seconds() * x.f * float64(time.Second)).String(), nil
	}
	return x.f * y.f, nil
}

// jpDivide divides scalars (a number), quantities or durations by one of
// their kind (a number), or a quantity or duration by a scalar (its kind).
func jpDivide(a []any) (any, error) {
	x, y, err := operands("divide", a)
	if err != nil {
		return nil, err
	}
	switch {
	case x.kind == y.kind:
		num, den := x.float(), y.float()
		if den == 0 {
			return nil, funcError("divide", "%v", errZero)
		}
		return num / den, nil
	case y.kind == scalar && x.kind != scalar:
		if y.f == 0 {
			return nil, funcError("divide", "%v", errZero)
		}
		if x.kind == quantity {
			return quoQuantity(x.q, y.f)
		}
		return time.Duration(x.d.Seconds() / y.f * float64(time.Second)).String(), nil
	}
	return nil, mismatch("divide")
}

// jpModulo is the remainder of two integral operands of one kind.
func jpModulo(a []any) (any, error) {
	x, y, err := operands("modulo", a)
	if err != nil {
		return nil, err
	}
	if x.kind != y.kind {
		return nil, mismatch("modulo")
	}
	if x.kind == duration {
		if y.d == 0 {
			return nil, funcError("modulo", "%v", errZero)
		}
		return (x.d % y.d).String(), nil
	}
	n, d := x.float(), y.float()
	if n != math.Trunc(n) || d != math.Trunc(d) {
		return nil, funcError("modulo", "%v", errNonInteger)
	}
	if d == 0 {
		return nil, funcError("modulo", "%v", errZero)
	}
	r := int64(n) % int64(d)
	if x.kind == quantity {
		return resource.NewQuantity(r, x.q.Format).String(), nil
	}
	return float64(r), nil
}

// jpRound rounds a number to a number of decimal places (a non-negative
// integer).
func jpRound(a []any) (any, error) {
	x, p := a[0].(float64), a[1].(float64)
	if p != math.Trunc(p) {
		return nil, funcError("round", "Non-integer argument(s) passed for round off")
	}
	if p < 0 {
		return nil, funcError("round", "argument #2 is out of bounds (%v)", p)
	}
	s := math.Pow(10, p)
	return math.Round(x*s) / s, nil
}
