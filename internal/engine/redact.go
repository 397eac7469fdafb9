package engine

import (
	"encoding/base64"
	"slices"
	"strings"
)

// Redacted replaces a Secret's value in what an evaluation says.
const Redacted = "<redacted>"

// minRedacted is the shortest value redacted: a shorter one ("1", "ab")
// would blank out common text everywhere and tells little.
const minRedacted = 4

// secretValues returns the texts of a Secret's values (the object's and
// the old object's): each member of data, as its base64 text and
// decoded, and of stringData.
func secretValues(objs ...any) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minRedacted {
			out = append(out, s)
		}
	}
	for _, o := range objs {
		m, _ := o.(map[string]any)
		data, _ := m["data"].(map[string]any)
		for _, v := range data {
			if s, ok := v.(string); ok {
				add(s)
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					add(string(b))
				}
			}
		}
		sd, _ := m["stringData"].(map[string]any)
		for _, v := range sd {
			if s, ok := v.(string); ok {
				add(s)
			}
		}
	}
	// The longest first, so that a value holding another is replaced whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// redactor removes a Secret's values from texts and errors.
type redactor struct{ r *strings.Replacer }

func newRedactor(values []string) *redactor {
	if len(values) == 0 {
		return nil
	}
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, Redacted)
	}
	return &redactor{strings.NewReplacer(pairs...)}
}

func (r *redactor) text(s string) string { return r.r.Replace(s) }

// err is err with its text redacted; errors.Is and errors.As still see
// its chain.
func (r *redactor) err(err error) error {
	if err == nil {
		return nil
	}
	text := r.text(err.Error())
	if text == err.Error() {
		return err
	}
	return &redactedError{text: text, err: err}
}

type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// redact removes the values of the Secret under review from everything the
// decision says (errors, rejection messages, warnings, audit annotations):
// they reach logs, events, the API server's response and the CLI's output,
// and a policy failing on a Secret must not print it (docs/security.md).
func (r *redactor) decision(d *Decision) {
	for i := range d.Errors {
		d.Errors[i].Err = r.err(d.Errors[i].Err)
	}
	for i := range d.Rejections {
		d.Rejections[i].Message = r.text(d.Rejections[i].Message)
		d.Rejections[i].MessageError = r.err(d.Rejections[i].MessageError)
	}
	for i := range d.Warnings {
		d.Warnings[i].Message = r.text(d.Warnings[i].Message)
	}
	for i := range d.AuditAnnotations {
		d.AuditAnnotations[i].Value = r.text(d.AuditAnnotations[i].Value)
	}
	// The trace's reasons (explain prints them); its operations are the
	// patch of the object itself, and its kind details the kind's.
	for i := range d.Trace {
		d.Trace[i].Reason = r.text(d.Trace[i].Reason)
		d.Trace[i].LastAppliedErr = r.err(d.Trace[i].LastAppliedErr)
	}
}
