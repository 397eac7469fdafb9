package kinds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// Severities of a Finding.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Lint codes every kind shares. They are stable: scripts and docs may
// refer to them. A kind's own codes live in its adapter.
const (
	CodeUndecodable = "E002" // a rule cannot be decoded (unknown field, wrong type)
	CodeInvalid     = "E003" // a rule fails validation (field and position named)
)

// Finding is one problem `modwright lint` found (lint -o json prints it as
// it is).
type Finding struct {
	Severity string `json:"severity"` // error or warning
	Code     string `json:"code"`
	Origin   string `json:"origin"` // file:line of the document
	// Kind is the rule's kind (ModRule), named in the text form.
	Kind  string `json:"-"`
	Rule  string `json:"rule,omitempty"`
	Field string `json:"field,omitempty"`
	// Pos is the 1-based column in the field's text, or 0.
	Pos     int    `json:"column,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Position is file:line:column of the field (or of the document) in
	// its file, where an editor jumps; empty when unknown.
	Position string `json:"position,omitempty"`
}

// String is the finding's text form: position (or origin: ... column N
// when the position is unknown): Kind rule: field: severity code: message.
func (f Finding) String() string {
	var b strings.Builder
	if f.Position != "" {
		b.WriteString(f.Position)
	} else {
		b.WriteString(f.Origin)
	}
	if f.Rule != "" {
		b.WriteString(": " + f.Kind + " " + f.Rule)
	}
	if f.Field != "" {
		b.WriteString(": " + f.Field)
	}
	if f.Pos > 0 && f.Position == "" {
		fmt.Fprintf(&b, ": column %d", f.Pos)
	}
	fmt.Fprintf(&b, ": %s %s: %s", f.Severity, f.Code, f.Message)
	return b.String()
}

// Linter is implemented by compiled rules that lint themselves (`modwright
// lint`): warnings about a rule that compiles but will not do what its
// author meant, found from the rule and by trying it on samples (the
// objects given, of every kind: a linter picks the ones it can see). The
// findings name origin, where the rule was read. The CLI prints them and
// knows no kind.
type Linter interface {
	Lint(ctx context.Context, origin string, samples []Manifest) []Finding
}

// SchemaLinter is implemented by compiled rules whose expressions are
// typed by the schemas of the custom resources they see (`lint --crd`):
// they check themselves against the schemas given (none without --crd)
// and say what stays dynamically typed.
type SchemaLinter interface {
	LintSchemas(origin string, schemas []KindSchema) []Finding
}

// KindSchema is a kind a CRD serves, with the version's schema.
type KindSchema struct {
	Group, Version, Kind string
	Typing               *crdschema.Typing
}

// CompileLinter is implemented by kind adapters that report a manifest
// their Compile refused more precisely than CompileFindings does (their
// own codes and hints).
type CompileLinter interface {
	CompileFindings(m *Manifest, err error) []Finding
}

// CompileFindings turns the error Kind.Compile returned for manifest m
// into error findings: one per field of a *rules.CompileError (with its
// field and position), CodeUndecodable for a manifest that could not be
// decoded (rules.ErrUndecodable), CodeInvalid otherwise; any other error
// is one CodeUndecodable finding (its message without the "Kind
// namespace/name: " prefix, which the finding names).
func CompileFindings(kind string, m *Manifest, err error) []Finding {
	var ce *rules.CompileError
	if !errors.As(err, &ce) {
		return []Finding{{Severity: SeverityError, Code: CodeUndecodable, Origin: m.Origin, Kind: kind, Rule: m.Key(),
			Message: strings.TrimPrefix(err.Error(), kind+" "+m.Key()+": "),
			Hint:    "check the field names and types against the kind's reference"}}
	}
	code, hint := CodeInvalid, ""
	if errors.Is(err, rules.ErrUndecodable) {
		code, hint = CodeUndecodable, "check the field names and types against the kind's reference"
	}
	out := make([]Finding, 0, len(ce.Errors))
	for _, fe := range ce.Errors {
		out = append(out, Finding{Severity: SeverityError, Code: code, Origin: m.Origin, Kind: kind, Rule: ce.Rule,
			Field: fe.Field, Pos: fe.Pos + 1, Message: fe.Msg, Hint: hint})
	}
	return out
}

// ApplyAgain evaluates rule r alone on obj (admitted as op in namespace
// ns), then again on its result as an UPDATE: the operations of the second
// pass, as text, say that r is not idempotent (it changes its own result
// again). first is the first decision (nil when the evaluation failed);
// again is empty when the first pass changed nothing or had errors, or
// the second changed nothing.
func ApplyAgain(ctx context.Context, r engine.Rule, obj map[string]any, ns string, op rules.Operation) (first *engine.Decision, again []string) {
	snap := engine.NewSnapshot([]engine.Rule{r})
	eng := engine.New(engine.Options{NoTrace: true})
	first, err := eng.Evaluate(ctx, snap, OfflineRequest(obj, ns, op))
	if err != nil {
		return nil, nil
	}
	if !first.Changed() || len(first.Errors) > 0 {
		return first, nil
	}
	second, err := eng.Evaluate(ctx, snap, OfflineRequest(first.Object.(map[string]any), ns, rules.Update))
	if err != nil || !second.Changed() {
		return first, nil
	}
	for _, o := range second.Patch {
		again = append(again, o.String())
	}
	return first, again
}
