package jsonpath

// exprNode is a node of an expression tree: *litNode, *pathNode,
// *existsNode, *unaryNode, *binaryNode or *callNode. The evaluator switches
// on the concrete type.
type exprNode interface {
	position() int
}

// litNode is a literal: string, json.Number, bool or nil.
type litNode struct {
	pos int
	val any
}

// pathNode is a query: a root ($ or @) followed by steps.
type pathNode struct {
	pos      int
	current  bool // rooted at '@'
	steps    []step
	definite bool // only name and index steps
	captures int  // number of capturing steps
}

// existsNode is an existence test: a query in a boolean position inside a
// filter. It is true when the query selects at least one value.
type existsNode struct {
	path *pathNode
}

// unaryNode is '!' x or '-' x.
type unaryNode struct {
	pos int
	op  tokKind
	x   exprNode
}

// binaryNode is l op r. re is the compiled right operand of =~ and !~.
type binaryNode struct {
	pos  int // of the operator
	op   tokKind
	l, r exprNode
	re   *Matcher
}

type funcKind uint8

const (
	fnLength funcKind = iota
	fnIsDefined
	fnIsUndefined
	fnIsEmpty
	fnIsNotEmpty
)

var funcNames = [...]string{
	fnLength:      "length",
	fnIsDefined:   "isDefined",
	fnIsUndefined: "isUndefined",
	fnIsEmpty:     "isEmpty",
	fnIsNotEmpty:  "isNotEmpty",
}

func lookupFunc(name string) (funcKind, bool) {
	for i, n := range funcNames {
		if n == name {
			return funcKind(i), true
		}
	}
	return 0, false
}

// callNode is a call of a built-in function with one argument.
type callNode struct {
	pos int
	fn  funcKind
	arg exprNode
}

func (n *litNode) position() int    { return n.pos }
func (n *pathNode) position() int   { return n.pos }
func (n *existsNode) position() int { return n.path.pos }
func (n *unaryNode) position() int  { return n.pos }
func (n *binaryNode) position() int { return n.pos }
func (n *callNode) position() int   { return n.pos }

type stepKind uint8

const (
	sName     stepKind = iota // .name or ["name"]
	sIndex                    // [n]
	sWildcard                 // [*] or .*
	sUnion                    // [a,b,...]
	sSlice                    // [start:end:step]
	sFilter                   // [?(expr)]
	sDescent                  // .. (always followed by another step)
)

// selector is one member of a union.
type selector struct {
	name    string
	index   int
	isIndex bool
}

type sliceSpec struct {
	start, end, step          int
	hasStart, hasEnd, hasStep bool
}

type step struct {
	kind   stepKind
	pos    int
	name   string
	index  int
	union  []selector
	slice  sliceSpec
	filter exprNode
}

func (s *step) capturing() bool {
	return s.kind != sName && s.kind != sIndex
}
