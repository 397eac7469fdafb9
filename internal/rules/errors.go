package rules

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidRule marks every compile error; check it with errors.Is.
var ErrInvalidRule = errors.New("invalid rule")

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
}

func (e *CompileError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.String()
	}
	return fmt.Sprintf("%s %s: %s", e.Kind, e.Rule, strings.Join(parts, "; "))
}

// Unwrap makes errors.Is(err, ErrInvalidRule) hold.
func (e *CompileError) Unwrap() error { return ErrInvalidRule }
