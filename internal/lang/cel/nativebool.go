package cel

import (
	"cmp"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"

	"github.com/modwright/modwright/internal/lang"
)

// nativeBool is a condition a Program evaluates without cel-go when the
// values it reads hold what it tests: `has()` of a member; a member
// compared with a constant (==, !=, <, <=, >, >=: a string, an integer, a
// double or a bool of the same type as the constant) or looked up in a
// list of constants of its type (in); a member that is a string tested
// with startsWith, endsWith, contains or matches and a constant; a member that is
// a bool; a constant
// key looked up in a member that is a map ('team' in
// object.metadata.labels); all() and exists() over a member that is a
// list; and !, && and || of those. A member is reached from the object, a
// declared variable (variables.spec, the policy's) or an iteration
// variable, by plain steps, or by optional ones ending in
// orValue(constant).
//
// Its value and cost are then cel-go's, exactly: an attribute costs one
// and one per member selected (a has() test's last member nothing, an
// optional step's missing member nothing, orValue nothing); a comparison
// one (a string's the tenth of the shorter's code points, rounded up); !
// one; && and || nothing, each evaluated left to right until one decides
// (as cel-go's, which stops at the first false of an &&, the first true of
// an ||); `in` a list of constants nothing (cel-go looks it up in a set),
// `in` a map one; startsWith and endsWith the tenth of the constant's
// code points, contains the product of the tenths of both, matches the
// tenth of one more than the member's code points times a quarter of the
// expression's; all() two for
// its loop's condition and one for its
// step before each element, one for its result (exists() three and one).
// Anything else (a member missing on the way, null, a value of another
// type: an error, or cel-go's rules for mixed types) is left to cel-go,
// which evaluates the whole condition again and says what it says.
type nativeBool struct {
	kind boolKind
	// member is what the test reads: has, cmp, in, key, val, str; all,
	// exists: the range (a default only where memberRef gives one).
	member
	op       string         // cmp: the operator, the member on its left
	constant any            // cmp: string, int64, float64 or bool; in: an element (its type); key: the key; val: false
	set      map[any]bool   // in
	re       *regexp.Regexp // str: matches' constant, compiled
	argCost  uint64         // str: the constant's part of the cost (stringCost)
	iter     string         // all, exists: the iteration variable
	kids     []*nativeBool
	value    bool // lit
}

type boolKind uint8

const (
	boolLit boolKind = iota
	boolHas
	boolCmp
	boolIn
	boolKey
	boolVal
	boolStr
	boolAll
	boolExists
	boolNot
	boolAnd
	boolOr
)

// member is where a test reads: path from root, of which the first strict
// steps are plain (a member missing there is cel-go's error); the others
// are optional, a missing member giving def (orValue's constant; nil:
// none, the member must be there).
type member struct {
	root   root
	path   []string
	strict int
	def    any
}

// root is where a member's path starts: the object, a declared variable
// (Activation.Vars) or an iteration variable, by name.
type root struct {
	kind rootKind
	name string
}

type rootKind uint8

const (
	rootObject rootKind = iota
	rootVar
	rootIter
)

// maxIters is the deepest nesting of comprehensions evaluated natively.
const maxIters = 4

// nativeBoolOf recognizes a nativeBool in a checked expression, or nil.
// A bare constant is left to cel-go (it costs nothing there either).
func nativeBoolOf(e celast.Expr) *nativeBool {
	n := boolNode(e, nil)
	if n == nil || n.kind == boolLit {
		return nil
	}
	return n
}

func boolNode(e celast.Expr, iters []string) *nativeBool {
	switch e.Kind() {
	case celast.LiteralKind:
		if b, ok := e.AsLiteral().(types.Bool); ok {
			return &nativeBool{kind: boolLit, value: bool(b)}
		}
		return nil
	case celast.ComprehensionKind:
		return comprehension(e.AsComprehension(), iters)
	case celast.SelectKind:
		if sel := e.AsSelect(); sel.IsTestOnly() {
			op := sel.Operand()
			if op.Kind() == celast.IdentKind && op.AsIdent() == VarObject && !isIter(iters, VarObject) {
				return &nativeBool{kind: boolHas, member: member{root: root{kind: rootObject}, path: []string{sel.FieldName()}}}
			}
			r, path, _, optional, ok := refPath(op, iters)
			if !ok || optional {
				return nil
			}
			return &nativeBool{kind: boolHas, member: member{root: r, path: append(path, sel.FieldName())}}
		}
	}
	if e.Kind() == celast.CallKind && e.AsCall().IsMemberFunction() && stringTests[e.AsCall().FunctionName()] {
		return stringTest(e.AsCall(), iters)
	}
	if e.Kind() != celast.CallKind || e.AsCall().IsMemberFunction() && e.AsCall().FunctionName() != "orValue" {
		return boolMember(e, iters)
	}
	call := e.AsCall()
	args := call.Args()
	switch fn := call.FunctionName(); fn {
	case operators.LogicalNot:
		if len(args) != 1 {
			return nil
		}
		if k := boolNode(args[0], iters); k != nil {
			return &nativeBool{kind: boolNot, kids: []*nativeBool{k}}
		}
	case operators.LogicalAnd, operators.LogicalOr:
		n := &nativeBool{kind: boolAnd}
		if fn == operators.LogicalOr {
			n.kind = boolOr
		}
		for _, a := range args {
			k := boolNode(a, iters)
			if k == nil {
				return nil
			}
			n.kids = append(n.kids, k)
		}
		return n
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		if len(args) != 2 {
			return nil
		}
		for i := range 2 {
			c, ok := constantOf(args[1-i])
			if !ok {
				continue
			}
			m, ok := memberRef(args[i], iters)
			if !ok {
				continue
			}
			op := fn
			if i == 1 { // the constant on the left: the mirror operator
				op = mirrored[fn]
			}
			return &nativeBool{kind: boolCmp, member: m, op: op, constant: c}
		}
	case operators.In:
		if len(args) != 2 {
			return nil
		}
		if key, ok := stringLiteral(args[0]); ok {
			// A key of a map: 'team' in object.metadata.labels.
			r, path, _, optional, ok := refPath(args[1], iters)
			if !ok || optional {
				return nil
			}
			return &nativeBool{kind: boolKey, member: member{root: r, path: path}, constant: key}
		}
		return inList(args, iters)
	case "orValue":
		return boolMember(e, iters)
	}
	return nil
}

// stringTests are the string functions a nativeBool evaluates.
var stringTests = map[string]bool{"startsWith": true, "endsWith": true, "contains": true, "matches": true}

// stringTest is member.startsWith('c') (endsWith, contains, matches: the
// constant a regular expression, compiled as cel-go compiles it) on a
// member reached by plain steps, or nil.
func stringTest(c celast.CallExpr, iters []string) *nativeBool {
	if len(c.Args()) != 1 {
		return nil
	}
	arg, ok := stringLiteral(c.Args()[0])
	if !ok {
		return nil
	}
	m, ok := memberRef(c.Target(), iters)
	if !ok {
		return nil
	}
	n := &nativeBool{kind: boolStr, member: m, op: c.FunctionName(), constant: arg, argCost: argCost(c.FunctionName(), arg)}
	if n.op == "matches" {
		var err error
		if n.re, err = regexp.Compile(arg); err != nil {
			return nil // cel-go's error, then
		}
	}
	return n
}

// boolMember is a member that is a bool, or nil.
func boolMember(e celast.Expr, iters []string) *nativeBool {
	m, ok := memberRef(e, iters)
	if !ok {
		return nil
	}
	if _, isBool := m.def.(bool); m.def != nil && !isBool {
		return nil
	}
	return &nativeBool{kind: boolVal, member: m, constant: false}
}

// inList is a member looked up in a list of constants of one type.
func inList(args []celast.Expr, iters []string) *nativeBool {
	m, ok := memberRef(args[0], iters)
	if !ok || args[1].Kind() != celast.ListKind || len(args[1].AsList().OptionalIndices()) > 0 {
		return nil
	}
	els := args[1].AsList().Elements()
	if len(els) == 0 {
		return nil // cel-go makes `x in []` the constant false
	}
	n := &nativeBool{kind: boolIn, member: m, set: make(map[any]bool, len(els))}
	for i, el := range els {
		c, ok := constantOf(el)
		if !ok {
			return nil
		}
		switch c.(type) {
		case string, int64:
		default:
			return nil
		}
		if i == 0 {
			n.constant = c // its type: the member's must be it
		} else if !sameType(n.constant, c) {
			return nil
		}
		n.set[c] = true
	}
	return n
}

// comprehension is all() or exists() over a member, as the macros expand
// them, or nil.
func comprehension(c celast.ComprehensionExpr, iters []string) *nativeBool {
	if c.HasIterVar2() || len(iters) == maxIters {
		return nil
	}
	if c.AccuInit().Kind() != celast.LiteralKind {
		return nil
	}
	init, ok := c.AccuInit().AsLiteral().(types.Bool)
	if !ok {
		return nil
	}
	kind, join := boolAll, operators.LogicalAnd
	if !bool(init) {
		kind, join = boolExists, operators.LogicalOr
	}
	accu := c.AccuVar()
	isAccu := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == accu }
	// The condition: @not_strictly_false(accu) for all(),
	// @not_strictly_false(!accu) for exists().
	cond := c.LoopCondition()
	if cond.Kind() != celast.CallKind || cond.AsCall().FunctionName() != operators.NotStrictlyFalse || len(cond.AsCall().Args()) != 1 {
		return nil
	}
	arg := cond.AsCall().Args()[0]
	if kind == boolExists {
		if arg.Kind() != celast.CallKind || arg.AsCall().FunctionName() != operators.LogicalNot || len(arg.AsCall().Args()) != 1 {
			return nil
		}
		arg = arg.AsCall().Args()[0]
	}
	step := c.LoopStep()
	if !isAccu(arg) || !isAccu(c.Result()) || step.Kind() != celast.CallKind || step.AsCall().FunctionName() != join ||
		len(step.AsCall().Args()) != 2 || !isAccu(step.AsCall().Args()[0]) {
		return nil
	}
	r, path, _, optional, ok := refPath(c.IterRange(), iters)
	if !ok || optional {
		return nil
	}
	pred := boolNode(step.AsCall().Args()[1], append(iters[:len(iters):len(iters)], c.IterVar()))
	if pred == nil {
		return nil
	}
	return &nativeBool{kind: kind, member: member{root: r, path: path}, iter: c.IterVar(), kids: []*nativeBool{pred}}
}

// memberRef recognizes the member a test reads: a path from a root by
// plain steps (strict is its length), or with optional steps (.?f,
// [?'f']; strict is the number of plain steps before the first) ending in
// .orValue(d), d a constant (def).
func memberRef(e celast.Expr, iters []string) (member, bool) {
	var def any
	if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == "orValue" && e.AsCall().IsMemberFunction() && len(e.AsCall().Args()) == 1 {
		d, isConst := constantOf(e.AsCall().Args()[0])
		if !isConst {
			return member{}, false
		}
		def, e = d, e.AsCall().Target()
	}
	r, path, strict, optional, ok := refPath(e, iters)
	if !ok || optional != (def != nil) {
		return member{}, false
	}
	return member{root: r, path: path, strict: strict, def: def}, true
}

// refPath is the root and the members e selects from it (.f, ['f'], .?f,
// [?'f']), the number of plain steps before the first optional one, and
// whether there is one. The object needs a member selected; a variable
// (not the old object, self or the authorizer's) a member selected too;
// an iteration variable none.
func refPath(e celast.Expr, iters []string) (r root, path []string, strict int, optional, ok bool) {
	var rev []string
	firstOpt := -1 // in rev
	for {
		switch e.Kind() {
		case celast.IdentKind:
			name := e.AsIdent()
			switch {
			case isIter(iters, name):
				r = root{kind: rootIter, name: name}
			case name == VarObject && len(rev) > 0:
				r = root{kind: rootObject}
			case len(rev) > 0 && name != VarOldObject && name != VarSelf && name != VarAuthorizer && name != VarRequestResource:
				r = root{kind: rootVar, name: name}
			default:
				return root{}, nil, 0, false, false
			}
			path = make([]string, len(rev))
			for i, n := range rev {
				path[len(rev)-1-i] = n
			}
			if firstOpt < 0 {
				return r, path, len(path), false, true
			}
			return r, path, len(rev) - 1 - firstOpt, true, true
		case celast.SelectKind:
			sel := e.AsSelect()
			if sel.IsTestOnly() {
				return root{}, nil, 0, false, false
			}
			rev = append(rev, sel.FieldName())
			e = sel.Operand()
		case celast.CallKind:
			c := e.AsCall()
			name := c.FunctionName()
			if c.IsMemberFunction() || len(c.Args()) != 2 || (name != operators.Index && name != operators.OptIndex && name != operators.OptSelect) {
				return root{}, nil, 0, false, false
			}
			s, isStr := stringLiteral(c.Args()[1])
			if !isStr {
				return root{}, nil, 0, false, false
			}
			if name != operators.Index {
				firstOpt = len(rev)
			}
			rev = append(rev, s)
			e = c.Args()[0]
		default:
			return root{}, nil, 0, false, false
		}
	}
}

func isIter(iters []string, name string) bool {
	for i := len(iters) - 1; i >= 0; i-- {
		if iters[i] == name {
			return true
		}
	}
	return false
}

var mirrored = map[string]string{
	operators.Equals: operators.Equals, operators.NotEquals: operators.NotEquals,
	operators.Less: operators.Greater, operators.LessEquals: operators.GreaterEquals,
	operators.Greater: operators.Less, operators.GreaterEquals: operators.LessEquals,
}

// constantOf is a literal as the Go value a JSON tree holds for it.
func constantOf(e celast.Expr) (any, bool) {
	if e.Kind() != celast.LiteralKind {
		return nil, false
	}
	switch v := e.AsLiteral().(type) {
	case types.String:
		return string(v), true
	case types.Int:
		return int64(v), true
	case types.Double:
		return float64(v), true
	case types.Bool:
		return bool(v), true
	}
	return nil, false
}

func sameType(a, b any) bool {
	switch a.(type) {
	case string:
		_, ok := b.(string)
		return ok
	case int64:
		_, ok := b.(int64)
		return ok
	case float64:
		_, ok := b.(float64)
		return ok
	case bool:
		_, ok := b.(bool)
		return ok
	}
	return false
}

// boolEval is one native evaluation: its input and the iteration
// variables bound.
type boolEval struct {
	in     *lang.Activation
	budget uint64 // the program's cost limit: a fold past it is cel-go's
	names  [maxIters]string
	vals   [maxIters]any
	n      int
}

func (be *boolEval) rootValue(r root) (any, bool) {
	switch r.kind {
	case rootObject:
		return be.in.Object, true
	case rootIter:
		for i := be.n - 1; i >= 0; i-- {
			if be.names[i] == r.name {
				return be.vals[i], true
			}
		}
		return nil, false
	}
	v, ok := be.in.Vars[r.name]
	return v, ok
}

// eval is the condition's value and cost, and whether it is decided here
// (false: leave the whole condition to cel-go).
func (n *nativeBool) eval(be *boolEval) (bool, uint64, bool) {
	switch n.kind {
	case boolLit:
		return n.value, 0, true
	case boolNot:
		v, c, ok := n.kids[0].eval(be)
		return !v, c + 1, ok
	case boolAnd, boolOr:
		var cost uint64
		decides := n.kind == boolOr // an || stops at true, an && at false
		for _, k := range n.kids {
			v, c, ok := k.eval(be)
			if !ok {
				return false, 0, false
			}
			cost += c
			if v == decides {
				return v, cost, true
			}
		}
		return !decides, cost, true
	case boolHas:
		parent, ok := be.walk(n.root, n.path[:len(n.path)-1])
		m, isMap := asMap(parent)
		if !ok || !isMap {
			return false, 0, false
		}
		v, present := m[n.path[len(n.path)-1]]
		// The attribute and the members before the tested one.
		return present && v != nil, uint64(len(n.path)), true
	case boolKey:
		v, ok := be.walk(n.root, n.path)
		m, isMap := asMap(v)
		if !ok || !isMap {
			return false, 0, false
		}
		// The attribute, then `in` a map: one.
		member, present := m[n.constant.(string)]
		return present && member != nil, uint64(2 + len(n.path)), true
	case boolAll, boolExists:
		return n.fold(be)
	}
	v, quals, ok := be.reach(n.member)
	if !ok || !sameType(v, n.constant) {
		return false, 0, false
	}
	// The attribute and the members it selected (an optional step's
	// missing member is not one; orValue costs nothing more).
	cost := uint64(1 + quals)
	switch n.kind {
	case boolIn:
		return n.set[v], cost, true
	case boolVal:
		return v.(bool), cost, true
	case boolStr:
		if n.re != nil {
			return n.re.MatchString(v.(string)), cost + stringCost(n.op, v.(string), n.argCost), true
		}
		return stringFn(n.op, v.(string), n.constant.(string), cost+stringCost(n.op, v.(string), n.argCost))
	}
	switch c := n.constant.(type) {
	case string:
		s := v.(string)
		// The shorter's code points: s counted no further than c's.
		size := runesUpTo(s, utf8.RuneCountInString(c))
		cost += uint64(math.Ceil(float64(size) * common.StringTraversalCostFactor))
		return compare(n.op, cmp.Compare(s, c)), cost, true
	case int64:
		return compare(n.op, cmp.Compare(v.(int64), c)), cost + 1, true
	case float64:
		return compare(n.op, cmp.Compare(v.(float64), c)), cost + 1, true
	case bool:
		b := v.(bool)
		switch n.op {
		case operators.Equals:
			return b == c, cost + 1, true
		case operators.NotEquals:
			return b != c, cost + 1, true
		}
	}
	return false, 0, false // an order of bools: cel-go's
}

// fold is all() or exists() over the list at path, as cel-go's loop runs
// it: before each element its condition (all: two, exists: three), then
// its step (one, and the predicate's cost), until the accumulator decides
// (its condition is then asked once more if elements are left); then its
// result (one).
func (n *nativeBool) fold(be *boolEval) (bool, uint64, bool) {
	list, ok := be.walk(n.root, n.path)
	if !ok {
		return false, 0, false
	}
	cost := uint64(1 + len(n.path))
	condCost := uint64(2)
	decides := false // all: false decides; exists: true
	if n.kind == boolExists {
		condCost, decides = 3, true
	}
	if be.n == maxIters {
		return false, 0, false
	}
	at := be.n
	be.names[at] = n.iter
	be.n++
	defer func() { be.n--; be.vals[at] = nil }()
	l, ok := listOf(list)
	if !ok {
		return false, 0, false
	}
	size := l.size()
	for i := 0; i < size; i++ {
		if cost += condCost + 1; cost > be.budget {
			return false, 0, false
		}
		be.vals[at] = l.at(i)
		v, c, ok := n.kids[0].eval(be)
		if !ok {
			return false, 0, false
		}
		cost += c
		if v == decides {
			if i+1 < size {
				cost += condCost
			}
			return decides, cost + 1, true
		}
	}
	return !decides, cost + 1, true
}

// elems are a JSON list's or a CEL one's (a variable's value).
type elems struct {
	json []any
	cel  traits.Lister
	n    int
}

func listOf(v any) (elems, bool) {
	switch l := v.(type) {
	case []any:
		return elems{json: l, n: len(l)}, true
	case traits.Lister:
		n, ok := l.Size().(types.Int)
		return elems{cel: l, n: int(n)}, ok
	}
	return elems{}, false
}

func (l elems) size() int { return l.n }

func (l elems) at(i int) any {
	if l.cel != nil {
		return l.cel.Get(types.Int(i))
	}
	return l.json[i]
}

// asMap is a JSON object, as a Go map or as the CEL value of one.
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case jsonMap:
		return m.m, true
	}
	return nil, false
}

// scalar is a CEL value as the Go value of a JSON tree (a map, a list
// and anything else stay as they are).
func scalar(v any) any {
	switch s := v.(type) {
	case types.String:
		return string(s)
	case types.Int:
		return int64(s)
	case types.Double:
		return float64(s)
	case types.Bool:
		return bool(s)
	}
	return v
}

// step is obj's member name, and whether it is there and not null; false
// ok where cel-go fails (obj is not an object, a variable's member that is
// null or failed).
func step(obj any, name string) (v any, present bool, ok bool) {
	if lz, isLazy := obj.(lang.Lazy); isLazy {
		v, there, err := lz.Member(name)
		if err != nil || (there && v == nil) {
			return nil, false, false
		}
		return v, there, true
	}
	m, isMap := asMap(obj)
	if !isMap {
		return nil, false, false
	}
	v, present = m[name]
	return v, present && v != nil, true
}

// walk is the value at path from r, every member there and not null.
func (be *boolEval) walk(r root, path []string) (any, bool) {
	v, _, ok := be.reach(member{root: r, path: path, strict: len(path)})
	return v, ok
}

// reach is the value m reads and the members selected on the way; a
// member from m.strict on missing (or null) gives m.def when there is one;
// false where cel-go fails (a member before strict missing, a path
// through what is not an object).
func (be *boolEval) reach(m member) (any, int, bool) {
	v, ok := be.rootValue(m.root)
	if !ok {
		return nil, 0, false
	}
	for i, name := range m.path {
		next, present, ok := step(v, name)
		if !ok {
			return nil, 0, false
		}
		if !present {
			if i < m.strict || m.def == nil {
				return nil, 0, false
			}
			return m.def, i, true
		}
		v = next
	}
	return scalar(v), len(m.path), true
}

// stringFn is the string function fn of the member s and the constant
// arg, cost the cost so far (stringCost's part included).
func stringFn(fn, s, arg string, cost uint64) (bool, uint64, bool) {
	switch fn {
	case "startsWith":
		return strings.HasPrefix(s, arg), cost, true
	case "endsWith":
		return strings.HasSuffix(s, arg), cost, true
	}
	return strings.Contains(s, arg), cost, true
}

// argCost is the constant argument's part of the cost of the string
// function fn (cel-go's), computed when the expression compiles: for
// startsWith, endsWith and contains the tenth of its code points, for
// matches a quarter of them.
func argCost(fn, arg string) uint64 {
	runes := float64(utf8.RuneCountInString(arg))
	if fn == "matches" {
		return uint64(math.Ceil(runes * common.RegexStringLengthCostFactor))
	}
	return uint64(math.Ceil(runes * common.StringTraversalCostFactor))
}

// stringCost is cel-go's cost of the string function fn of the member s,
// argCost the constant's part: startsWith and endsWith argCost, contains
// argCost times the tenth of s's code points, matches argCost times the
// tenth of one more than them.
func stringCost(fn, s string, argCost uint64) uint64 {
	switch fn {
	case "startsWith", "endsWith":
		return argCost
	case "matches":
		return uint64(math.Ceil((1+float64(utf8.RuneCountInString(s)))*common.StringTraversalCostFactor)) * argCost
	}
	return uint64(math.Ceil(float64(utf8.RuneCountInString(s))*common.StringTraversalCostFactor)) * argCost
}

// runesUpTo is the number of code points of s, at most limit.
func runesUpTo(s string, limit int) int {
	n := 0
	for range s {
		if n == limit {
			break
		}
		n++
	}
	return n
}

func compare(op string, c int) bool {
	switch op {
	case operators.Equals:
		return c == 0
	case operators.NotEquals:
		return c != 0
	case operators.Less:
		return c < 0
	case operators.LessEquals:
		return c <= 0
	case operators.Greater:
		return c > 0
	}
	return c >= 0 // GreaterEquals
}
