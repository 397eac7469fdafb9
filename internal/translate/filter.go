package translate

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modwright/modwright/internal/jsonpath"
)

// A KubeMod JSONPath filter ([?(...)]) as a CEL condition on one element,
// deciding exactly as the filter does: comparisons and matches are false
// when an operand is undefined or of another type, == and != compare
// numbers by value and objects and lists deeply (CEL's heterogeneous
// equality), < and the like compare two strings or two numbers. What may
// fail to evaluate in the filter (arithmetic, length of a number, '!' of
// a value) or selects several values (a path with wildcards) is not
// translated.

// filterCond is the CEL condition under which filter t holds for the
// element e ('@'), root being the object ('$').
func filterCond(t *jsonpath.Tree, e, root string) (string, error) {
	switch t.Kind {
	case jsonpath.TreeLiteral:
		if b, ok := t.Value.(bool); ok {
			return strconv.FormatBool(b), nil
		}
		return "", fmt.Errorf("a condition that is not a boolean (it fails)")
	case jsonpath.TreeExists:
		cond, _, err := filterPath(t.X, e, root)
		return cond, err
	case jsonpath.TreeUnary:
		if t.Op != "!" {
			return "", fmt.Errorf("the operator %q in a condition", t.Op)
		}
		x, err := filterCond(t.X, e, root)
		if err != nil {
			return "", err
		}
		return "!(" + x + ")", nil
	case jsonpath.TreeCall:
		return filterCall(t, e, root)
	case jsonpath.TreeBinary:
	default:
		return "", fmt.Errorf("a condition that is not a boolean (it fails)")
	}
	switch t.Op {
	case "&&", "||":
		x, err := filterCond(t.X, e, root)
		if err != nil {
			return "", err
		}
		y, err := filterCond(t.Y, e, root)
		if err != nil {
			return "", err
		}
		return "(" + x + ") " + t.Op + " (" + y + ")", nil
	case "=~", "!~":
		cond, acc, err := filterOperand(t.X, e, root)
		if err != nil {
			return "", err
		}
		m := fmt.Sprintf("%s.matches(%s)", acc, quote(t.Regex))
		if t.Op == "!~" {
			m = "!" + m
		}
		return and(cond, fmt.Sprintf("type(%s) == string", acc), m), nil
	}
	lc, l, err := filterOperand(t.X, e, root)
	if err != nil {
		return "", err
	}
	rc, r, err := filterOperand(t.Y, e, root)
	if err != nil {
		return "", err
	}
	switch t.Op {
	case "==", "!=":
		return and(lc, rc, fmt.Sprintf("%s %s %s", l, t.Op, r)), nil
	case "<", "<=", ">", ">=":
		cmp := fmt.Sprintf("%s %s %s", l, t.Op, r)
		strs := and(fmt.Sprintf("type(%s) == string", l), fmt.Sprintf("type(%s) == string", r), cmp)
		nums := and(number(l), number(r), cmp)
		return and(lc, rc, or(strs, nums)), nil
	}
	return "", fmt.Errorf("the operator %q in a condition", t.Op)
}

// number is the CEL condition that v is a number.
func number(v string) string {
	return fmt.Sprintf("(type(%[1]s) == int || type(%[1]s) == uint || type(%[1]s) == double)", v)
}

// filterCall is a function call of a filter as a condition: isDefined,
// isUndefined, isEmpty and isNotEmpty (length may fail: not translated).
func filterCall(t *jsonpath.Tree, e, root string) (string, error) {
	var cond, acc string
	if t.X.Kind == jsonpath.TreeLiteral {
		cond, acc = "true", "dyn("+literal(t.X.Value)+")"
	} else {
		var err error
		if cond, acc, err = filterPath(t.X, e, root); err != nil {
			return "", err
		}
	}
	empty := fmt.Sprintf("!(%s) || %s == null || (type(%[2]s) == string || type(%[2]s) == list || type(%[2]s) == map) && size(%[2]s) == 0", cond, acc)
	switch t.Op {
	case "isDefined":
		return cond, nil
	case "isUndefined":
		return "!(" + cond + ")", nil
	case "isEmpty":
		return "(" + empty + ")", nil
	case "isNotEmpty":
		return "!(" + empty + ")", nil
	}
	return "", fmt.Errorf("the function %s() in a condition", t.Op)
}

// filterOperand is a comparison's operand: the condition that it is
// defined and its CEL value.
func filterOperand(t *jsonpath.Tree, e, root string) (cond, acc string, err error) {
	if t.Kind == jsonpath.TreeLiteral {
		// dyn: two literals of different types compare (false) rather
		// than fail to type-check.
		return "true", "dyn(" + literal(t.Value) + ")", nil
	}
	return filterPath(t, e, root)
}

// filterPath is a definite path of a filter ('@' the element, '$' the
// object): the condition that it is defined and its CEL value.
func filterPath(t *jsonpath.Tree, e, root string) (cond, acc string, err error) {
	switch t.Kind {
	case jsonpath.TreePath:
	case jsonpath.TreeCall:
		return "", "", fmt.Errorf("the value of %s() in a condition (it may fail)", t.Op)
	default:
		return "", "", fmt.Errorf("arithmetic in a condition (it may fail)")
	}
	steps, ok := definiteSteps(t.Steps)
	if !ok {
		return "", "", fmt.Errorf("a path selecting several values in a condition")
	}
	base := e
	if !t.Current {
		base = root
		if len(steps) > 0 && steps[0].name == "metadata" && len(steps) > 1 && steps[1].name == "managedFields" {
			return "", "", fmt.Errorf("rules do not see metadata.managedFields, admission policies do")
		}
	}
	cond, acc = walk(base, steps)
	return cond, acc, nil
}

// literal is a filter's literal as a CEL literal.
func literal(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return strconv.FormatInt(i, 10)
		}
		f, _ := v.Float64()
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	return "null"
}
