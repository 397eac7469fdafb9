package controller

import (
	"context"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/webhook"
)

// DefaultPath is where the rules' mutating webhook is served: it completes
// the rules of the kinds that ask (kinds.Admitter; kinitiras' policies get
// their templates rendered into renderedCue, as kinitiras' own policy
// webhook did).
const DefaultPath = "/default-rule"

// DefaultHandler completes created and updated rules. A rule whose
// completion fails is refused with its field errors (the validating
// webhook would refuse it too); kinds that complete nothing pass.
type DefaultHandler struct {
	Kinds *kinds.Registry
}

var _ webhook.AdmitFunc = DefaultHandler{}.Admit

// Admit completes a rule.
func (h DefaultHandler) Admit(_ context.Context, req *engine.Request) webhook.Verdict {
	k, m, answer := ruleOf(h.Kinds, req)
	if answer != nil {
		return *answer
	}
	a, ok := k.(kinds.Admitter)
	if !ok {
		return webhook.Verdict{Allowed: true}
	}
	patch, err := a.Default(m)
	if err != nil {
		return Invalid(k, m, err)
	}
	return webhook.Verdict{Allowed: true, Patch: patch}
}
