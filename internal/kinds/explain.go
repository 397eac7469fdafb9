package kinds

import (
	"fmt"
	"slices"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// Explainer is implemented by compiled rules that explain their own
// evaluation (`modwright explain`): the CLI prints what they fill in, and
// knows no kind.
type Explainer interface {
	Scoped
	// Explain fills re from the rule's trace of one evaluation (tr is
	// nil when the rule was not evaluated) and the decision.
	Explain(re *RuleExplain, tr *engine.RuleTrace, dec *engine.Decision)
}

// Scoped is a rule's words for the scope its index keys
// (engine.IndexKeys) encode, from which ScopeReason derives why it is, or
// is not, a candidate for an object.
type Scoped interface {
	// NamespaceScope says, for an object in namespace ns ("" for
	// cluster-scoped), where the rule applies ("rule in the object's
	// namespace team-a"), or, ok false, why the namespace is outside it.
	NamespaceScope(ns string) (text string, ok bool)
	// OperationsScope says why op is not among the operations it reacts
	// to ("admissionOperations [CREATE UPDATE] do not include DELETE").
	OperationsScope(op rules.Operation) string
	// KindsScope says why an object of a kind not among pinned is outside
	// it ("match.resources name the kinds Pod"); pinned is empty when the
	// rule can match no kind.
	KindsScope(pinned []string) string
}

// ScopeReason says why rule r is, or is not (in: the snapshot's answer,
// engine.Snapshot.Candidates), a candidate for an object of kind in
// namespace ns ("" for cluster-scoped) under op: in its namespaces, then
// its operations, then its kinds (the rule's IndexKeys), each in the
// kind's words.
func ScopeReason(r engine.Rule, s Scoped, ns, kind string, op rules.Operation, in bool) string {
	ix := r.Info().Index
	where, ok := s.NamespaceScope(ns)
	switch {
	case !ok:
		return "out of scope: " + where
	case !ix.Operations.Has(op):
		return "out of scope: " + s.OperationsScope(op)
	case ix.Kinds != nil && !slices.Contains(ix.Kinds, kind):
		return "out of scope: " + s.KindsScope(ix.Kinds)
	case !in:
		return "out of scope"
	}
	kindText := "any kind"
	if ix.Kinds != nil {
		kindText = "kind " + kind
	}
	return fmt.Sprintf("in scope: %s; %s; %s", where, op, kindText)
}

// RuleExplain is one rule's part of an explanation (explain -o json prints
// it as it is).
type RuleExplain struct {
	Rule string `json:"rule"`
	// Type is the kind's word for what the rule does (ModRule: Patch or
	// Reject).
	Type    string `json:"type"`
	Tier    int    `json:"tier"`
	InScope bool   `json:"inScope"`
	// Scope says why the rule is, or is not, in scope.
	Scope string `json:"scope"`
	// Outcome is matched, not-matched, failed or skipped; empty out of scope.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Note is added to the outcome in the text form (when the rule runs,
	// say).
	Note     string             `json:"-"`
	Criteria []CriterionExplain `json:"criteria,omitempty"`
	// NotEvaluated names the criteria after the first that failed.
	NotEvaluated []string    `json:"notEvaluated,omitempty"`
	Ops          []OpExplain `json:"ops,omitempty"`
	// Rejection is the rendered message of a rule that rejected.
	Rejection *string `json:"rejection,omitempty"`
	// LastAppliedError is set when the ops could not be mirrored into the
	// last-applied-configuration annotation.
	LastAppliedError string `json:"lastAppliedError,omitempty"`
}

// CriterionExplain is one evaluated criterion (condition) of a rule.
type CriterionExplain struct {
	Field string `json:"field"`
	// Select is the criterion's expression, Matcher what its values are
	// tested against.
	Select  string `json:"select"`
	Matcher string `json:"matcher,omitempty"`
	Negate  bool   `json:"negate,omitempty"`
	Values  []any  `json:"values"`
	Held    bool   `json:"held"`
	// Why says what decided the criterion (before negate).
	Why string `json:"why"`
	// At is the index of the deciding value among those tested, or -1.
	At int `json:"at"`
	// Tested are the values the matcher tested (the text form shows the
	// deciding one, Tested[At]); nil when At does not point into them.
	Tested []any  `json:"-"`
	Error  string `json:"error,omitempty"`
	// Language is set for an expression evaluated to a value (a
	// Policy's CEL): Select is its source, Values[0] its value, and the
	// text form prints "= value" instead of a matcher's verdict.
	Language string `json:"language,omitempty"`
}

// OpExplain is one operation a mutating rule produced.
type OpExplain struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
	Field string `json:"field"`
	// Keys are the #N placeholder values (the keys select captured).
	Keys []any `json:"keys,omitempty"`
}
