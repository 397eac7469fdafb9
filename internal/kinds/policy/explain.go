package policy

import (
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

var _ kinds.Explainer = (*Rule)(nil)

// NamespaceScope says where the policy applies for an object in ns.
func (r *Rule) NamespaceScope(ns string) (string, bool) {
	switch {
	case r.cluster:
		if r.Index.Filtered && !r.InScope(ns) {
			return fmt.Sprintf("no resources entry's namespaces match namespace %q", ns), false
		}
		return r.Kind + ": applies cluster-wide", true
	case ns == "":
		return fmt.Sprintf("a %s in namespace %s applies only to objects in %s, not to cluster-scoped ones", r.Kind, r.Namespace, r.Namespace), false
	case ns != r.Namespace:
		return fmt.Sprintf("a %s in namespace %s applies only to objects in %s, not %s", r.Kind, r.Namespace, r.Namespace, ns), false
	}
	return r.Kind + " in the object's namespace " + r.Namespace, true
}

// OperationsScope says why op is not among match.operations.
func (r *Rule) OperationsScope(op rules.Operation) string {
	ops := []string{"CREATE", "UPDATE"}
	if r.Spec.Match != nil && len(r.Spec.Match.Operations) > 0 {
		ops = ops[:0]
		for _, o := range r.Spec.Match.Operations {
			ops = append(ops, string(o))
		}
	}
	return fmt.Sprintf("match.operations [%s] do not include %s", strings.Join(ops, ", "), op)
}

// KindsScope names the kinds of match.resources.
func (r *Rule) KindsScope(pinned []string) string {
	if len(pinned) == 0 {
		return "match.resources name no kind"
	}
	return "match.resources name the kinds " + strings.Join(pinned, ", ")
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
