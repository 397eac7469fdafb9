package translate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/modwright/modwright/api/v1beta1"
)

// A patch operation whose path ends with an array position ("/-",
// "/-1", "/0", "/-2") as JSON Patch deciding as the ModRule's patch
// engine does: on a list, "-" and "-1" append, an index in [0, len]
// inserts (add), a negative one counts from the end; a missing or null
// list is created with the value when the position is "-", "-1" or "0";
// on an object the position is a member name. Positions elsewhere in a
// path are not translated.

// canonicalPosition is a position the patch engine reads as one ("-", or
// an integer without leading zeros).
var canonicalPosition = regexp.MustCompile(`^(-|0|-?[1-9][0-9]{0,8})$`)

// splitPosition splits a path ending with an array position into its
// member names and the position; ok is false for any other path.
func splitPosition(path string) (names []string, pos string, ok bool) {
	i := strings.LastIndex(path, "/")
	if i <= 0 || !canonicalPosition.MatchString(path[i+1:]) {
		return nil, "", false
	}
	names, err := pointer(path[:i])
	if err != nil {
		return nil, "", false
	}
	return names, path[i+1:], true
}

// positionPre is the condition under which the operation does not fail
// (the rule, atomic, changes nothing when one fails).
func positionPre(op v1beta1.PatchOperationType, names []string, pos string) (string, error) {
	cond, acc := walkTokens("object", names)
	n, _ := strconv.Atoi(pos)
	isList := fmt.Sprintf("type(%s) == list", acc)
	isMap := fmt.Sprintf("type(%s) == map", acc)
	member := fmt.Sprintf("%s in %s", quote(pos), acc)
	switch op {
	case v1beta1.PatchOperationTypeAdd:
		// The parents that exist are objects (or null: replaced); the
		// list, when there is one, takes the position.
		var cs []string
		for k := 1; k < len(names); k++ {
			c, a := walkTokens("object", names[:k])
			cs = append(cs, fmt.Sprintf("!(%s) || type(%s) == map || type(%s) == null_type", c, a, a))
		}
		inList := "true"
		switch {
		case pos == "-" || n >= 0:
			if pos != "-" && n > 0 {
				inList = fmt.Sprintf("%d <= size(%s)", n, acc)
			}
		default:
			if n != -1 {
				inList = fmt.Sprintf("size(%s) + 1 + (%d) >= 0", acc, n)
			}
		}
		created := pos == "-" || pos == "0" || pos == "-1"
		missing := fmt.Sprintf("!(%s) || type(%s) == null_type", cond, acc)
		if !created {
			missing = "false"
		}
		cs = append(cs, fmt.Sprintf("(%s) || (%s) && (%s && (%s) || %s)", missing, cond, isList, inList, isMap))
		return and(cs...), nil
	case v1beta1.PatchOperationTypeReplace:
		if pos == "-" {
			return "", fmt.Errorf("replace at /-")
		}
		return fmt.Sprintf("(%s) && (%s && %s || %s && %s)", cond, isList, inRange(acc, n), isMap, member), nil
	}
	if pos == "-" {
		return "", fmt.Errorf("remove at /-")
	}
	return "true", nil
}

// inRange is the condition that position n names an element of list l.
func inRange(l string, n int) string {
	if n >= 0 {
		return fmt.Sprintf("%d < size(%s)", n, l)
	}
	return fmt.Sprintf("size(%s) + (%d) >= 0", l, n)
}

// index is the element index position n names in list l (a CEL string).
func index(l string, n int) string {
	if n >= 0 {
		return quote(strconv.Itoa(n))
	}
	return fmt.Sprintf("string(size(%s) + (%d))", l, n)
}

// positionPatch is the CEL list of the operation's JSON Patch operation.
func positionPatch(op patchOp) string {
	names, pos := op.tokens[:len(op.tokens)-1], op.tokens[len(op.tokens)-1]
	cond, acc := walkTokens("object", names)
	n, _ := strconv.Atoi(pos)
	base := quote(pointerOf(names) + "/")
	asMember := quote(pointerOf(op.tokens))
	isList := fmt.Sprintf("type(%s) == list", acc)
	switch op.op {
	case v1beta1.PatchOperationTypeRemove:
		return fmt.Sprintf("(%[1]s && %[2]s && %[3]s ? [JSONPatch{op: 'remove', path: %[4]s + %[5]s}] : %[1]s && type(%[6]s) == map && %[7]s in %[6]s ? [JSONPatch{op: 'remove', path: %[8]s}] : [])",
			cond, isList, inRange(acc, n), base, index(acc, n), acc, quote(pos), asMember)
	case v1beta1.PatchOperationTypeReplace:
		return fmt.Sprintf("[%s ? JSONPatch{op: 'replace', path: %s + %s, value: %s} : JSONPatch{op: 'replace', path: %s, value: %s}]",
			isList, base, index(acc, n), op.value, asMember, op.value)
	}
	// add: where the list goes.
	at := quote("-")
	switch {
	case pos == "-" || pos == "-1":
	case n >= 0:
		at = quote(pos)
	default:
		at = fmt.Sprintf("string(size(%s) + 1 + (%d))", acc, n)
	}
	return fmt.Sprintf("[!(%[1]s) || type(%[2]s) == null_type ? JSONPatch{op: 'add', path: %[3]s, value: [%[4]s]} : %[5]s ? JSONPatch{op: 'add', path: %[6]s + %[7]s, value: %[4]s} : JSONPatch{op: 'add', path: %[8]s, value: %[4]s}]",
		cond, acc, quote(pointerOf(names)), op.value, isList, base, at, asMember)
}
