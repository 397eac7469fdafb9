package jmespath

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/jmespath-community/go-jmespath/pkg/binding"
	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/interpreter"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
	"github.com/jmespath-community/go-jmespath/pkg/util"

	"github.com/modwright/modwright/internal/lang"
)

// The bounds of one evaluation (docs/serve.md#limits). The library's own
// interpreter has none, and cannot be interrupted: Search evaluates the
// library's syntax tree itself, with the library's semantics (checked
// against it by FuzzEvaluate), counting its work, sizing what it builds
// and checking its context as it goes.
const (
	// MaxWork bounds the steps of one evaluation: each node evaluated
	// counts one, each element of a list or object built elementSteps (so
	// at most 250,000 elements, about 4 MB of slots, are built), a
	// function's string result one per 64 bytes.
	MaxWork = 1_000_000
	// elementSteps is what building one element costs in steps.
	elementSteps = 4
	// MaxOutput bounds the size of any value an evaluation builds or a
	// function returns, in bytes of a rough in-memory measure (16 per
	// scalar, a string's length on top, 24 per container and 16 per
	// element, an object's keys): a value referenced twice counts twice,
	// as printing it would. Functions that can multiply their input
	// (replace_all, pad_left, join, regex_replace_all, to_string...) are
	// refused before they allocate a result beyond it.
	MaxOutput = 16 << 20
	// checkEvery is how many steps pass between two looks at the
	// context.
	checkEvery = 256
)

// ErrTooMuchWork and ErrTooLarge are the bounds an evaluation hits; both
// are in the chain of lang.ErrLimit.
var (
	ErrTooMuchWork = errors.New("jmespath: evaluation exceeds its work budget")
	ErrTooLarge    = errors.New("jmespath: value exceeds the output bound")
	// ErrPanic is the error of an evaluation that panicked.
	ErrPanic = errors.New("jmespath: evaluation panicked")
)

// evaluator is one evaluation: the library's tree-walking semantics with
// bounds.
type evaluator struct {
	ctx      context.Context
	root     any
	table    interpreter.FunctionCaller
	bindings binding.Bindings
	work     int
	// sizes memoizes the size of containers this evaluation built or
	// measured, keyed by their data pointer, so a value shared by many
	// others is measured once.
	sizes map[unsafe.Pointer]int
}

// search evaluates node over data within the bounds.
// A panic of the evaluation (a function's, or of a syntax tree the
// parser let through malformed) is its error.
func search(ctx context.Context, node parsing.ASTNode, funcs interpreter.FunctionCaller, data any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%w: %v", ErrPanic, r)
		}
	}()
	ev := &evaluator{ctx: ctx, root: data, table: funcs, bindings: binding.NewBindings()}
	return ev.exec(node, data)
}

// step counts n steps and looks at the context every checkEvery.
func (ev *evaluator) step(n int) error {
	before := ev.work
	ev.work += n
	if ev.work > MaxWork {
		return lang.Limit(fmt.Errorf("%w (%d steps)", ErrTooMuchWork, MaxWork))
	}
	if before/checkEvery != ev.work/checkEvery {
		if err := ev.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func tooLarge(size int) error {
	return lang.Limit(fmt.Errorf("%w (%d bytes, at most %d)", ErrTooLarge, size, MaxOutput))
}

// The sizes of the measure (see MaxOutput).
const (
	scalarSize    = 16
	containerSize = 24
	elementSize   = 16
)

// size measures v, stopping once it passes MaxOutput.
func (ev *evaluator) size(v any) int {
	switch x := v.(type) {
	case string:
		return scalarSize + len(x)
	case []any:
		if len(x) == 0 {
			return containerSize
		}
		key := unsafe.Pointer(unsafe.SliceData(x))
		if s, ok := ev.sizes[key]; ok {
			return s
		}
		s := containerSize
		for _, e := range x {
			if s += elementSize + ev.size(e); s > MaxOutput {
				break
			}
		}
		ev.remember(key, s)
		return s
	case map[string]any:
		if len(x) == 0 {
			return containerSize
		}
		key := reflect.ValueOf(x).UnsafePointer()
		if s, ok := ev.sizes[key]; ok {
			return s
		}
		s := containerSize
		for k, e := range x {
			if s += elementSize + len(k) + ev.size(e); s > MaxOutput {
				break
			}
		}
		ev.remember(key, s)
		return s
	case nil, bool, float64:
		return scalarSize
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		s := containerSize
		for i := 0; i < rv.Len() && s <= MaxOutput; i++ {
			s += elementSize + ev.size(rv.Index(i).Interface())
		}
		return s
	}
	return scalarSize
}

func (ev *evaluator) remember(key unsafe.Pointer, s int) {
	if ev.sizes == nil {
		ev.sizes = make(map[unsafe.Pointer]int)
	}
	ev.sizes[key] = s
}

// list is the builder of a list: it counts each element as a step and
// its size, and refuses a list beyond MaxOutput.
type list struct {
	ev    *evaluator
	items []any
	size  int
}

func (ev *evaluator) newList(capacity int) list {
	return list{ev: ev, items: make([]any, 0, capacity), size: containerSize}
}

func (l *list) add(v any) error {
	if err := l.ev.step(elementSteps); err != nil {
		return err
	}
	l.size += elementSize + l.ev.size(v)
	if l.size > MaxOutput {
		return tooLarge(l.size)
	}
	l.items = append(l.items, v)
	return nil
}

func (l *list) done() []any {
	if len(l.items) > 0 {
		l.ev.remember(unsafe.Pointer(unsafe.SliceData(l.items)), l.size)
	}
	return l.items
}

// asList returns v as a []any: itself, or a slice of another element
// type (a function's result) copied, as the library reads those through
// reflection.
func (ev *evaluator) asList(v any) ([]any, bool, error) {
	if s, ok := v.([]any); ok {
		return s, true, nil
	}
	if !util.IsSliceType(v) {
		return nil, false, nil
	}
	rv := reflect.ValueOf(v)
	l := ev.newList(rv.Len())
	for i := 0; i < rv.Len(); i++ {
		if err := l.add(rv.Index(i).Interface()); err != nil {
			return nil, false, err
		}
	}
	return l.done(), true, nil
}

// exec evaluates node over value, as the library's interpreter does.
func (ev *evaluator) exec(node parsing.ASTNode, value any) (any, error) {
	if err := ev.step(1); err != nil {
		return nil, err
	}
	switch node.NodeType {
	case parsing.ASTArithmeticUnaryExpression:
		return ev.unary(node, value)
	case parsing.ASTArithmeticExpression:
		return ev.arithmetic(node, value)
	case parsing.ASTComparator:
		return ev.comparator(node, value)
	case parsing.ASTExpRef:
		body := node.Children[0]
		return functions.ExpRef(func(data any) (any, error) { return ev.exec(body, data) }), nil
	case parsing.ASTFunctionExpression:
		return ev.function(node, value)
	case parsing.ASTField:
		if m, ok := value.(map[string]any); ok {
			return m[node.Value.(string)], nil
		}
		return nil, nil
	case parsing.ASTFilterProjection:
		return ev.filterProjection(node, value)
	case parsing.ASTFlatten:
		return ev.flatten(node, value)
	case parsing.ASTIdentity, parsing.ASTCurrentNode:
		return value, nil
	case parsing.ASTRootNode:
		return ev.root, nil
	case parsing.ASTBindings:
		return ev.bind(node, value)
	case parsing.ASTLetExpression:
		saved := ev.bindings
		defer func() { ev.bindings = saved }()
		if _, err := ev.exec(node.Children[0], value); err != nil {
			return nil, err
		}
		return ev.exec(node.Children[1], value)
	case parsing.ASTVariable:
		return ev.bindings.Get(node.Value.(string))
	case parsing.ASTIndex:
		return ev.index(node.Value.(int), value)
	case parsing.ASTKeyValPair:
		return ev.exec(node.Children[0], value)
	case parsing.ASTLiteral:
		return node.Value, nil
	case parsing.ASTMultiSelectHash:
		return ev.multiSelectHash(node, value)
	case parsing.ASTMultiSelectList:
		return ev.multiSelectList(node, value)
	case parsing.ASTOrExpression:
		v, err := ev.exec(node.Children[0], value)
		if err != nil || !util.IsFalse(v) {
			return v, err
		}
		return ev.exec(node.Children[1], value)
	case parsing.ASTAndExpression:
		v, err := ev.exec(node.Children[0], value)
		if err != nil || util.IsFalse(v) {
			return v, err
		}
		return ev.exec(node.Children[1], value)
	case parsing.ASTNotExpression:
		v, err := ev.exec(node.Children[0], value)
		if err != nil {
			return nil, err
		}
		return util.IsFalse(v), nil
	case parsing.ASTPipe:
		cur := value
		for _, c := range node.Children {
			v, err := ev.exec(c, cur)
			if err != nil {
				return nil, err
			}
			cur = v
		}
		return cur, nil
	case parsing.ASTProjection:
		return ev.projection(node, value)
	case parsing.ASTSubexpression, parsing.ASTIndexExpression:
		left, err := ev.exec(node.Children[0], value)
		if err != nil || left == nil {
			return nil, err
		}
		return ev.exec(node.Children[1], left)
	case parsing.ASTSlice:
		return ev.slice(node, value)
	case parsing.ASTValueProjection:
		return ev.valueProjection(node, value)
	}
	return nil, unknownNode(node)
}

// unary evaluates a unary + or -.
func (ev *evaluator) unary(node parsing.ASTNode, value any) (any, error) {
	v, err := ev.exec(node.Children[0], value)
	if err != nil {
		return nil, err
	}
	n, ok := v.(float64)
	if !ok {
		return nil, nil
	}
	if node.Value == parsing.TOKMinus {
		return -n, nil
	}
	if node.Value == parsing.TOKPlus {
		return n, nil
	}
	return nil, unknownNode(node)
}

// function evaluates a function call's arguments, then the call.
func (ev *evaluator) function(node parsing.ASTNode, value any) (any, error) {
	args := make([]any, 0, len(node.Children))
	for _, c := range node.Children {
		v, err := ev.exec(c, value)
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	return ev.call(node.Value.(string), args)
}

// bind evaluates a let expression's bindings into ev.bindings.
func (ev *evaluator) bind(node parsing.ASTNode, value any) (any, error) {
	for _, c := range node.Children {
		if len(c.Children) != 2 || c.Children[0].NodeType != parsing.ASTVariable {
			return nil, errors.New("invalid let binding") // the parser lets some through
		}
		v, err := ev.exec(c.Children[1], value)
		if err != nil {
			return nil, err
		}
		ev.bindings = ev.bindings.Register(c.Children[0].Value.(string), v)
	}
	return value, nil
}

// multiSelectList evaluates [a, b, ...].
func (ev *evaluator) multiSelectList(node parsing.ASTNode, value any) (any, error) {
	l := ev.newList(len(node.Children))
	for _, c := range node.Children {
		v, err := ev.exec(c, value)
		if err != nil {
			return nil, err
		}
		if err := l.add(v); err != nil {
			return nil, err
		}
	}
	return l.done(), nil
}

func unknownNode(node parsing.ASTNode) error {
	return errors.New("Unknown AST node: " + node.NodeType.String())
}

// operands evaluates a binary node's two sides.
func (ev *evaluator) operands(node parsing.ASTNode, value any) (left, right any, err error) {
	if left, err = ev.exec(node.Children[0], value); err != nil {
		return nil, nil, err
	}
	right, err = ev.exec(node.Children[1], value)
	return left, right, err
}

// numbers returns both operands when both are numbers; an operation on
// anything else gives null, as in the library.
func numbers(left, right any) (l, r float64, ok bool) {
	l, okl := left.(float64)
	r, okr := right.(float64)
	return l, r, okl && okr
}

func (ev *evaluator) arithmetic(node parsing.ASTNode, value any) (any, error) {
	left, right, err := ev.operands(node, value)
	if err != nil {
		return nil, err
	}
	l, r, ok := numbers(left, right)
	if !ok {
		return nil, nil
	}
	switch node.Value {
	case parsing.TOKPlus:
		return l + r, nil
	case parsing.TOKMinus:
		return l - r, nil
	case parsing.TOKStar, parsing.TOKMultiply:
		return l * r, nil
	case parsing.TOKDivide:
		return l / r, nil
	case parsing.TOKModulo:
		return math.Mod(l, r), nil
	case parsing.TOKDiv:
		return math.Floor(l / r), nil
	}
	return nil, unknownNode(node)
}

func (ev *evaluator) comparator(node parsing.ASTNode, value any) (any, error) {
	left, right, err := ev.operands(node, value)
	if err != nil {
		return nil, err
	}
	switch node.Value {
	case parsing.TOKEQ:
		return util.ObjsEqual(left, right), nil
	case parsing.TOKNE:
		return !util.ObjsEqual(left, right), nil
	}
	l, r, ok := numbers(left, right)
	if !ok {
		return nil, nil
	}
	switch node.Value {
	case parsing.TOKGT:
		return l > r, nil
	case parsing.TOKGTE:
		return l >= r, nil
	case parsing.TOKLT:
		return l < r, nil
	case parsing.TOKLTE:
		return l <= r, nil
	}
	return nil, unknownNode(node)
}

func (ev *evaluator) index(i int, value any) (any, error) {
	s, ok := value.([]any)
	if !ok {
		if !util.IsSliceType(value) {
			return nil, nil
		}
		rv := reflect.ValueOf(value)
		if i < 0 {
			i += rv.Len()
		}
		if i >= 0 && i < rv.Len() {
			return rv.Index(i).Interface(), nil
		}
		return nil, nil
	}
	if i < 0 {
		i += len(s)
	}
	if i >= 0 && i < len(s) {
		return s[i], nil
	}
	return nil, nil
}

// filterProjection is left[?cond].right; as the library, an error of the
// left side gives null.
func (ev *evaluator) filterProjection(node parsing.ASTNode, value any) (any, error) {
	items, ok, err := ev.lenientList(node, value)
	if !ok {
		return nil, err
	}
	return ev.project(node.Children[1], &node.Children[2], items)
}

// lenientList is a node's left side as a list, for filters and flattens:
// ok is false (the node gives null) when it is not a list or its
// evaluation failed (lenientLeft).
func (ev *evaluator) lenientList(node parsing.ASTNode, value any) (items []any, ok bool, err error) {
	left, stop, err := ev.lenientLeft(node, value)
	if stop {
		return nil, false, err
	}
	items, ok, err = ev.asList(left)
	return items, ok && err == nil, err
}

// lenientLeft evaluates a node's left side as the library does for
// filters, flattens and value projections: an error gives null (stop is
// true, err nil), but a bound hit or an ended context stays the
// evaluation's error.
func (ev *evaluator) lenientLeft(node parsing.ASTNode, value any) (left any, stop bool, err error) {
	left, err = ev.exec(node.Children[0], value)
	if err == nil {
		return left, false, nil
	}
	if errors.Is(err, lang.ErrLimit) || ev.ctx.Err() != nil {
		return nil, true, err
	}
	return nil, true, nil
}

// flatten is left[]; as the library, an error of the left side gives
// null.
func (ev *evaluator) flatten(node parsing.ASTNode, value any) (any, error) {
	items, ok, err := ev.lenientList(node, value)
	if !ok {
		return nil, err
	}
	l := ev.newList(len(items))
	for _, e := range items {
		if !util.IsSliceType(e) {
			if err := l.add(e); err != nil {
				return nil, err
			}
			continue
		}
		inner, _, err := ev.asList(e)
		if err != nil {
			return nil, err
		}
		for _, x := range inner {
			if err := l.add(x); err != nil {
				return nil, err
			}
		}
	}
	return l.done(), nil
}

func (ev *evaluator) multiSelectHash(node parsing.ASTNode, value any) (any, error) {
	out := make(map[string]any, len(node.Children))
	size := containerSize
	for _, c := range node.Children {
		v, err := ev.exec(c, value)
		if err != nil {
			return nil, err
		}
		if err := ev.step(elementSteps); err != nil {
			return nil, err
		}
		key := c.Value.(string)
		if old, ok := out[key]; ok {
			size -= elementSize + len(key) + ev.size(old)
		}
		if size += elementSize + len(key) + ev.size(v); size > MaxOutput {
			return nil, tooLarge(size)
		}
		out[key] = v
	}
	if len(out) > 0 {
		ev.remember(reflect.ValueOf(out).UnsafePointer(), size)
	}
	return out, nil
}

// projection is left[*].right (and the string slice's special case: the
// library lets a sliced string through unprojected).
func (ev *evaluator) projection(node parsing.ASTNode, value any) (any, error) {
	allowString := false
	if first := node.Children[0]; first.NodeType == parsing.ASTIndexExpression &&
		len(first.Children) > 1 && first.Children[1].NodeType == parsing.ASTSlice {
		allowString = true
	}
	left, err := ev.exec(node.Children[0], value)
	if err != nil {
		return nil, err
	}
	items, ok, err := ev.asList(left)
	if err != nil {
		return nil, err
	}
	if !ok {
		if s, isString := left.(string); allowString && isString {
			return s, nil
		}
		return nil, nil
	}
	return ev.project(node.Children[1], nil, items)
}

// project evaluates rhs over each item (for which cond, when not nil,
// holds), keeping the non-null results.
func (ev *evaluator) project(rhs parsing.ASTNode, cond *parsing.ASTNode, items []any) (any, error) {
	l := ev.newList(0)
	for _, e := range items {
		if cond != nil {
			c, err := ev.exec(*cond, e)
			if err != nil {
				return nil, err
			}
			if util.IsFalse(c) {
				continue
			}
		}
		v, err := ev.exec(rhs, e)
		if err != nil {
			return nil, err
		}
		if v != nil {
			if err := l.add(v); err != nil {
				return nil, err
			}
		}
	}
	return l.done(), nil
}

// valueProjection is left.*.right; as the library, an error of the left
// side gives null.
func (ev *evaluator) valueProjection(node parsing.ASTNode, value any) (any, error) {
	left, stop, err := ev.lenientLeft(node, value)
	if stop {
		return nil, err
	}
	m, ok := left.(map[string]any)
	if !ok {
		return nil, nil
	}
	items := make([]any, 0, len(m))
	for _, v := range m {
		items = append(items, v)
	}
	if err := ev.step(elementSteps * len(items)); err != nil {
		return nil, err
	}
	return ev.project(node.Children[1], nil, items)
}

func (ev *evaluator) slice(node parsing.ASTNode, value any) (any, error) {
	params := util.MakeSliceParams(node.Value.([]*int))
	if s, ok := value.(string); ok {
		runes, err := util.Slice([]rune(s), params)
		if err != nil {
			return nil, nil
		}
		return string(runes), nil
	}
	items, ok, err := ev.asList(value)
	if !ok || err != nil {
		return nil, err
	}
	out, err := util.Slice(items, params)
	if err != nil {
		return nil, err
	}
	if err := ev.step(elementSteps * len(out)); err != nil {
		return nil, err
	}
	return out, nil
}
