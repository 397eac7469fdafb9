package jsonpath

// Tree is a read-only view of a parsed expression, for translators to
// other languages (internal/translate writes filters as CEL): what each
// node is, with its operands. Evaluation does not use it.
type Tree struct {
	Kind TreeKind
	// Value is a literal's: string, json.Number, bool or nil.
	Value any
	// Current: a path rooted at '@' (the filter's element), not '$'.
	Current bool
	Steps   []TreeStep // a path's
	// Op is a unary or binary operator ("!", "-", "==", "=~", "&&", ...)
	// or a function's name (length, isDefined, isUndefined, isEmpty,
	// isNotEmpty).
	Op string
	// Regex is the pattern of =~ and !~ (Go's regexp syntax, matched
	// anywhere in the string).
	Regex string
	X, Y  *Tree // operands: X alone for unary nodes, calls and exists
}

// TreeKind is what a Tree node is.
type TreeKind uint8

// The kinds of Tree nodes.
const (
	TreeLiteral TreeKind = iota
	TreePath             // $... or @...
	TreeExists           // a path in a boolean position of a filter: X
	TreeUnary            // Op X
	TreeBinary           // X Op Y
	TreeCall             // Op(X)
)

// TreeStep is a path's step.
type TreeStep struct {
	Kind   StepKind
	Name   string // StepName
	Index  int    // StepIndex (negative: from the end)
	Filter *Tree  // StepFilter
}

// StepKind is what a path step selects.
type StepKind uint8

// The kinds of steps.
const (
	StepName     StepKind = iota // .name or ["name"]
	StepIndex                    // [n]
	StepWildcard                 // [*] or .*
	StepUnion                    // [a,b,...]
	StepSlice                    // [start:end:step]
	StepFilter                   // [?(expr)]
	StepDescent                  // ..
)

// Tree is the expression's tree.
func (e *Expr) Tree() *Tree { return treeOf(e.root) }

func treeOf(n exprNode) *Tree {
	switch n := n.(type) {
	case *litNode:
		return &Tree{Kind: TreeLiteral, Value: n.val}
	case *pathNode:
		t := &Tree{Kind: TreePath, Current: n.current}
		for i := range n.steps {
			st := &n.steps[i]
			ts := TreeStep{Kind: StepKind(st.kind), Name: st.name, Index: st.index}
			if st.kind == sFilter {
				ts.Filter = treeOf(st.filter)
			}
			t.Steps = append(t.Steps, ts)
		}
		return t
	case *existsNode:
		return &Tree{Kind: TreeExists, X: treeOf(n.path)}
	case *unaryNode:
		return &Tree{Kind: TreeUnary, Op: opText[n.op], X: treeOf(n.x)}
	case *binaryNode:
		t := &Tree{Kind: TreeBinary, Op: opText[n.op], X: treeOf(n.l), Y: treeOf(n.r)}
		if n.re != nil {
			t.Regex = n.re.String()
		}
		return t
	case *callNode:
		return &Tree{Kind: TreeCall, Op: funcNames[n.fn], X: treeOf(n.arg)}
	}
	return nil
}
