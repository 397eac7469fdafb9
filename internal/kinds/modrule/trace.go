package modrule

import (
	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
)

// Trace is a ModRule's record of its evaluation: engine.RuleTrace.Detail
// when the engine keeps a trace. The explainer prints it.
type Trace struct {
	Type v1beta1.ModRuleType
	// Criteria holds the evaluated criteria in order; evaluation stops at
	// the first that fails.
	Criteria []CriterionTrace
	// OpSources has one entry per operation of engine.RuleTrace.Ops: the
	// patch item it came from and the keys its select captured (the #N
	// placeholder values).
	OpSources []OpSource
}

// traceBlock is a rule's trace with room for a few criteria (most rules
// have few).
type traceBlock struct {
	t Trace
	c [4]CriterionTrace
}

// traceSlab is where the traces of one evaluation are cut from (the
// engine keeps it in the Handle's KindState): one allocation for many
// rules' traces instead of one per rule.
type traceSlab struct {
	free []traceBlock
	n    int // the size of the last block
}

// evalState is the ModRules' state of one evaluation (Handle.KindState):
// the slab their traces are cut from; the values their criteria selected
// from the object's current version (selectValues); and, when there is no
// trace, the storage of a rule's operations and of their paths, reused
// from one rule to the next: the engine keeps nothing of them once Patch
// has returned (it copies what it records), and without a trace nothing
// else refers to them. The engine keeps the state for its next evaluation
// (ResetState).
type evalState struct {
	slab   traceSlab
	ops    []patch.Operation
	origin []int
	tokens []string
	// nodes and keys are what the patch items' selects found.
	nodes []lang.Node
	keys  []any
	// selected are the criteria's selections from the object at
	// selVersion, their values in selVals (selectValues).
	selected   []selection
	selVals    []any
	selVersion uint64
}

var _ engine.StateResetter = (*evalState)(nil)

// stateOf returns the evaluation's evalState.
func stateOf(h *engine.Handle) *evalState { return engine.KindStateOf[evalState](h) }

// keep takes back the storage of a rule's operations, which may have
// grown, once the engine is done with them.
func (st *evalState) keep(ops []patch.Operation, origin []int) {
	clear(ops)
	clear(st.nodes[:cap(st.nodes)])
	clear(st.keys)
	st.ops, st.origin, st.keys = ops[:0], origin[:0], st.keys[:0]
}

// evalStateKept bounds the storage an evalState keeps from one evaluation
// to the next (a rule selecting thousands of nodes grows it once).
const evalStateKept = 1024

// ResetState drops the evaluation's traces and what the operations and
// paths referred to, keeping their storage unless it grew large.
func (st *evalState) ResetState() bool {
	st.slab = traceSlab{} // the traces are the decision's
	clear(st.ops[:cap(st.ops)])
	clear(st.tokens[:cap(st.tokens)])
	clear(st.nodes[:cap(st.nodes)])
	clear(st.keys[:cap(st.keys)])
	st.ops, st.origin, st.tokens, st.nodes, st.keys = st.ops[:0], st.origin[:0], st.tokens[:0], st.nodes[:0], st.keys[:0]
	st.forgetSelections()
	return cap(st.ops) <= evalStateKept && cap(st.tokens) <= evalStateKept && cap(st.nodes) <= evalStateKept && cap(st.keys) <= evalStateKept &&
		cap(st.selVals) <= evalStateKept
}

// newTrace starts the trace of a rule with n criteria.
func newTrace(h *engine.Handle, typ v1beta1.ModRuleType, n int) *Trace {
	if n > len(traceBlock{}.c) {
		return &Trace{Type: typ, Criteria: make([]CriterionTrace, 0, n)}
	}
	slab := &stateOf(h).slab
	if len(slab.free) == 0 {
		// Blocks of 4, doubling up to 32: few rules waste little, many
		// share few allocations.
		slab.n = min(max(slab.n*2, 4), 32)
		slab.free = make([]traceBlock, slab.n)
	}
	b := &slab.free[0]
	slab.free = slab.free[1:]
	b.t.Type, b.t.Criteria = typ, b.c[:0:n]
	return &b.t
}

// add records a criterion, with a copy of the values it tested (the
// engine's scratch buffer held them) kept by h; a nil Trace records
// nothing.
func (t *Trace) add(h *engine.Handle, c CriterionTrace, vals []any) {
	if t == nil {
		return
	}
	if vals != nil {
		c.Values = h.Keep(vals)
	}
	t.Criteria = append(t.Criteria, c)
}

// TraceOf returns the ModRule trace of a rule trace, or nil.
func TraceOf(tr *engine.RuleTrace) *Trace {
	t, _ := tr.Detail.(*Trace)
	return t
}

// CriterionTrace records one criterion.
type CriterionTrace struct {
	// Criterion is the compiled criterion (its Field is spec.match[i]).
	Criterion *Criterion
	// Values are what select returned (undefined dropped).
	Values []any
	// Single is true when select yields at most one value by construction.
	Single bool
	Held   bool
	// Verdict says what decided the outcome (before negation), and At is
	// the index of the deciding value among those tested (the elements of
	// a single array), or -1.
	Verdict Verdict
	At      int
	// Err is set when select failed to evaluate (then the criterion has no result).
	Err error
}

// Verdict says what decided a criterion, before negate flips the outcome.
type Verdict uint8

// Verdicts.
const (
	VerdictError   Verdict = iota + 1 // select failed: no result
	VerdictBoolean                    // a single boolean decided alone
	VerdictNull                       // a single null: no result
	VerdictNothing                    // nothing selected (or an empty array): no result
	VerdictExists                     // no matcher, and something was selected
	VerdictAny                        // a value satisfied the matcher
	VerdictNone                       // no value satisfied the matcher
	VerdictAll                        // every value satisfied the matcher (matchFor: All)
	VerdictNotAll                     // a value failed the matcher (matchFor: All)
)

var verdictText = [...]string{
	VerdictError:   "select failed",
	VerdictBoolean: "select yielded a single boolean, which decides alone",
	VerdictNull:    "select yielded null (no result)",
	VerdictNothing: "select yielded nothing (no result)",
	VerdictExists:  "select yielded a value and there is no matcher",
	VerdictAny:     "a value satisfied the matcher",
	VerdictNone:    "no value satisfied the matcher",
	VerdictAll:     "every value satisfied the matcher (matchFor: All)",
	VerdictNotAll:  "a value failed the matcher (matchFor: All)",
}

func (v Verdict) String() string {
	if int(v) < len(verdictText) && verdictText[v] != "" {
		return verdictText[v]
	}
	return "unknown"
}

// OpSource is where one operation of a rule trace came from.
type OpSource struct {
	Field string // spec.patch[i]
	// Keys are the keys the patch item's select captured for this
	// operation (#0, #1, ...); nil without select.
	Keys []any
}
