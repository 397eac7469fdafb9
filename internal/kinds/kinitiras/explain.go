package kinitiras

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

var _ kinds.Explainer = (*Rule)(nil)

// ScopeReason says why the policy is or is not a candidate for an object
// of kind in namespace ns under op.
func (r *Rule) ScopeReason(ns, kind string, op rules.Operation, in bool) string {
	switch {
	case r.Kind == KindOverridePolicy && ns != r.Namespace:
		return fmt.Sprintf("out of scope: an OverridePolicy applies to objects of its own namespace (%s) only", r.Namespace)
	case !r.Index.Operations.Has(op):
		if r.Phase == engine.Mutate && (op == rules.Delete || op == rules.Connect) {
			return "out of scope: an override policy never patches a " + string(op)
		}
		return "out of scope: no rule's targetOperations include " + string(op)
	case r.Index.Kinds != nil && !slices.Contains(r.Index.Kinds, kind):
		return "out of scope: resourceSelectors name the kinds " + strings.Join(r.Index.Kinds, ", ")
	case !in:
		return "out of scope"
	}
	if r.Kind == KindOverridePolicy {
		return "OverridePolicy in the object's namespace " + r.Namespace
	}
	return r.Kind + ": applies cluster-wide"
}

// Explain fills re from the trace: the outcome, the selectors' verdict,
// the operations and the denial.
func (r *Rule) Explain(re *kinds.RuleExplain, tr *engine.RuleTrace, dec *engine.Decision) {
	re.Type = r.Phase.String()
	if tr == nil {
		return
	}
	re.Outcome, re.Reason = string(tr.Outcome), tr.Reason
	if tr.Outcome == engine.NotMatched && re.Reason == "" {
		re.Reason = "no resourceSelectors entry selects the object"
	}
	for _, o := range tr.Ops {
		re.Ops = append(re.Ops, kinds.OpExplain{Op: string(o.Op), Path: o.Path.String(), Value: o.Value, Field: "spec.overrideRules"})
	}
	for _, rej := range dec.Rejections {
		if rej.Kind == r.Kind && rej.Rule == r.Key {
			m := rej.Message
			re.Rejection = &m
		}
	}
}
