package rules

import (
	"errors"
	"fmt"
	"strings"
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
