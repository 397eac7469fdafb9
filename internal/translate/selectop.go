package translate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/jsonpath"
)

// A Patch rule's operation with a select ("select: $.spec.containers[?(...)]",
// "path: /spec/containers/#0/imagePullPolicy") as JSON Patch operations
// generated in CEL, one per selected member: the select's names up to one
// wildcard or filter, which it ends with; the path those names, the
// placeholder #0, then member names. Per member as the ModRule does: add
// creates missing (or null) parents as objects, replace needs its target
// (else the rule, atomic, does nothing), remove skips a missing one and
// removes list elements from the last. Adding a member itself (#0 last:
// an insertion into a list) is not translated.

// selection is where an operation's select leads.
type selection struct {
	prefix []string       // the names up to the list or map
	filter *jsonpath.Tree // nil: every member
	suffix []string       // the path's names after #0
}

// selectedOp reads an operation with a select.
func selectedOp(field string, op v1beta1.PatchOperation) (patchOp, string, error) {
	var none patchOp
	steps, err := parseSelect(*op.Select)
	if err != nil {
		return none, "", untranslatable("%s.select: %v", field, err)
	}
	w := slices.IndexFunc(steps, func(s step) bool { return s.wildcard })
	if w != len(steps)-1 {
		return none, "", untranslatable("%s.select: operations per selected value, unless the select ends with its only wildcard or filter", field)
	}
	sel := &selection{filter: steps[w].filter}
	if sel.filter != nil {
		if _, err := filterCond(sel.filter, "e0", "object"); err != nil {
			return none, "", untranslatable("%s.select: %v", field, err)
		}
	}
	for _, s := range steps[:w] {
		if s.isIndex {
			return none, "", untranslatable("%s.select: operations per selected value under an array position", field)
		}
		sel.prefix = append(sel.prefix, s.name)
	}
	path := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
	if !strings.HasPrefix(op.Path, "/") || len(path) <= len(sel.prefix) || path[len(sel.prefix)] != "#0" {
		return none, "", untranslatable("%s.path: %q does not name the selected member as #0 after the select's names", field, op.Path)
	}
	prefix, err := pointer("/" + strings.Join(path[:len(sel.prefix)], "/"))
	if len(sel.prefix) == 0 {
		prefix, err = nil, nil
	}
	if err != nil || !slices.Equal(prefix, sel.prefix) {
		return none, "", untranslatable("%s.path: %q does not name the selected member as #0 after the select's names", field, op.Path)
	}
	if rest := path[len(sel.prefix)+1:]; len(rest) > 0 {
		if sel.suffix, err = pointer("/" + strings.Join(rest, "/")); err != nil {
			return none, "", untranslatable("%s.path: %v", field, err)
		}
	}
	if len(sel.prefix) == 0 || sel.prefix[0] == "status" || slices.Contains(sel.prefix, "managedFields") {
		return none, "", untranslatable("%s.select: status, managedFields and the object's own members are not translated", field)
	}
	po := patchOp{op: op.Operation, tokens: sel.prefix, sel: sel}
	switch op.Operation {
	case v1beta1.PatchOperationTypeRemove:
	case v1beta1.PatchOperationTypeReplace, v1beta1.PatchOperationTypeAdd:
		if op.Operation == v1beta1.PatchOperationTypeAdd && len(sel.suffix) == 0 {
			return none, "", untranslatable("%s.path: adding the selected member itself (an insertion into a list)", field)
		}
		if po.value, err = staticValue(op.Value); err != nil {
			return none, "", untranslatable("%s.value: %v", field, err)
		}
	default:
		return none, "", untranslatable("%s.op %q", field, op.Operation)
	}
	return po, sel.pre(op.Operation), nil
}

// members are the selected members' keys (list indices or map keys, as
// the ints or strings keyOf turns into a path token) of the list or map
// l, in the order the operations need (descending indices for removals);
// list says which.
func (s *selection) members(l string, list, descending bool) string {
	keys := fmt.Sprintf("%s.map(k, k)", l)
	if list {
		keys = fmt.Sprintf("lists.range(size(%s))", l)
		if descending {
			keys = fmt.Sprintf("lists.range(size(%[1]s)).map(j, size(%[1]s) - 1 - j)", l)
		}
	}
	if s.filter == nil {
		return keys
	}
	// selectedOp checked that the filter translates.
	fc, _ := filterCond(s.filter, l+"[i]", "object")
	return fmt.Sprintf("%s.filter(i, %s)", keys, fc)
}

// each is the CEL list made of f(member key expression, member expression)
// for the selected members of both a list and a map at the prefix, "[]"
// where there is none.
func (s *selection) each(descending bool, f func(key, member, token string) string) string {
	cond, l := walkTokens("object", s.prefix)
	listTok := "string(i)"
	mapTok := "i.replace('~', '~0').replace('/', '~1')"
	return fmt.Sprintf("(%[1]s && type(%[2]s) == list ? %[3]s.map(i, %[4]s) : %[1]s && type(%[2]s) == map ? %[5]s.map(i, %[6]s) : [])",
		cond, l, s.members(l, true, descending), f("i", l+"[i]", listTok), s.members(l, false, false), f("i", l+"[i]", mapTok))
}

// pre is the condition under which none of the operation's per-member
// operations fails.
func (s *selection) pre(op v1beta1.PatchOperationType) string {
	var check func(m string) string
	switch op {
	case v1beta1.PatchOperationTypeReplace:
		if len(s.suffix) == 0 {
			return "true"
		}
		// The target exists in every selected member.
		check = func(m string) string { c, _ := walkTokens(m, s.suffix); return c }
	case v1beta1.PatchOperationTypeAdd:
		// Every member and its parents that exist are objects (or null).
		check = func(m string) string {
			cs := []string{fmt.Sprintf("type(%s) == map || type(%s) == null_type", m, m)}
			for k := 1; k < len(s.suffix); k++ {
				c, acc := walkTokens(m, s.suffix[:k])
				cs = append(cs, fmt.Sprintf("!(%s) || type(%s) == map || type(%s) == null_type", c, acc, acc))
			}
			return and(cs...)
		}
	default:
		return "true"
	}
	return fmt.Sprintf("%s.all(ok, ok)", s.each(false, func(_, m, _ string) string { return "(" + check(m) + ")" }))
}

// patches is the CEL list of the operation's JSON Patch operations.
func (s *selection) patches(op patchOp) string {
	base := pointerOf(s.prefix)
	esc := func(tokens []string) string { return pointerOf(tokens) }
	switch op.op {
	case v1beta1.PatchOperationTypeRemove:
		ops := s.each(true, func(_, m, tok string) string {
			p := fmt.Sprintf("%s + '/' + %s + %s", quote(base), tok, quote(esc(s.suffix)))
			if len(s.suffix) == 0 {
				return fmt.Sprintf("[JSONPatch{op: 'remove', path: %s}]", p)
			}
			c, _ := walkTokens(m, s.suffix)
			return fmt.Sprintf("(%s ? [JSONPatch{op: 'remove', path: %s}] : [])", c, p)
		})
		return fmt.Sprintf("%s.flatten()", ops)
	case v1beta1.PatchOperationTypeReplace:
		return s.each(false, func(_, _, tok string) string {
			return fmt.Sprintf("JSONPatch{op: 'replace', path: %s + '/' + %s + %s, value: %s}", quote(base), tok, quote(esc(s.suffix)), op.value)
		})
	}
	// add: the first missing (or null) parent is added with what is below
	// it; a null member is replaced.
	return s.each(false, func(_, m, tok string) string {
		at := func(tokens []string) string {
			return fmt.Sprintf("%s + '/' + %s + %s", quote(base), tok, quote(esc(tokens)))
		}
		expr := fmt.Sprintf("JSONPatch{op: 'add', path: %s, value: %s}", at(s.suffix), op.value)
		for k := len(s.suffix) - 1; k >= 1; k-- {
			c, acc := walkTokens(m, s.suffix[:k])
			missing := fmt.Sprintf("!(%s) || type(%s) == null_type", c, acc)
			expr = fmt.Sprintf("(%s) ? JSONPatch{op: 'add', path: %s, value: %s} : %s", missing, at(s.suffix[:k]), nested(s.suffix[k:], op.value), expr)
		}
		return fmt.Sprintf("type(%s) == null_type ? JSONPatch{op: 'replace', path: %s, value: %s} : %s", m, at(nil), nested(s.suffix, op.value), expr)
	})
}

// nested is value under the member names, as a CEL map literal.
func nested(names []string, value string) string {
	for i := len(names) - 1; i >= 0; i-- {
		value = fmt.Sprintf("{%s: %s}", quote(names[i]), value)
	}
	return value
}
