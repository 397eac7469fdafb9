package jsonpath

// Expr is a parsed expression. It is immutable and safe for concurrent use.
type Expr struct {
	src   string
	root  exprNode
	path  *pathNode // the whole expression when it is a query
	canon string
}

func newExpr(src string, root exprNode) *Expr {
	e := &Expr{src: src, root: root}
	if pn, ok := root.(*pathNode); ok {
		e.path = pn
	}
	e.canon = format(root)
	return e
}

// Source returns the text the expression was parsed from.
func (e *Expr) Source() string { return e.src }

// String returns the canonical form of the expression: deterministic,
// re-parsable, and a fixed point of Parse followed by String.
func (e *Expr) String() string { return e.canon }

// IsQuery reports whether the whole expression is a path ($... or @...)
// rather than a computed expression.
func (e *Expr) IsQuery() bool { return e.path != nil }

// Definite reports whether the expression is a query none of whose steps can
// yield more than one node: only .name, ["name"] and [n] steps.
func (e *Expr) Definite() bool { return e.path != nil && e.path.definite }

// Captures returns the number of capturing steps of a query ([*], .*,
// filters, slices, unions and '..'), which is the length of every
// Node.Keys that Select returns. It is 0 for a computed expression.
func (e *Expr) Captures() int {
	if e.path == nil {
		return 0
	}
	return e.path.captures
}
