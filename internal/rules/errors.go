package rules

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidRule marks every compile error; check it with errors.Is.
var ErrInvalidRule = errors.New("invalid rule")

// ErrUndecodable marks the compile errors of a manifest that could not be
// decoded into its kind's type (an apiVersion not served, an unknown or
// duplicate field, a value of the wrong type); check it with errors.Is.
var ErrUndecodable = errors.New("undecodable rule")

// FieldError is one problem of a rule.
type FieldError struct {
	Field string // field path, for example spec.match[2].select
	Pos   int    // 0-based byte offset in the field's text, or -1
	Msg   string
}

func (e FieldError) String() string {
	if e.Pos >= 0 {
		return fmt.Sprintf("%s: column %d: %s", e.Field, e.Pos+1, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Msg)
}

// CompileError lists every problem found in one rule.
type CompileError struct {
	// Kind is the rule's kind as its manifests spell it ("ModRule").
	Kind   string
	Rule   string // namespace/name
	Errors []FieldError
	// Undecodable: the manifest could not be decoded (ErrUndecodable).
	Undecodable bool
}

func (e *CompileError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.String()
	}
	return fmt.Sprintf("%s %s: %s", e.Kind, e.Rule, strings.Join(parts, "; "))
}

// Unwrap makes errors.Is(err, ErrInvalidRule) hold, and
// errors.Is(err, ErrUndecodable) when Undecodable.
func (e *CompileError) Unwrap() []error {
	if e.Undecodable {
		return []error{ErrInvalidRule, ErrUndecodable}
	}
	return []error{ErrInvalidRule}
}

// The API server's bounds on the texts a rule's error is reported in: a
// status condition's message (metav1.Condition) and an event's note
// (events.k8s.io/v1). A longer text is refused with the whole write, so
// the report would be lost: Truncate them to these.
const (
	MaxConditionMessage = 32 << 10
	MaxEventNote        = 1 << 10
)

// Truncate returns s when it holds at most most bytes, else its longest
// prefix of whole runes that leaves room for "…" and then "…": at most
// most bytes, valid UTF-8 when s is.
func Truncate(s string, most int) string {
	if len(s) <= most {
		return s
	}
	const ellipsis = "…"
	n := most - len(ellipsis)
	if n < 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}
