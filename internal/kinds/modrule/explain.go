package modrule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

var _ kinds.Explainer = (*Rule)(nil)

// Explain fills re from the rule's trace: its criteria, the ones not
// evaluated, its operations, its rejection and a last-applied failure.
func (r *Rule) Explain(re *kinds.RuleExplain, tr *engine.RuleTrace, dec *engine.Decision) {
	re.Type = string(r.Type)
	if r.Type == v1beta1.ModRuleTypeReject {
		re.Note = "Reject rules run last, against the patched object"
	}
	if tr == nil {
		return
	}
	re.Outcome, re.Reason = string(tr.Outcome), tr.Reason
	t := TraceOf(tr)
	if t != nil {
		for _, ct := range t.Criteria {
			re.Criteria = append(re.Criteria, explainCriterion(ct))
		}
		if tr.Outcome == engine.NotMatched {
			for _, c := range r.Criteria[len(t.Criteria):] {
				re.NotEvaluated = append(re.NotEvaluated, c.Field)
			}
		}
	}
	for i, o := range tr.Ops {
		oe := kinds.OpExplain{Op: string(o.Op), Path: o.Path.String(), Value: o.Value}
		if t != nil && i < len(t.OpSources) {
			oe.Field, oe.Keys = t.OpSources[i].Field, t.OpSources[i].Keys
		}
		re.Ops = append(re.Ops, oe)
	}
	for _, rej := range dec.Rejections {
		if rej.Kind != Kind || rej.Rule != r.Key {
			continue
		}
		msg := rej.Message
		if err := rej.MessageError; err != nil {
			if u := errors.Unwrap(err); u != nil {
				err = u // the field is spec.rejectMessage
			}
			msg = "(rejectMessage failed: " + err.Error() + ")"
		}
		re.Rejection = &msg
	}
	if tr.LastAppliedErr != nil {
		re.LastAppliedError = tr.LastAppliedErr.Error()
	}
}

func explainCriterion(ct CriterionTrace) kinds.CriterionExplain {
	c := ct.Criterion
	ce := kinds.CriterionExplain{Field: c.Field, Negate: c.Negate, Values: ct.Values, Held: ct.Held, Why: ct.Verdict.String(), At: ct.At}
	if ce.Values == nil {
		ce.Values = []any{}
	}
	if ct.At >= 0 && ct.Verdict != VerdictBoolean {
		ce.Tested = testedValues(ct.Values)
	}
	if c.Select != nil {
		ce.Select = c.Select.Source()
	}
	switch {
	case c.Value != nil:
		ce.Matcher = "matchValue " + strconv.Quote(*c.Value)
	case len(c.Values) > 0:
		q := make([]string, len(c.Values))
		for i, v := range c.Values {
			q[i] = strconv.Quote(v)
		}
		ce.Matcher = "matchValues [" + strings.Join(q, ", ") + "]"
	case c.Regex != nil:
		ce.Matcher = "matchRegex /" + c.Regex.String() + "/"
	}
	if ce.Matcher != "" && c.All {
		ce.Matcher += " (matchFor: All)"
	}
	if ct.Err != nil {
		ce.Error = ct.Err.Error()
	}
	return ce
}

// testedValues are the values a matcher tests: the elements of a single
// array, as holds does.
func testedValues(vals []any) []any {
	if len(vals) == 1 {
		if arr, ok := vals[0].([]any); ok {
			return arr
		}
	}
	return vals
}

// NamespaceScope says where the rule applies for an object in ns: its
// namespace, or the cluster-rules namespace's cluster-scoped objects or
// targetNamespaceRegex.
func (r *Rule) NamespaceScope(ns string) (string, bool) {
	clusterNS := r.clusterNS
	switch {
	case r.Namespace == "":
		return "rule without namespace: applies to every object", true
	case r.Namespace == clusterNS && r.TargetNamespaces == nil:
		if ns != "" {
			return fmt.Sprintf("a rule in the cluster-rules namespace %s without targetNamespaceRegex applies only to cluster-scoped objects", clusterNS), false
		}
		return "cluster rule: applies to cluster-scoped objects", true
	case r.Namespace == clusterNS:
		target := ns
		if target == "" {
			target = "(cluster-scoped)"
		}
		if !r.TargetNamespaces.MatchString(ns) {
			return fmt.Sprintf("targetNamespaceRegex /%s/ does not match namespace %s", r.TargetNamespaces, target), false
		}
		return fmt.Sprintf("cluster rule: targetNamespaceRegex /%s/ matches namespace %s", r.TargetNamespaces, target), true
	case ns == "":
		return fmt.Sprintf("a rule in namespace %s applies only to objects in %s, not to cluster-scoped ones", r.Namespace, r.Namespace), false
	case r.Namespace != ns:
		return fmt.Sprintf("a rule in namespace %s applies only to objects in %s, not %s", r.Namespace, r.Namespace, ns), false
	}
	return "rule in the object's namespace " + r.Namespace, true
}

// OperationsScope says why op is not among admissionOperations.
func (r *Rule) OperationsScope(op rules.Operation) string {
	return fmt.Sprintf("admissionOperations %v do not include %s", r.Source.Spec.AdmissionOperations, op)
}

// KindsScope names the kinds its $.kind criteria pin it to.
func (r *Rule) KindsScope(pinned []string) string {
	if len(pinned) == 0 {
		return "its $.kind criteria can never hold together"
	}
	return "its $.kind criteria pin it to " + strings.Join(pinned, ", ")
}
