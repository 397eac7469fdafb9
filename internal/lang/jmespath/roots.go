package jmespath

import (
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// Roots reports which members of the document an expression may read at
// its top level: the field names it starts from ("request" in
// request.object.metadata.name), or all when it may read the document
// as a whole (@, *, $, a function of @...). A caller that builds the
// document lazily materializes only these members.
func (p *Program) Roots() (names []string, all bool) {
	seen := map[string]bool{}
	all = roots(p.node, true, seen)
	for n := range seen {
		names = append(names, n)
	}
	return names, all
}

// roots walks n; rooted says n is applied to the document itself. It
// records the fields read from the document and returns true when n may
// read the whole document.
func roots(n parsing.ASTNode, rooted bool, seen map[string]bool) bool {
	all := false
	walk := func(c parsing.ASTNode, r bool) { all = roots(c, r, seen) || all }
	switch n.NodeType {
	case parsing.ASTRootNode:
		return true
	case parsing.ASTCurrentNode, parsing.ASTIdentity:
		return rooted
	case parsing.ASTField:
		if rooted {
			if s, ok := n.Value.(string); ok {
				seen[s] = true
			}
		}
		return false
	case parsing.ASTLiteral, parsing.ASTIndex, parsing.ASTSlice, parsing.ASTVariable:
		return false
	case parsing.ASTSubexpression, parsing.ASTPipe, parsing.ASTIndexExpression,
		parsing.ASTProjection, parsing.ASTFilterProjection, parsing.ASTValueProjection:
		// The left side reads the input; the rest reads its result (or its
		// elements).
		for i, c := range n.Children {
			walk(c, rooted && i == 0)
		}
	case parsing.ASTExpRef:
		// Applied to elements, not to the input.
		for _, c := range n.Children {
			walk(c, false)
		}
	case parsing.ASTFlatten, parsing.ASTFunctionExpression, parsing.ASTComparator,
		parsing.ASTAndExpression, parsing.ASTOrExpression, parsing.ASTNotExpression,
		parsing.ASTArithmeticExpression, parsing.ASTArithmeticUnaryExpression,
		parsing.ASTMultiSelectList, parsing.ASTMultiSelectHash, parsing.ASTKeyValPair,
		parsing.ASTLetExpression, parsing.ASTBindings, parsing.ASTBinding:
		for _, c := range n.Children {
			walk(c, rooted)
		}
	default:
		return true
	}
	return all
}

// FieldPath returns the names of an expression that is a plain chain of
// fields (request.object.metadata.name), or nil. A caller uses it to tell
// a missing key (undefined, as Kyverno's "Unknown key") from a null value.
func (p *Program) FieldPath() []string {
	return fieldPath(p.node, nil)
}

func fieldPath(n parsing.ASTNode, out []string) []string {
	switch n.NodeType {
	case parsing.ASTField:
		s, _ := n.Value.(string)
		return append(out, s)
	case parsing.ASTSubexpression:
		if len(n.Children) != 2 {
			return nil
		}
		out = fieldPath(n.Children[0], out)
		if out == nil {
			return nil
		}
		return fieldPath(n.Children[1], out)
	}
	return nil
}
