package kyverno

import (
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

var _ kinds.Explainer = (*Policy)(nil)

// NamespaceScope: a ClusterPolicy applies in every namespace, a Policy in
// its own.
func (p *Policy) NamespaceScope(ns string) (string, bool) {
	if p.ns == "" {
		return "ClusterPolicy: every namespace", true
	}
	if ns == p.ns {
		return "Policy in the object's namespace " + ns, true
	}
	if ns == "" {
		return fmt.Sprintf("a Policy of namespace %s applies to objects of its namespace only, not to cluster-scoped ones", p.ns), false
	}
	return fmt.Sprintf("a Policy of namespace %s applies to objects of its namespace only, not %s", p.ns, ns), false
}

// OperationsScope says which operations the rules' match names.
func (p *Policy) OperationsScope(op rules.Operation) string {
	return fmt.Sprintf("no rule's match.resources.operations includes %s", op)
}

// KindsScope says which kinds the rules (and their autogen rules) name.
func (p *Policy) KindsScope(pinned []string) string {
	if len(pinned) == 0 {
		return "no rule matches any kind"
	}
	return "the rules (with autogen) match the kinds " + strings.Join(pinned, ", ")
}

// Explain lists the rules in order (the autogen ones last, as Kyverno
// generates them), each with its result and Kyverno's message, or "not
// matched".
func (p *Policy) Explain(re *kinds.RuleExplain, tr *engine.RuleTrace, dec *engine.Decision) {
	re.Type = "validate"
	if tr == nil {
		return
	}
	re.Outcome, re.Reason = string(tr.Outcome), tr.Reason
	got := map[string]RuleResult{}
	for _, r := range ResultsOf(tr.Detail) {
		got[r.Rule] = r
	}
	for _, r := range p.rules {
		c := kinds.CriterionExplain{Field: r.field, Language: "rule", Select: r.name, At: -1}
		if r.autogen {
			c.Language = "autogen rule"
		}
		if res, ok := got[r.name]; ok {
			v := string(res.Status)
			if res.Status != Pass && res.Message != "" {
				v += ": " + res.Message
			}
			if res.Status == Fail && res.Enforced {
				v += " (Enforce)"
			}
			c.Values = []any{v}
			c.Held = res.Status == Pass || res.Status == Skip
			c.Why = res.Message
		} else {
			c.Values = []any{"not matched"}
			c.Held = true
			c.Why = "match/exclude do not select the object"
		}
		re.Criteria = append(re.Criteria, c)
	}
	for _, rej := range dec.Rejections {
		if rej.Kind == p.info.Kind && rej.Rule == p.info.Key {
			m := rej.Message
			re.Rejection = &m
		}
	}
}
