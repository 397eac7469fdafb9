package jsonpath

import (
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by every error Parse returns.
var ErrSyntax = errors.New("jsonpath: syntax error")

// ErrEval is wrapped by every error an expression itself causes during
// evaluation (type errors, division by zero, a non-boolean filter, ...).
// Cancellation is reported differently: see Expr.Evaluate.
var ErrEval = errors.New("jsonpath: evaluation error")

// ErrNotQuery is returned by Select for a computed expression.
var ErrNotQuery = errors.New("jsonpath: not a query")

// MaxSourceLen is the longest source Parse accepts, in bytes.
const MaxSourceLen = 16 << 10

// MaxDepth is the deepest nesting of parentheses, unary operators, function
// calls and filters Parse accepts.
const MaxDepth = 64

// maxTreeDepth bounds recursive descent into a document, so that a
// pathological (or cyclic) tree ends in an error instead of exhausting the
// stack.
const maxTreeDepth = 10000

// SyntaxError is a parse error. Pos is the 0-based byte offset in the source
// of the offending token.
type SyntaxError struct {
	Pos int
	Msg string
}

// Error renders the error with a 1-based column: Pos 12 is column 13.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%v at column %d: %s", ErrSyntax, e.Pos+1, e.Msg)
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// EvalError is an evaluation error. Pos is the 0-based byte offset in the
// source of the node that failed (the operator of a binary or unary
// expression, the name of a function, the '[' of a filter).
type EvalError struct {
	Pos int
	Msg string
}

// Error renders the error with a 1-based column.
func (e *EvalError) Error() string {
	return fmt.Sprintf("%v at column %d: %s", ErrEval, e.Pos+1, e.Msg)
}

// Unwrap returns ErrEval.
func (e *EvalError) Unwrap() error { return ErrEval }

func syntaxErr(pos int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func evalErr(pos int, format string, args ...any) *EvalError {
	return &EvalError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// ctxError wraps a context error so that errors.Is(err, ctx.Err()) holds.
func ctxError(err error) error {
	return fmt.Errorf("jsonpath: evaluation interrupted: %w", err)
}
