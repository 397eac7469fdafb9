package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// Well-known annotations.
const (
	LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	NodeNameAnnotation    = "ref.kubemod.io/nodename"
	NodeAnnotation        = "ref.kubemod.io/node" // also accepted
)

// Resolver provides the related objects exposed under syntheticRefs. Both
// methods return (nil, nil) when the object does not exist.
type Resolver interface {
	Namespace(ctx context.Context, name string) (map[string]any, error)
	Node(ctx context.Context, name string) (map[string]any, error)
}

// Request is one object under admission.
type Request struct {
	Operation rules.Operation
	// Namespace of the object; empty for cluster-scoped objects.
	Namespace string
	// Kind of the object, when the caller knows it without decoding (the
	// AdmissionRequest's kind). Empty: read from the object.
	Kind string
	// Object is the object for CREATE and UPDATE, OldObject the one for
	// DELETE. Each may be given decoded (a JSON tree, never modified) or as
	// JSON text in ObjectJSON / OldObjectJSON, decoded only when a rule can
	// apply.
	Object, OldObject         any
	ObjectJSON, OldObjectJSON []byte
}

// Decision is the outcome of evaluating one request.
type Decision struct {
	// Object is the object after every applied rule: the input itself (not a
	// copy) when nothing changed. It shares every subtree the rules did not
	// touch with the input (and may share values with the rules), so treat
	// it as read-only. It is nil when the request gave the object only as
	// JSON text and no rule could apply: Evaluate does not decode what no
	// rule reads (the webhook reads only Patch), and leaves that text in
	// ObjectJSON. DecodeObject returns the object in every case.
	Object any
	// Patch turns the input object into Object (RFC 6902).
	Patch []patch.Operation
	// Applied names the Patch rules whose operations were applied, in
	// order, with or without a trace.
	Applied []string
	// Rejections lists the Reject rules that matched, in evaluation order.
	Rejections []Rejection
	// Trace has one entry per rule considered, in evaluation order.
	Trace []RuleTrace
	// Errors lists what went wrong while applying rules: a rule that failed
	// is skipped as a whole, and the others still run.
	Errors []RuleError
	// ObjectJSON is the request's JSON text of the object when Evaluate
	// left it undecoded (Object is then nil); nil otherwise.
	ObjectJSON []byte
}

// Allowed reports whether no Reject rule matched.
func (d *Decision) Allowed() bool { return len(d.Rejections) == 0 }

// Changed reports whether the rules changed the object.
func (d *Decision) Changed() bool { return len(d.Patch) > 0 }

// DenialText lists the rejections as KubeMod does:
// `ns/name: "message"` (or `ns/name` without a message), joined by ","
// without a space, exactly as KubeMod's webhook joins them.
func (d *Decision) DenialText() string {
	parts := make([]string, len(d.Rejections))
	for i, r := range d.Rejections {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// DenialMessage is the message a denied request gets, as KubeMod's webhook
// words it: "operation rejected by the following ModRule(s): " and
// DenialText.
func (d *Decision) DenialMessage() string {
	return "operation rejected by the following ModRule(s): " + d.DenialText()
}

// DecodeObject returns Object, after decoding ObjectJSON into it when
// Evaluate left the object undecoded (given as JSON text, and no rule could
// apply). The error wraps ErrInvalidRequest when that text is not JSON.
// Like the rest of the Decision, it is not safe for concurrent use.
func (d *Decision) DecodeObject() (any, error) {
	if d.Object != nil || d.ObjectJSON == nil {
		return d.Object, nil
	}
	v, err := decodeObject(d.ObjectJSON)
	if err != nil {
		return nil, err
	}
	d.Object, d.ObjectJSON = v, nil
	return v, nil
}

// Rejection is one matching Reject rule.
type Rejection struct {
	Rule string
	// Message is the rendered rejectMessage; empty when the rule has none or
	// it failed to render (MessageError then says why).
	Message      string
	MessageError error
}

func (r Rejection) String() string {
	if r.Message == "" {
		return r.Rule
	}
	return r.Rule + ": " + strconv.Quote(r.Message)
}

// Outcome says what happened to a rule.
type Outcome string

// Outcomes.
const (
	Matched    Outcome = "matched"     // all criteria held (Patch rules: applied)
	NotMatched Outcome = "not-matched" // a criterion failed
	Failed     Outcome = "failed"      // matched, but its operations could not be built or applied
	Skipped    Outcome = "skipped"     // not evaluated (see Reason)
)

// RuleTrace records how one rule was evaluated.
type RuleTrace struct {
	Rule string
	Type v1beta1.ModRuleType
	Tier int
	Outcome
	// Reason explains Skipped and Failed outcomes.
	Reason string
	// Criteria holds the evaluated criteria in order; evaluation stops at the
	// first that fails.
	Criteria []CriterionTrace
	// Ops are the operations a matching Patch rule produced (applied unless
	// the outcome is Failed).
	Ops []patch.Operation
	// OpSources has one entry per operation in Ops: the patch item it came
	// from and the keys its select captured (the #N placeholder values).
	OpSources []OpSource
	// LastApplied is set when the rule's operations could not be mirrored
	// into the last-applied-configuration annotation.
	LastAppliedErr error
}

// CriterionTrace records one criterion.
type CriterionTrace struct {
	// Criterion is the compiled criterion (its Field is spec.match[i]).
	Criterion *rules.Criterion
	// Values are what select returned (undefined dropped).
	Values []any
	// Single is true when select yields at most one value by construction.
	Single bool
	Held   bool
	// Verdict says what decided the outcome (before negation), and At is
	// the index of the deciding value among those tested (the elements of
	// a single array), or -1.
	Verdict Verdict
	At      int
	// Err is set when select failed to evaluate (then the criterion has no result).
	Err error
}

// Verdict says what decided a criterion, before negate flips the outcome.
type Verdict uint8

// Verdicts.
const (
	VerdictError   Verdict = iota + 1 // select failed: no result
	VerdictBoolean                    // a single boolean decided alone
	VerdictNull                       // a single null: no result
	VerdictNothing                    // nothing selected (or an empty array): no result
	VerdictExists                     // no matcher, and something was selected
	VerdictAny                        // a value satisfied the matcher
	VerdictNone                       // no value satisfied the matcher
	VerdictAll                        // every value satisfied the matcher (matchFor: All)
	VerdictNotAll                     // a value failed the matcher (matchFor: All)
)

var verdictText = [...]string{
	VerdictError:   "select failed",
	VerdictBoolean: "select yielded a single boolean, which decides alone",
	VerdictNull:    "select yielded null (no result)",
	VerdictNothing: "select yielded nothing (no result)",
	VerdictExists:  "select yielded a value and there is no matcher",
	VerdictAny:     "a value satisfied the matcher",
	VerdictNone:    "no value satisfied the matcher",
	VerdictAll:     "every value satisfied the matcher (matchFor: All)",
	VerdictNotAll:  "a value failed the matcher (matchFor: All)",
}

func (v Verdict) String() string {
	if int(v) < len(verdictText) && verdictText[v] != "" {
		return verdictText[v]
	}
	return "unknown"
}

// OpSource is where one operation of a rule trace came from.
type OpSource struct {
	Field string // spec.patch[i]
	// Keys are the keys the patch item's select captured for this
	// operation (#0, #1, ...); nil without select.
	Keys []any
}

// RuleError is a rule that failed while being applied.
type RuleError struct {
	Rule  string
	Field string // spec.patch[i], or "" for the rule as a whole
	Err   error
	// LastApplied is true when the failure concerns only the
	// last-applied-configuration copy; the object itself was patched.
	LastApplied bool
}

func (e RuleError) Error() string {
	where := e.Rule
	if e.Field != "" {
		where += " " + e.Field
	}
	if e.LastApplied {
		return fmt.Sprintf("%s (last-applied-configuration): %v", where, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e RuleError) Unwrap() error { return e.Err }
