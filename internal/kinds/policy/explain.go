package policy

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
	var where string
	switch {
	case r.cluster:
		where = "ClusterPolicy: applies cluster-wide"
		if r.Index.Filtered && !r.InScope(ns) {
			return fmt.Sprintf("out of scope: no resources entry's namespaces match namespace %q", ns)
		}
	case ns == "":
		return fmt.Sprintf("out of scope: a Policy in namespace %s applies only to objects in %s, not to cluster-scoped ones", r.Namespace, r.Namespace)
	case ns != r.Namespace:
		return fmt.Sprintf("out of scope: a Policy in namespace %s applies only to objects in %s, not %s", r.Namespace, r.Namespace, ns)
	default:
		where = "Policy in the object's namespace " + r.Namespace
	}
	if !r.Index.Operations.Has(op) {
		ops := []string{"CREATE", "UPDATE"}
		if r.Spec.Match != nil && len(r.Spec.Match.Operations) > 0 {
			ops = ops[:0]
			for _, o := range r.Spec.Match.Operations {
				ops = append(ops, string(o))
			}
		}
		return fmt.Sprintf("out of scope: match.operations [%s] do not include %s", strings.Join(ops, ", "), op)
	}
	if r.Index.Kinds != nil && !slices.Contains(r.Index.Kinds, kind) {
		return fmt.Sprintf("out of scope: match.resources name the kinds %s", strings.Join(r.Index.Kinds, ", "))
	}
	if !in {
		return "out of scope"
	}
	return where
}

// Explain fills re from the policy's traces (a policy with mutations and
// validations has one per phase): each variable, condition, validation,
// mutation and audit annotation with its value or error, the operations,
// and the denial.
func (r *Rule) Explain(re *kinds.RuleExplain, tr *engine.RuleTrace, dec *engine.Decision) {
	re.Type = r.Phase.String()
	if tr == nil {
		return
	}
	re.Outcome, re.Reason = string(tr.Outcome), tr.Reason
	for i := range dec.Trace {
		t := &dec.Trace[i]
		if t.Kind != r.Kind || t.Rule != r.Key {
			continue
		}
		if t.Outcome == engine.Failed || t.Outcome == engine.Matched && re.Outcome != string(engine.Failed) {
			re.Outcome, re.Reason = string(t.Outcome), t.Reason
		}
		pt, _ := t.Detail.(*Trace)
		if pt != nil {
			for _, list := range [][]Step{pt.Context, pt.Variables, pt.Conditions, pt.Validations, pt.Mutations, pt.Audits, pt.Substitutions} {
				for _, s := range list {
					re.Criteria = append(re.Criteria, explainStep(s))
				}
			}
		}
		for _, o := range t.Ops {
			re.Ops = append(re.Ops, kinds.OpExplain{Op: string(o.Op), Path: o.Path.String(), Value: o.Value, Field: "spec.mutations"})
		}
	}
	var msgs []string
	for _, rej := range dec.Rejections {
		if rej.Kind == r.Kind && rej.Rule == r.Key {
			msgs = append(msgs, rej.Message)
		}
	}
	if msgs != nil {
		m := strings.Join(msgs, "; ")
		re.Rejection = &m
	}
}

func explainStep(s Step) kinds.CriterionExplain {
	lang := s.Lang
	if lang == "" {
		lang = "cel"
	}
	ce := kinds.CriterionExplain{Field: s.Field, Select: s.Source, Values: []any{s.Value}, At: -1, Language: lang}
	switch v := s.Value.(type) {
	case bool:
		ce.Held, ce.Why = v, fmt.Sprint(v)
	default:
		ce.Held, ce.Why = s.Err == nil, "evaluated"
	}
	if s.Err != nil {
		ce.Values = []any{}
		ce.Held, ce.Why, ce.Error = false, "error", s.Err.Error()
	}
	return ce
}
