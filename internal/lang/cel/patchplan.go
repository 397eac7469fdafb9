package cel

import (
	"context"
	"fmt"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/parser"
	"k8s.io/apiserver/pkg/cel/mutation"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
)

// patchPlan is a JSONPatch expression that is a list of JSONPatch
// constructions ([JSONPatch{op: 'add', path: '/metadata/labels/x', value:
// object.metadata.name}, ...]), the form nearly every patch takes, taken
// apart when it is compiled: the fields written as literals are read once
// (an op and a path given as literals are parsed once), so are those that
// read no variable ('/metadata/annotations/' + jsonpatch.escapeKey('a/b'):
// evaluated once, their cost among the constructions'), and the others are
// evaluated together as one list ([object.metadata.name]). Evaluating the
// whole expression built a JSONPatch object per operation, through the
// apiserver's type provider, only to read its fields back: most of what
// evaluating a patch cost.
//
// What gather gives is what gatherJSONPatch gives for the whole
// expression's result (TestPatchPlan compares them, errors included): the
// same fields, evaluated in the same order (elements in turn, each one's
// fields as written: the first error wins, as in the whole expression),
// the same cost when it succeeds (the whole expression's is the values'
// plus what each construction costs, StructCreateBaseCost, the list's and
// the constants'), and the same budget (the values are given the budget less what
// the constructions cost; TestPatchPlanBudget). At the budget's edge, an
// expression that fails with an error of its own after the budget less
// the constructions it did not reach was spent reports the budget instead;
// the cost of a failure is what the values spent until they stopped plus
// every construction (the whole expression would have stopped elsewhere).
// Several values are one list: values of different types make a list the
// environment refuses (its aggregate literals are homogeneous), and such
// an expression is evaluated whole.
type patchPlan struct {
	ops []planOp
	// memos are the ops' typeMemos (nil for one whose op or path is
	// computed).
	memos []*typeMemo
	// values evaluates the fields that are not literals, in order, as one
	// list (single: the one such field alone); nil when all are literals.
	values *Program
	single bool
	// constructions is what the whole expression costs beyond its
	// values: a JSONPatch construction each, and the list when values is
	// nil (values' own list costs what the whole one did).
	constructions uint64
}

// planOp is one JSONPatch construction: each field a literal, or the index
// of its value in the values list (-1 for a literal); absent fields are
// the zero value, as the apiserver reads them.
type planOp struct {
	op, path, from       string
	opAt, pathAt, fromAt int
	val                  ref.Val // a literal value
	valAt                int
	// fast is the fast path's operation when op and path are literals
	// (fastOK: it takes them); its Value is set per evaluation.
	fast   patch.Operation
	fastOK bool
}

// planJSONPatch takes apart a, a checked list(JSONPatch) expression;
// compile compiles the values list with a budget. It returns nil when a
// is not a list of JSONPatch constructions whose op, path and from are
// literals or of type string (then the whole expression is evaluated).
func planJSONPatch(a *celast.AST, budget uint64, compile func(src string, budget uint64) *Program) *patchPlan {
	e, info, typeOf := a.Expr(), a.SourceInfo(), a.GetType
	if e.Kind() != celast.ListKind || len(e.AsList().OptionalIndices()) > 0 {
		return nil
	}
	pl := &patchPlan{}
	var texts []string
	var folded uint64 // what the constants cost
	// computed gives the index of v's value in the values list, or, when
	// v is a constant, -1 and the constant.
	computed := func(v celast.Expr) (int, ref.Val) {
		text, err := parser.Unparse(v, info)
		if err != nil {
			return -2, nil
		}
		if c, cost := constant(v, text, budget, compile); c != nil {
			folded += cost
			return -1, c
		}
		texts = append(texts, text)
		return len(texts) - 1, nil
	}
	// str reads a string field: a literal, or an expression of type
	// string (a dyn one could fail as the construction refuses it, in an
	// order the plan does not keep).
	str := func(v celast.Expr, s *string, at *int) bool {
		if v.Kind() == celast.LiteralKind {
			lit, ok := v.AsLiteral().(types.String)
			*s = string(lit)
			return ok
		}
		if t := typeOf(v.ID()); t == nil || !t.IsExactType(types.StringType) {
			return false
		}
		var c ref.Val
		if *at, c = computed(v); c != nil {
			lit, ok := c.(types.String)
			*s = string(lit)
			return ok
		}
		return *at >= 0
	}
	for _, el := range e.AsList().Elements() {
		if el.Kind() != celast.StructKind || el.AsStruct().TypeName() != mutation.JSONPatchTypeName {
			return nil
		}
		op := planOp{opAt: -1, pathAt: -1, fromAt: -1, valAt: -1}
		seen := map[string]bool{}
		for _, f := range el.AsStruct().Fields() {
			sf := f.AsStructField()
			if sf.IsOptional() || seen[sf.Name()] {
				return nil
			}
			seen[sf.Name()] = true
			ok := true
			switch v := sf.Value(); sf.Name() {
			case "op":
				ok = str(v, &op.op, &op.opAt)
			case "path":
				ok = str(v, &op.path, &op.pathAt)
			case "from":
				ok = str(v, &op.from, &op.fromAt)
			case "value":
				if v.Kind() == celast.LiteralKind {
					op.val = v.AsLiteral()
				} else if op.valAt, op.val = computed(v); op.val == nil {
					ok = op.valAt >= 0
				}
			default:
				ok = false
			}
			if !ok {
				return nil
			}
		}
		if op.opAt < 0 && op.pathAt < 0 {
			op.fast, op.fastOK = fastOp(op.op, op.path, nil)
		}
		pl.ops = append(pl.ops, op)
	}
	pl.constructions = uint64(len(pl.ops))*structCreateCost + folded
	defer pl.memo()
	if len(texts) == 0 {
		pl.constructions += listCreateCost
		return pl
	}
	// One value is evaluated alone: what the whole expression's list costs
	// is then among the constructions.
	src := "[" + strings.Join(texts, ", ") + "]"
	if pl.single = len(texts) == 1; pl.single {
		src = texts[0]
		pl.constructions += listCreateCost
	}
	if budget <= pl.constructions {
		return nil
	}
	if pl.values = compile(src, budget-pl.constructions); pl.values == nil {
		return nil
	}
	return pl
}

// constant is the value of the expression text when it reads no variable
// (as '/metadata/annotations/' + jsonpatch.escapeKey('a/b')), and what
// evaluating it costs, the same at every evaluation: that cost is then
// among the constructions', the value a literal of the plan. nil when it
// reads a variable or fails.
func constant(v celast.Expr, text string, budget uint64, compile func(src string, budget uint64) *Program) (ref.Val, uint64) {
	if !readsNothing(v) {
		return nil, 0
	}
	p := compile(text, budget)
	if p == nil {
		return nil, 0
	}
	out, cost, err := p.eval(context.Background(), &lang.Activation{})
	if err != nil {
		return nil, 0
	}
	return out, cost
}

// readsNothing reports whether e names no variable (and has no
// comprehension, whose variables it names).
func readsNothing(e celast.Expr) bool {
	switch e.Kind() {
	case celast.LiteralKind:
		return true
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() && !readsNothing(c.Target()) {
			return false
		}
		for _, a := range c.Args() {
			if !readsNothing(a) {
				return false
			}
		}
		return true
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			if !readsNothing(el) {
				return false
			}
		}
		return true
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if me := en.AsMapEntry(); !readsNothing(me.Key()) || !readsNothing(me.Value()) {
				return false
			}
		}
		return true
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if !readsNothing(f.AsStructField().Value()) {
				return false
			}
		}
		return true
	}
	return false // an identifier, a selection, a comprehension
}

// memo gives each operation whose op and path are literals a typeMemo.
func (pl *patchPlan) memo() {
	pl.memos = make([]*typeMemo, len(pl.ops))
	for i := range pl.ops {
		if pl.ops[i].opAt < 0 && pl.ops[i].pathAt < 0 {
			pl.memos[i] = &typeMemo{}
		}
	}
}

// The costs cel-go's runtime cost tracker charges for a construction
// (common.StructCreateBaseCost, common.ListCreateBaseCost).
const (
	structCreateCost = 40
	listCreateCost   = 10
)

// gather evaluates the plan over in: the operations, as gatherJSONPatch
// reads them from the whole expression's result, and the cost.
func (pl *patchPlan) gather(ctx context.Context, in *lang.Activation, st *PatchStorage) (jsonPatch, uint64, error) {
	var vals traits.Lister
	var one ref.Val
	cost := pl.constructions
	if pl.values != nil {
		out, c, err := pl.values.eval(ctx, in)
		if err != nil {
			// The values' cost until they stopped, and every
			// construction (see patchPlan).
			return jsonPatch{}, c + pl.constructions, err
		}
		cost += c
		if pl.single {
			one = out
		} else if vals, _ = out.(traits.Lister); vals == nil {
			return jsonPatch{}, cost, fmt.Errorf("cel: the values of a JSONPatch evaluated to %s", out.Type())
		}
	}
	get := func(at int) ref.Val {
		if pl.single {
			return one
		}
		return vals.Get(types.Int(at))
	}
	if err := ctx.Err(); err != nil {
		return jsonPatch{}, cost, fmt.Errorf("cel: %w", err)
	}
	jp := jsonPatch{fastOK: true, memos: pl.memos}
	if st != nil && cap(st.natives) >= len(pl.ops) && cap(st.fastOps) >= len(pl.ops) {
		jp.natives, jp.fastOps = st.natives[:0], st.fastOps[:0]
		st.natives, st.fastOps = nil, nil // the Patched's until Recycle
	} else {
		jp.natives, jp.fastOps = make([]patchOp, 0, len(pl.ops)), make([]patch.Operation, 0, len(pl.ops))
	}
	str := func(lit string, at int) string {
		if at < 0 {
			return lit
		}
		s, _ := get(at).Value().(string) // of type string (planJSONPatch)
		return s
	}
	for i := range pl.ops {
		o := &pl.ops[i]
		val := o.val
		if o.valAt >= 0 {
			val = get(o.valAt)
		}
		var pre *planOp
		if o.opAt < 0 && o.pathAt < 0 {
			pre = o
		}
		if err := jp.addOp(str(o.op, o.opAt), str(o.path, o.pathAt), str(o.from, o.fromAt), val, pre); err != nil {
			return jsonPatch{}, cost, fmt.Errorf("cel: %w", err)
		}
	}
	return jp, cost, nil
}
