package kinitiras

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/rules"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ kinds.Explainer = (*Rule)(nil)

// NamespaceScope says where the policy applies for an object in ns.
func (r *Rule) NamespaceScope(ns string) (string, bool) {
	if r.Kind != KindOverridePolicy {
		return r.Kind + ": applies cluster-wide", true
	}
	if ns != r.Namespace {
		return fmt.Sprintf("an OverridePolicy applies to objects of its own namespace (%s) only", r.Namespace), false
	}
	return "OverridePolicy in the object's namespace " + r.Namespace, true
}

// OperationsScope says why op is not among the rules' targetOperations.
func (r *Rule) OperationsScope(op rules.Operation) string {
	if r.Phase == engine.Mutate && (op == rules.Delete || op == rules.Connect) {
		return "an override policy never patches a " + string(op)
	}
	return "no rule's targetOperations include " + string(op)
}

// KindsScope names the kinds of the resourceSelectors.
func (r *Rule) KindsScope(pinned []string) string {
	if len(pinned) == 0 {
		return "resourceSelectors name no kind"
	}
	return "resourceSelectors name the kinds " + strings.Join(pinned, ", ")
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
	if d, ok := tr.Detail.(*Trace); ok {
		for i, v := range d.Selectors {
			s := &r.p.selectors[i]
			c := kinds.CriterionExplain{Field: fmt.Sprintf("spec.resourceSelectors[%d]", i), Language: "selector",
				Select: describeSelector(s), Values: []any{v.Selects}, Held: v.Selects, At: -1}
			if v.Err != nil {
				c.Error = v.Err.Error()
			}
			re.Criteria = append(re.Criteria, c)
		}
	}
	re.Criteria = append(re.Criteria, r.p.ruleCriteria()...)
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

// describeSelector is a selector in one line.
func describeSelector(s *ResourceSelector) string {
	parts := []string{s.APIVersion + " " + s.Kind}
	if s.Namespace != "" {
		parts = append(parts, "namespace "+s.Namespace)
	}
	if s.Name != "" {
		parts = append(parts, "name "+s.Name)
	}
	if s.LabelSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector); err == nil {
			parts = append(parts, "labels "+sel.String())
		}
	}
	if f := s.FieldSelector; f != nil {
		for _, k := range slices.Sorted(maps.Keys(f.MatchFields)) {
			parts = append(parts, "field "+k+"="+f.MatchFields[k])
		}
		for _, e := range f.MatchExpressions {
			if e != nil {
				parts = append(parts, fmt.Sprintf("field %s %s %v", e.Field, e.Operator, e.Value))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// ruleCriteria describe each rule: what it runs, and the rendered CUE of
// its template.
func (p *Policy) ruleCriteria() []kinds.CriterionExplain {
	var out []kinds.CriterionExplain
	add := func(field, what string, ops ops, rendered string, native bool) {
		on := "every operation"
		if len(ops) > 0 && !slices.Contains(ops, "*") {
			on = strings.Join(ops, ", ")
		}
		out = append(out, kinds.CriterionExplain{Field: field, Language: "rule", Select: what + "; targetOperations: " + on, At: -1})
		if rendered != "" {
			how := "rendered CUE"
			if native {
				how += ", run natively"
			}
			out = append(out, kinds.CriterionExplain{Field: field + " template", Language: how, Select: strings.TrimSpace(rendered), At: -1})
		}
	}
	// steps names what a rule runs, in order, and its rendered program.
	steps := func(rendered, cue *cuelang.Program, origins, plaintext int) (string, string) {
		var what []string
		src := ""
		if rendered != nil {
			what = append(what, "template")
			src = rendered.Source()
		}
		if cue != nil {
			what = append(what, "cue")
		}
		if origins > 0 {
			what = append(what, fmt.Sprintf("%d origin", origins))
		}
		if plaintext > 0 {
			what = append(what, fmt.Sprintf("%d plaintext", plaintext))
		}
		return strings.Join(what, ", then "), src
	}
	for i, r := range p.overrides {
		what, src := steps(r.rendered, r.cue, len(r.origin), len(r.plaintext))
		add(fmt.Sprintf("spec.overrideRules[%d]", i), what, r.ops, src, r.direct != nil)
	}
	for i, r := range p.validates {
		what, src := steps(r.rendered, r.cue, 0, 0)
		add(fmt.Sprintf("spec.validateRules[%d]", i), what, r.ops, src, r.direct != nil)
	}
	return out
}
