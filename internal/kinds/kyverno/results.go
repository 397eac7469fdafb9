package kyverno

// Status is a rule's result, as Kyverno's reports name it.
type Status string

// Results of a rule.
const (
	Pass  Status = "pass"
	Fail  Status = "fail"
	Warn  Status = "warn"
	Error Status = "error"
	Skip  Status = "skip"
)

// RuleResult is the result of one rule of a policy on one object.
type RuleResult struct {
	Policy  string `json:"policy"` // name, or namespace/name for a Policy
	Rule    string `json:"rule"`
	Status  Status `json:"result"`
	Message string `json:"message,omitempty"`
	// Enforced: a failure of this rule rejects the object.
	Enforced bool `json:"enforced,omitempty"`
	// Generated are the objects a generate rule made (with Kyverno's
	// labels), also given to the engine (engine.Decision.Generated).
	Generated []map[string]any `json:"generated,omitempty"`
	// Properties are a ValidatingPolicy's audit annotations (Kyverno
	// reports them as the result's properties).
	Properties map[string]string `json:"properties,omitempty"`
	// Target names the existing object a mutate of existing objects
	// changed or considered ("ConfigMap default/settings"); "" otherwise.
	Target string `json:"target,omitempty"`
	// more are the results of the rule's other targets (a mutate of
	// existing objects gives one per target).
	more []RuleResult
	// cause is the error of an Error result, when one made it: its chain
	// says whether data no reader gives offline is why (ErrNoReader).
	cause error
}

// celErrorResult is an Error result with its cause.
func celErrorResult(cause error, msg string) RuleResult {
	return RuleResult{Status: Error, Message: msg, cause: cause}
}

// Trace is the detail a policy records in its engine.RuleTrace: the
// result of every rule that matched, in order (a rule that did not match
// has none, as in Kyverno).
type Trace struct {
	Results []RuleResult
}

// ResultsOf returns the rule results a trace detail holds (nil when it is
// not a Kyverno policy's).
func ResultsOf(detail any) []RuleResult {
	if t, ok := detail.(*Trace); ok {
		return t.Results
	}
	return nil
}

// AuditResults yields each rule's result, as a background scan reports it.
func (t *Trace) AuditResults(yield func(rule, status, message string)) {
	for _, r := range t.Results {
		yield(r.Rule, string(r.Status), r.Message)
	}
}

// ReportLabels are the policy's severity and category (its
// policies.kyverno.io annotations), as Kyverno's reports give them.
func (p *Policy) ReportLabels() (severity, category string) { return p.severity, p.category }
