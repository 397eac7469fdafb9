package modrule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unsafe"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/value"
)

// ErrTooMuchText is wrapped by the error of a rule whose criteria test more
// than MaxMatchText bytes of text, or whose operations write values of more
// than MaxRenderText bytes of text.
var ErrTooMuchText = errors.New("too much text")

// Bounds on the text one rule may build, whatever the object; the values a
// select may yield and the nodes it may visit are bounded by its language
// (package internal/jsonpath).
const (
	// MaxMatchText bounds the text a rule's criteria test: the values
	// selected for matchValue, matchValues and matchRegex, strings as they
	// are and other values as their JSON text. Testing every value of a
	// 1.5 MiB object (select: '$..*') costs about ten times its size.
	MaxMatchText = 64 << 20
	// MaxRenderText bounds the text of the values a Patch rule's
	// operations write, all together: what templates render, and a static
	// value's text once for each operation (each writes a copy). Rules
	// write a few KB; setting a field of each of 20,000 elements, 2 MB.
	MaxRenderText = 8 << 20
)

// IsBound reports whether err is a bound that evaluating a rule hit (too
// many values selected, too many nodes visited, too much text), rather
// than a property of the rule and the object that KubeMod defines (a type
// error in an expression is a criterion that does not hold).
func IsBound(err error) bool {
	return errors.Is(err, lang.ErrLimit) || errors.Is(err, ErrTooMuchText)
}

// Match evaluates the rule's criteria in order, stopping at the first that
// fails. The error is the end of the context, or a bound that a criterion
// hit (see IsBound), in the field named; a criterion whose select fails
// otherwise does not hold, as in KubeMod.
func (r *Rule) Match(h *engine.Handle) (bool, error) {
	ctx := h.Context()
	root := h.Object()
	var trace *Trace
	if h.Tracing() {
		trace = newTrace(h, r.Type, len(r.Criteria))
		h.Trace().Detail = trace
	}
	tb := textBudget{ctx: ctx, buf: h.Text()}
	defer func() { h.SetText(tb.buf) }()
	buf := h.Values()
	defer func() { h.SetValues(buf) }()
	st, version := stateOf(h), h.ObjectVersion()
	for i := range r.Criteria {
		c := &r.Criteria[i]
		vals, single, own, err := st.selectValues(ctx, c.Select, root, version, buf[:0])
		if own && cap(vals) > cap(buf) {
			buf = vals[:0]
		}
		if err != nil && (ctx.Err() != nil || IsBound(err)) {
			trace.add(h, CriterionTrace{Criterion: c, Err: err, Verdict: VerdictError, At: -1}, nil)
			return false, engine.InField(c.Field+".select", err)
		}
		held, why, at, terr := holds(c, vals, single, err, &tb)
		if terr != nil {
			trace.add(h, CriterionTrace{Criterion: c, Single: single, Err: terr, Verdict: VerdictError, At: -1}, vals)
			return false, engine.InField(c.Field, terr)
		}
		trace.add(h, CriterionTrace{Criterion: c, Single: single, Err: err, Held: held, Verdict: why, At: at}, vals)
		if !held {
			return false, nil
		}
	}
	return true, nil
}

// Apply carries out a matching rule: a Patch rule builds all its
// operations from the object as the rule found it, then applies them
// atomically; a Reject rule rejects with its rendered message (a message
// that fails to render still rejects, with the rule's name only).
func (r *Rule) Apply(h *engine.Handle) error {
	if r.Type == v1beta1.ModRuleTypeReject {
		h.Reject(r.rejectMessage(h))
		return nil
	}
	var sources *[]OpSource
	if h.Tracing() {
		trace, _ := h.Trace().Detail.(*Trace)
		if trace == nil {
			trace = newTrace(h, r.Type, 0)
			h.Trace().Detail = trace
		}
		sources = &trace.OpSources
	}
	var st *evalState
	if sources == nil {
		st = stateOf(h)
	}
	ops, origin, field, err := r.buildOps(h, sources, st)
	h.Trace().Ops = ops
	if st != nil {
		defer st.keep(ops, origin)
	}
	if err != nil {
		if ctxErr := h.Context().Err(); ctxErr != nil {
			return ctxErr
		}
		h.Fail(field, err)
		return nil
	}
	if err := h.Patch(ops); err != nil {
		var pe *engine.PatchError
		if !errors.As(err, &pe) {
			return err
		}
		field := r.Patches[origin[pe.Index]].Field
		if pe.Path {
			field += ".path"
		}
		h.Fail(field, pe.Err)
	}
	return nil
}

// textBudget gives the text of the values a rule's criteria test, built in
// one reused buffer, and bounds it: MaxMatchText bytes in all, the context
// checked every 1 MiB.
type textBudget struct {
	ctx       context.Context
	buf       []byte
	used      int
	unchecked int
}

// text returns the text form of v (value.Text), valid until the next call.
func (tb *textBudget) text(v any) (string, error) {
	var s string
	switch v.(type) {
	case []any, map[string]any:
		b, err := value.AppendJSON(tb.buf[:0], v)
		if err != nil {
			s = value.Text(v)
		} else {
			tb.buf = b
			s = unsafe.String(unsafe.SliceData(b), len(b))
		}
	default:
		s = value.Text(v)
	}
	tb.used += len(s)
	if tb.used > MaxMatchText {
		return "", fmt.Errorf("%w: the criteria test more than %d bytes of text", ErrTooMuchText, MaxMatchText)
	}
	if tb.unchecked += len(s) + 16; tb.unchecked >= 1<<20 {
		tb.unchecked = 0
		if err := tb.ctx.Err(); err != nil {
			return "", err
		}
	}
	return s, nil
}

// holds decides one criterion. A single boolean decides alone; no result
// (an error, nothing selected, a single null, a single empty array) is a
// non-match; a single array is tested element by element, as KubeMod does;
// otherwise each value's text is tested for Any or All values. Negate flips
// the outcome in every case. The verdict says which of these decided, and at
// the index of the deciding value among those tested (-1 when none did).
// The error is the text budget's.
func holds(c *Criterion, vals []any, single bool, err error, tb *textBudget) (held bool, why Verdict, at int, terr error) {
	if err != nil {
		return c.Negate, VerdictError, -1, nil
	}
	if single && len(vals) == 1 {
		switch v := vals[0].(type) {
		case bool:
			return v != c.Negate, VerdictBoolean, 0, nil
		case nil:
			return c.Negate, VerdictNull, -1, nil
		case []any:
			vals = v
		}
	}
	if len(vals) == 0 {
		return c.Negate, VerdictNothing, -1, nil
	}
	if !c.HasMatcher() {
		return !c.Negate, VerdictExists, -1, nil
	}
	for i, v := range vals {
		text, err := tb.text(v)
		if err != nil {
			return false, VerdictError, -1, err
		}
		if ok := c.Test(text); ok != c.All {
			if c.All {
				return c.Negate, VerdictNotAll, i, nil
			}
			return !c.Negate, VerdictAny, i, nil
		}
	}
	if c.All {
		return !c.Negate, VerdictAll, -1, nil
	}
	return c.Negate, VerdictNone, -1, nil
}

// buildOps renders every operation of a rule; origin[i] is the index of the
// patch item ops[i] came from. When sources is not nil, it receives each
// operation's patch item and captured keys (for the trace). The values of
// all the operations hold at most MaxRenderText bytes of text, and the
// context is checked before each.
func (r *Rule) buildOps(h *engine.Handle, sources *[]OpSource, st *evalState) (ops []patch.Operation, origin []int, field string, err error) {
	ctx := h.Context()
	root := h.Object()
	var tokens *[]string // where paths are rendered, else each its own
	if st != nil {
		ops, origin, tokens = st.ops[:0], st.origin[:0], &st.tokens
		st.tokens, st.keys = st.tokens[:0], st.keys[:0]
	} else {
		ops = make([]patch.Operation, 0, len(r.Patches))
		origin = make([]int, 0, len(r.Patches))
	}
	rendered := 0
	for i := range r.Patches {
		p := &r.Patches[i]
		if p.Select == nil {
			v, err := render(h, p, root, nil, nil, &rendered)
			if err != nil {
				return ops, origin, p.Field + ".value", err
			}
			ops = append(ops, patch.Operation{Op: p.Op, Path: p.Path.Static, Value: v})
			origin = append(origin, i)
			if sources != nil {
				*sources = append(*sources, OpSource{Field: p.Field})
			}
			continue
		}
		var nodes []lang.Node
		if st != nil {
			nodes, st.keys, err = p.Select.NodesTo(ctx, root, st.nodes[:0], st.keys)
			st.nodes = nodes[:0]
		} else {
			nodes, err = p.Select.Nodes(ctx, root)
		}
		if err != nil {
			return ops, origin, p.Field + ".select", err
		}
		first := len(ops)
		for _, n := range nodes {
			if err := ctx.Err(); err != nil {
				return ops, origin, p.Field, err
			}
			path, err := p.Path.RenderTo(tokens, n.Keys)
			if err != nil {
				return ops, origin, p.Field + ".path", err
			}
			v, err := render(h, p, root, n.Value, n.Keys, &rendered)
			if err != nil {
				return ops, origin, p.Field + ".value", err
			}
			ops = append(ops, patch.Operation{Op: p.Op, Path: path, Value: v})
			origin = append(origin, i)
			if sources != nil {
				*sources = append(*sources, OpSource{Field: p.Field, Keys: n.Keys})
			}
		}
		if p.Op == patch.Remove {
			// Remove from the highest index down so that every selected
			// element goes, not every other one.
			if sources != nil {
				sortRemovals(ops[first:], (*sources)[first:])
			} else {
				slices.SortStableFunc(ops[first:], func(a, b patch.Operation) int { return -comparePointers(a.Path, b.Path) })
			}
		}
	}
	return ops, origin, "", nil
}

// sortRemovals sorts removals from the highest index down, keeping each
// operation's source beside it.
func sortRemovals(ops []patch.Operation, sources []OpSource) {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return -comparePointers(ops[a].Path, ops[b].Path) })
	o, s := slices.Clone(ops), slices.Clone(sources)
	for i, j := range idx {
		ops[i], sources[i] = o[j], s[j]
	}
}

// comparePointers orders pointers token by token, numeric tokens by value.
func comparePointers(a, b patch.Pointer) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			if ai < bi {
				return -1
			}
			return 1
		}
		if a[i] < b[i] {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

var errTooMuchRendered = fmt.Errorf("%w: the values of this rule's operations exceed %d bytes of text", ErrTooMuchText, MaxRenderText)

// render gives the value of one operation; *rendered counts the text of the
// values the rule's operations wrote so far.
func render(h *engine.Handle, p *PatchOp, root, item any, keys []any, rendered *int) (any, error) {
	if p.Op == patch.Remove {
		return nil, nil
	}
	if p.Value.Static() {
		// Each operation writes its own copy.
		if *rendered += len(p.Value.Source()); *rendered > MaxRenderText {
			return nil, errTooMuchRendered
		}
		return p.StaticValue, nil
	}
	act := h.Activation()
	*act = lang.Activation{Object: root, Namespace: h.Namespace(), Item: item, Keys: keys}
	text, err := p.Value.Render(h.Context(), act)
	if err != nil {
		return nil, err
	}
	if *rendered += len(text); *rendered > MaxRenderText {
		return nil, errTooMuchRendered
	}
	v, err := parseValue(text)
	if err != nil {
		return nil, fmt.Errorf("rendered value %s: %w", excerpt(text), err)
	}
	return v, nil
}

// rejectMessage renders the rule's reject message against the final
// object; the error says why it could not be rendered.
func (r *Rule) rejectMessage(h *engine.Handle) (string, error) {
	if r.RejectMessage == nil {
		return "", nil
	}
	act := h.Activation()
	*act = lang.Activation{Object: h.Object(), Namespace: h.Namespace()}
	msg, err := r.RejectMessage.Render(h.Context(), act)
	return msg, engine.InField("spec.rejectMessage", err)
}

// excerpt quotes the start of a rendered value for an error message: a
// value that fails to parse may be megabytes long.
func excerpt(text string) string {
	const n = 200
	if len(text) <= n {
		return strconv.Quote(text)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(text[:n]), len(text))
}
