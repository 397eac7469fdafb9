package policy

import "strings"

// Trace is a policy's record of one evaluation (engine.RuleTrace.Detail):
// each expression with its value or error, and the failed validations.
type Trace struct {
	// Context are the context entries, in the order they were read.
	Context     []Step
	Variables   []Step
	Conditions  []Step
	Validations []Step
	Mutations   []Step
	Audits      []Step
	// Substitutions are the {{ }} variables substituted, with their
	// values.
	Substitutions []Step
	Failures      []Failure
	// Cost is what the policy's CEL expressions spent of its budgets (the
	// match conditions', then its checks' or mutations'), in CEL cost
	// units, counted as if the policy ran alone: an expression another
	// policy evaluated on the same object is charged again.
	Cost uint64
}

// Step is one expression evaluated.
type Step struct {
	Index  int
	Field  string
	Lang   string // "cel" (default), "jmespath", "conditions", "context"...
	Source string
	Value  any
	Err    error
}

// Failure is one validation that failed, with its message.
type Failure struct {
	Field, Message string
}

// AuditResults yields the policy's result, as a background scan reports
// it: fail with each failed validation's field and message, pass when
// validations ran and none failed, nothing when none ran.
func (t *Trace) AuditResults(yield func(rule, status, message string)) {
	if len(t.Failures) == 0 {
		if len(t.Validations) > 0 {
			yield("", "pass", "")
		}
		return
	}
	msgs := make([]string, len(t.Failures))
	for i, f := range t.Failures {
		msgs[i] = f.Field + ": " + f.Message
	}
	yield("", "fail", strings.Join(msgs, "; "))
}

// stepKind says which list of a Trace a step goes to.
type stepKind uint8

const (
	stepVariable stepKind = iota
	stepCondition
	stepValidation
	stepMutation
	stepAudit
	stepContext
)

// step records one expression evaluated, when tracing.
func (ev *run) step(k stepKind, i int, field, src string, v any, err error) {
	ev.stepLang(k, i, field, "", src, v, err)
}

// stepLang is step for an expression of language lang.
func (ev *run) stepLang(k stepKind, i int, field, lang, src string, v any, err error) {
	t := ev.tr
	if t == nil {
		return
	}
	s := Step{Index: i, Field: field, Lang: lang, Source: src, Value: v, Err: err}
	switch k {
	case stepContext:
		t.Context = append(t.Context, s)
	case stepVariable:
		t.Variables = append(t.Variables, s)
	case stepCondition:
		t.Conditions = append(t.Conditions, s)
	case stepValidation:
		t.Validations = append(t.Validations, s)
	case stepMutation:
		t.Mutations = append(t.Mutations, s)
	case stepAudit:
		t.Audits = append(t.Audits, s)
	}
}
