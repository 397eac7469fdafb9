package kinds

import (
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// Explainer is implemented by compiled rules that explain their own
// evaluation (`modwright explain`): the CLI prints what they fill in, and
// knows no kind.
type Explainer interface {
	// ScopeReason says why the rule is, or is not (in: the snapshot's
	// answer, Candidates), a candidate for an object of kind in namespace
	// ns ("" for cluster-scoped) under op.
	ScopeReason(ns, kind string, op rules.Operation, in bool) string
	// Explain fills re from the rule's trace of one evaluation (tr is
	// nil when the rule was not evaluated) and the decision.
	Explain(re *RuleExplain, tr *engine.RuleTrace, dec *engine.Decision)
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
