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

// ErrTooManyValues is wrapped by the error Evaluate and Select return when a
// query selects more than MaxValues values, or when the nodes Select returns
// would hold more than MaxKeys captured keys in all. It bounds the memory a
// query can claim whatever the document: ".." after ".." (or a union that
// names a member twice, at several levels) selects the same nodes many times
// over, quadratically or worse in the size of the document.
var ErrTooManyValues = errors.New("jsonpath: too many values")

// MaxValues is the most values one query may select: 4 MB of values for
// Evaluate. Rules select a few values (the broadest selects in published
// ModRules are of the form $.spec.containers[*].image), and selecting every
// element of a 20,000-element array (a 130 KB ConfigMap) stays far below
// it; a query that selects the same nodes over and over reaches it first.
const MaxValues = 1 << 18

// MaxKeys is the most captured keys the nodes of one Select may hold in all
// (16 MB), counting each entry of a Descent: a '..' capture holds the whole
// relative path it went down, so on a deep document each node costs its
// depth (nodes that share a Descent share its storage, and count it once).
const MaxKeys = 1 << 20

// ErrTooMuchWork is wrapped by the error Evaluate and Select return when an
// evaluation visits more than MaxVisits nodes, or when its '..' steps go
// more than 10,000 levels down in all: ".." after ".." after ".." (cubic in
// the depth of the document) or filters nested over large arrays can take
// minutes while selecting little, and a caller without a deadline (the CLI)
// would wait for them.
var ErrTooMuchWork = errors.New("jsonpath: too much work")

// MaxVisits is the most nodes one evaluation may visit (each element or
// member a wildcard, filter, slice, union or '..' goes through counts once;
// a filter's own queries count too). Evaluating a rule's query on a real
// object visits a few thousand; 16 million take about a second.
const MaxVisits = 1 << 24

// MaxSourceLen is the longest source Parse accepts, in bytes.
const MaxSourceLen = 16 << 10

// MaxDepth is the deepest nesting of parentheses, unary operators, function
// calls and filters Parse accepts.
const MaxDepth = 64

// maxTreeDepth bounds recursive descent into a document, so that a
// pathological (or cyclic) tree ends in an error instead of exhausting the
// stack. It bounds the levels of all the '..' steps active at once in one
// evaluation (a filter inside a '..' may start another from $), so the stack
// stays proportional to it whatever the nesting of filters.
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

// limitErr is the error for a query that selected too many values or keys.
func limitErr(what string, limit int) error {
	return fmt.Errorf("%w: the query selects more than %d %s", ErrTooManyValues, limit, what)
}

var errTooMuchWork = fmt.Errorf("%w: the evaluation visits more than %d nodes", ErrTooMuchWork, MaxVisits)

// ctxError wraps a context error so that errors.Is(err, ctx.Err()) holds.
func ctxError(err error) error {
	return fmt.Errorf("jsonpath: evaluation interrupted: %w", err)
}
