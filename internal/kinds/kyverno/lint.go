package kyverno

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/modwright/modwright/internal/kinds"
)

// codeNotYet is the lint warning of a part of a Kyverno policy that loads
// but that modwright does not carry out yet: at admission its result is
// an error (or, for mutating existing objects, it is not done), so `lint`
// says so before an admission does.
const codeNotYet = "W401"

// codePSSField is the lint warning of a Pod Security exclusion whose
// restrictedField no check reports an error at: it exempts nothing (as in
// Kyverno), which is seldom what its author meant.
const codePSSField = "W402"

// codePayloadMatch is the lint warning of a ValidatingPolicy of
// evaluation.mode JSON with matchConstraints: they are not read (the
// policy evaluates JSON payloads, never an object under admission),
// which is seldom what its author meant.
const codePayloadMatch = "W403"

var (
	_ kinds.Linter = (*Policy)(nil)
	_ kinds.Linter = (*CELPolicy)(nil)
)

// Lint warns about the rules not evaluated yet.
func (p *Policy) Lint(_ context.Context, origin string, _ []kinds.Manifest) []kinds.Finding {
	if p.info.Err != nil {
		return nil
	}
	var out []kinds.Finding
	for _, r := range p.rules {
		if r.autogen {
			continue
		}
		if r.notYet != "" {
			out = append(out, notYetFinding(origin, p.kind, p.info.Key, r.field, r.notYet))
		}
		if r.v != nil && r.v.pss != nil {
			for _, f := range slices.Sorted(maps.Keys(r.v.pss.unknown)) {
				out = append(out, kinds.Finding{Severity: kinds.SeverityWarning, Code: codePSSField, Origin: origin, Kind: p.kind, Rule: p.info.Key, Field: f,
					Message: fmt.Sprintf("no Pod Security check reports an error at %q: the exclusion exempts nothing", r.v.pss.unknown[f]),
					Hint:    "write the field as the checks name it, with [*] for list indices: spec.containers[*].securityContext.capabilities.add"})
			}
		}
	}
	return out
}

// Lint warns about the parts of the policy not carried out yet.
func (p *CELPolicy) Lint(_ context.Context, origin string, _ []kinds.Manifest) []kinds.Finding {
	if p.info.Err != nil {
		return nil
	}
	var out []kinds.Finding
	if p.notYet != "" {
		out = append(out, notYetFinding(origin, p.info.Kind, p.info.Key, "spec", p.notYet))
	}
	if p.payloadMatch {
		out = append(out, kinds.Finding{Severity: kinds.SeverityWarning, Code: codePayloadMatch, Origin: origin, Kind: p.info.Kind, Rule: p.info.Key,
			Field:   "spec.matchConstraints",
			Message: "not read: a policy of evaluation.mode JSON evaluates JSON payloads, never an object under admission",
			Hint:    "remove evaluation.mode for a policy of Kubernetes objects, or the matchConstraints (match conditions choose the payloads)"})
	}
	return out
}

func notYetFinding(origin, kind, key, field, why string) kinds.Finding {
	return kinds.Finding{Severity: kinds.SeverityWarning, Code: codeNotYet, Origin: origin, Kind: kind, Rule: key, Field: field,
		Message: why + ": every object it matches gets an error result (under failurePolicy Fail, a rejection)",
		Hint:    "docs/kyverno.md lists what runs; leave the rule out until it does, or set failurePolicy: Ignore"}
}
