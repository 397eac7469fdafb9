package policy

// Trace is a policy's record of one evaluation (engine.RuleTrace.Detail):
// each expression with its value or error, and the failed validations.
type Trace struct {
	Variables   []Step
	Conditions  []Step
	Validations []Step
	Mutations   []Step
	Audits      []Step
	Failures    []Failure
}

// Step is one expression evaluated.
type Step struct {
	Index  int
	Field  string
	Source string
	Value  any
	Err    error
}

// Failure is one validation that failed, with its message.
type Failure struct {
	Field, Message string
}

// stepKind says which list of a Trace a step goes to.
type stepKind uint8

const (
	stepVariable stepKind = iota
	stepCondition
	stepValidation
	stepMutation
	stepAudit
)

// step records one expression evaluated, when tracing.
func (ev *run) step(k stepKind, i int, field, src string, v any, err error) {
	t := ev.tr
	if t == nil {
		return
	}
	s := Step{Index: i, Field: field, Source: src, Value: v, Err: err}
	switch k {
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
