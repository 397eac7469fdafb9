package kinitiras

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/modwright/modwright/internal/value"
)

// Templates of the common types run natively: the same patches and
// verdicts as their rendered CUE (template_native_test.go compares them on
// many templates and objects), without evaluating CUE per request. The
// others (resources, oversell, tolerations, affinity) run their rendered
// CUE.

// seg is one step of a reference's path: a struct field, or a list index.
type seg struct {
	key   string
	index int
	isIdx bool
}

// refPath is a reference's source name and path, as its rendered CUE
// selects them (refExpr).
func refPath(r *ResourceRef, suffix string) (root string, path []seg, ok bool) {
	expr := refExpr(&problems{}, "", r, suffix)
	if expr == "" {
		return "", nil, false
	}
	x, err := parser.ParseExpr("path", expr)
	if err != nil {
		return "", nil, false
	}
	for {
		switch e := x.(type) {
		case *ast.Ident:
			slices.Reverse(path)
			return e.Name, path, true
		case *ast.SelectorExpr:
			var name string
			switch l := e.Sel.(type) {
			case *ast.Ident:
				name = l.Name
			case *ast.BasicLit:
				s, err := literal.Unquote(l.Value)
				if err != nil {
					return "", nil, false
				}
				name = s
			default:
				return "", nil, false
			}
			path = append(path, seg{key: name})
			x = e.X
		case *ast.IndexExpr:
			lit, ok := e.Index.(*ast.BasicLit)
			if !ok {
				return "", nil, false
			}
			switch lit.Kind {
			case token.INT:
				n, err := strconv.Atoi(lit.Value)
				if err != nil {
					return "", nil, false
				}
				path = append(path, seg{index: n, isIdx: true})
			case token.STRING:
				s, err := literal.Unquote(lit.Value)
				if err != nil {
					return "", nil, false
				}
				path = append(path, seg{key: s})
			default:
				return "", nil, false
			}
			x = e.X
		default:
			return "", nil, false
		}
	}
}

// lookup follows path from v as CUE selects: a field of a struct, an
// index of a list; anything else (a missing field, a null on the way, a
// selector on a list) is not there.
func lookup(v any, path []seg) (any, bool) {
	for _, s := range path {
		if s.isIdx {
			l, ok := v.([]any)
			if !ok || s.index < 0 || s.index >= len(l) {
				return nil, false
			}
			v = l[s.index]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[s.key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// sources are the names a rendered program reads, by value.
type sources struct {
	object, oldObject any
	hasOld            bool
	extra             map[string]any
}

func (s *sources) get(root string) (any, bool) {
	switch root {
	case "object":
		return s.object, true
	case "oldObject":
		return s.oldObject, s.hasOld
	}
	v, ok := s.extra[root]
	return v, ok
}

func (s *sources) lookup(root string, path []seg) (any, bool) {
	v, ok := s.get(root)
	if !ok {
		return nil, false
	}
	return lookup(v, path)
}

// directMetadata is an annotations or labels template.
type directMetadata struct {
	field, op, key string
	consts         [][2]string // key, value: the constants set
	ref            *directRef
}

type directRef struct {
	root string
	path []seg
}

// newDirectMetadata is t run natively, or nil when it is not of a type
// that runs so (or its reference cannot be followed natively).
func newDirectMetadata(t *OverrideTemplate) *directMetadata {
	if t.Type != TypeAnnotations && t.Type != TypeLabels {
		return nil
	}
	n := &directMetadata{field: string(t.Type), op: string(t.Operation), key: t.Path}
	switch {
	case t.Operation == "remove":
	case t.Value != nil:
		c := t.Value
		if len(c.StringMap) > 0 && c.String == nil && c.Integer == nil && c.Float == nil && c.Boolean == nil &&
			len(c.StringSlice)+len(c.IntegerSlice)+len(c.FloatSlice) == 0 {
			for _, k := range sortedKeys(c.StringMap) {
				n.consts = append(n.consts, [2]string{k, c.StringMap[k]})
			}
			break
		}
		s, _ := constStr(c)
		n.consts = [][2]string{{t.Path, s}}
	case t.ValueRef != nil:
		root, path, ok := refPath(t.ValueRef, "")
		if !ok {
			return nil
		}
		n.ref = &directRef{root, path}
	}
	return n
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func jsonPatch(op, path string, v any, hasValue bool) map[string]any {
	m := map[string]any{"op": op, "path": path}
	if hasValue {
		m["value"] = v
	}
	return m
}

// patches are the template's JSON-patch operations on the object.
func (n *directMetadata) patches(src *sources) []any {
	var ops []any
	md, ok := lookup(src.object, []seg{{key: "metadata"}, {key: n.field}})
	if !ok {
		ops = append(ops, jsonPatch("replace", ptr("metadata", n.field), map[string]any{}, true))
	}
	switch {
	case n.op == "remove":
		if _, ok := lookup(md, []seg{{key: n.key}}); ok {
			ops = append(ops, jsonPatch("remove", ptr("metadata", n.field, n.key), nil, false))
		}
	case n.ref != nil:
		if v, ok := src.lookup(n.ref.root, n.ref.path); ok {
			ops = append(ops, jsonPatch(n.op, ptr("metadata", n.field, n.key), v, true))
		}
	default:
		for _, kv := range n.consts {
			ops = append(ops, jsonPatch(n.op, ptr("metadata", n.field, kv[0]), kv[1], true))
		}
	}
	return ops
}

// directCondition is a condition template.
type directCondition struct {
	cond, message string
	allow         bool
	data          directRef
	value         any // a constant (CUE's kinds: json.Number, string, bool, []any)
	ref           *directRef
	process       string // + - * /
	with          json.Number
	re            *regexp.Regexp // Regex with a constant pattern
}

// newDirectCondition is t run natively, or nil.
func newDirectCondition(t *ValidateTemplate) *directCondition {
	c := t.Condition
	if t.Type != TypeCondition || c == nil || c.DataRef == nil {
		return nil
	}
	n := &directCondition{cond: c.Cond, message: c.Message, allow: c.AffectMode == "allow"}
	root, path, ok := refPath(c.DataRef, "_d")
	if !ok {
		return nil
	}
	n.data = directRef{root, path}
	if c.Cond == "Exist" || c.Cond == "NotExist" {
		return n
	}
	switch {
	case c.ValueRef != nil:
		root, path, ok := refPath(c.ValueRef, "")
		if !ok {
			return nil
		}
		n.ref = &directRef{root, path}
	case c.Value != nil:
		v, ok := constant(c.Value)
		if !ok {
			return nil
		}
		n.value = v
	default:
		return nil
	}
	if vp := c.ValueProcess; vp != nil {
		with, err := operand(vp.OperationWith)
		if err != nil {
			return nil
		}
		n.process, n.with = vp.Operation, json.Number(with)
	}
	if s, ok := n.value.(string); ok && c.Cond == "Regex" && n.process == "" {
		re, err := regexp.Compile(s)
		if err != nil {
			return nil // the rendered program fails alike
		}
		n.re = re
	}
	return n
}

// constant is a template constant as the rendered CUE writes it.
func constant(c *ConstantValue) (any, bool) {
	switch {
	case c.String != nil:
		return *c.String, true
	case c.Integer != nil:
		return json.Number(strconv.FormatInt(*c.Integer, 10)), true
	case c.Float != nil:
		return json.Number(*c.Float), true
	case c.Boolean != nil:
		return *c.Boolean, true
	case len(c.StringSlice) > 0:
		l := make([]any, len(c.StringSlice))
		for i, s := range c.StringSlice {
			l[i] = s
		}
		return l, true
	case len(c.IntegerSlice) > 0:
		l := make([]any, len(c.IntegerSlice))
		for i, n := range c.IntegerSlice {
			l[i] = json.Number(strconv.FormatInt(n, 10))
		}
		return l, true
	case len(c.FloatSlice) > 0:
		l := make([]any, len(c.FloatSlice))
		for i, s := range c.FloatSlice {
			l[i] = json.Number(s)
		}
		return l, true
	}
	return nil, false
}

// validate is the condition's verdict.
func (n *directCondition) validate(src *sources) (valid bool, reason string, err error) {
	hit, err := n.hit(src)
	if err != nil {
		return false, "", err
	}
	if hit != n.allow {
		return false, n.message, nil
	}
	return true, "", nil
}

func (n *directCondition) hit(src *sources) (bool, error) {
	d, ok := src.lookup(n.data.root, n.data.path)
	switch n.cond {
	case "Exist":
		return ok, nil
	case "NotExist":
		return !ok, nil
	}
	if !ok {
		return false, nil
	}
	v := n.value
	if n.ref != nil {
		if v, ok = src.lookup(n.ref.root, n.ref.path); !ok {
			return false, nil
		}
	}
	if n.process != "" {
		var err error
		if v, err = arith(v, n.process, n.with); err != nil {
			return false, err
		}
	}
	switch n.cond {
	case "Equal":
		return equal(d, v), nil
	case "NotEqual":
		return !equal(d, v), nil
	case "In", "NotIn":
		l, ok := v.([]any)
		if !ok {
			return false, fmt.Errorf("validate: list.Contains needs a list, not %s", cueType(v))
		}
		in := slices.ContainsFunc(l, func(e any) bool { return sameKind(e, d) && equal(e, d) })
		return in == (n.cond == "In"), nil
	case "Regex":
		ds, ok := d.(string)
		vs, ok2 := v.(string)
		if !ok || !ok2 {
			return false, fmt.Errorf("validate: cannot use %s (type %s) as type string in =~", short(d), cueType(d))
		}
		re := n.re
		if re == nil {
			var err error
			if re, err = regexp.Compile(vs); err != nil {
				return false, fmt.Errorf("validate: %w", err)
			}
		}
		return re.MatchString(ds), nil
	}
	c, err := order(d, v, conds[n.cond])
	if err != nil {
		return false, err
	}
	switch n.cond {
	case "Gt":
		return c > 0, nil
	case "Gte":
		return c >= 0, nil
	case "Lt":
		return c < 0, nil
	case "Lte":
		return c <= 0, nil
	}
	return false, fmt.Errorf("cond %q", n.cond)
}

// number is a JSON number's exact value and whether CUE reads it as an
// int (integer text).
func number(v any) (*big.Rat, bool, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false, false
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil, false, false
	}
	_, err := strconv.ParseInt(string(n), 10, 64)
	return r, err == nil, true
}

// sameKind: int and float are different kinds to list.Contains.
func sameKind(a, b any) bool {
	_, ai, an := number(a)
	_, bi, bn := number(b)
	if an || bn {
		return an && bn && ai == bi
	}
	return true
}

// equal is CUE's ==: values of different kinds differ; numbers compare by
// value (3 == 3.0); lists and structs member by member.
func equal(a, b any) bool {
	if ra, _, ok := number(a); ok {
		rb, _, ok := number(b)
		return ok && ra.Cmp(rb) == 0
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !equal(e, f) {
				return false
			}
		}
		return true
	}
	return a == b
}

// order compares two numbers or two strings, as CUE's < and > (op is
// the operator, for the error).
func order(a, b any, op string) (int, error) {
	if ra, _, ok := number(a); ok {
		if rb, _, ok := number(b); ok {
			return ra.Cmp(rb), nil
		}
	}
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return strings.Compare(sa, sb), nil
		}
	}
	return 0, fmt.Errorf("validate: invalid operands %s and %s to '%s' (type %s and %s)", short(a), short(b), op, cueType(a), cueType(b))
}

// cueType is the name CUE's errors give a value's type.
func cueType(v any) string {
	switch v.(type) {
	case json.Number:
		if _, isInt, _ := number(v); isInt {
			return "int"
		}
		return "float"
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "null"
	case []any:
		return "list"
	}
	return "struct"
}

func short(v any) string {
	b, _ := value.Encode(v)
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// arith is CUE's v op with on numbers: int with int stays an int but for
// /, which gives a float.
func arith(v any, op string, with json.Number) (any, error) {
	a, ai, ok := number(v)
	b, bi, _ := number(with)
	if !ok {
		return nil, fmt.Errorf("validate: invalid operands %s and %s to '%s' (type %s and %s)", short(v), with, op, cueType(v), cueType(with))
	}
	r := new(big.Rat)
	switch op {
	case "+":
		r.Add(a, b)
	case "-":
		r.Sub(a, b)
	case "*":
		r.Mul(a, b)
	case "/":
		if b.Sign() == 0 {
			return nil, fmt.Errorf("validate: division by zero")
		}
		r.Quo(a, b)
		ai = false
	}
	if ai && bi && r.IsInt() {
		return json.Number(r.Num().String()), nil
	}
	return json.Number(r.FloatString(20)), nil
}
