package gatekeeper

import (
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

var _ kinds.Explainer = (*Constraint)(nil)

// NamespaceScope: a constraint is cluster-wide (its spec.match narrows it).
func (c *Constraint) NamespaceScope(string) (string, bool) {
	return "constraints are cluster-wide: every namespace (spec.match decides)", true
}

// OperationsScope says which operations the template reviews.
func (c *Constraint) OperationsScope(op rules.Operation) string {
	if len(c.t.operations) == 0 {
		return fmt.Sprintf("Gatekeeper's webhook reviews CREATE and UPDATE, not %s (the template names no operations)", op)
	}
	return fmt.Sprintf("the template's operations %v do not include %s", c.t.operations, op)
}

// KindsScope says which kinds spec.match names.
func (c *Constraint) KindsScope(pinned []string) string {
	if len(pinned) == 0 {
		return "the constraint matches no kind"
	}
	return "spec.match.kinds names the kinds " + strings.Join(pinned, ", ")
}

// Explain lists the violations the template found, each as Gatekeeper's
// message, or that it found none.
func (c *Constraint) Explain(re *kinds.RuleExplain, tr *engine.RuleTrace, dec *engine.Decision) {
	re.Type = "validate (" + strings.Join(c.actions.webhook, ", ") + ")"
	if tr == nil {
		return
	}
	re.Outcome, re.Reason = string(tr.Outcome), tr.Reason
	lang, field := "rego", "spec.targets[0]"
	if c.t.celCode != nil {
		lang = "K8sNativeValidation"
	}
	tt, _ := tr.Detail.(*Trace)
	if tt != nil && len(tt.Violations) == 0 {
		re.Criteria = append(re.Criteria, kinds.CriterionExplain{Field: field, Language: lang, Select: "violation", Values: []any{"no violation"}, Held: true, Why: "no violation", At: -1})
	}
	if tt != nil {
		for _, v := range tt.Violations {
			re.Criteria = append(re.Criteria, kinds.CriterionExplain{Field: field, Language: lang, Select: "violation", Values: []any{v.Msg}, Why: v.Msg, At: -1})
		}
	}
	for _, rej := range dec.Rejections {
		if rej.Kind == c.info.Kind && rej.Rule == c.info.Key {
			m := rej.Message
			re.Rejection = &m
		}
	}
}
