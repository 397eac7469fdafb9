// Package rego is the Rego language (OPA, github.com/open-policy-agent/opa
// v1): a module and an entrypoint compiled once (PrepareForEval) into an
// immutable Program, evaluated with an input under the guardrails rule
// packs need: a time budget per evaluation (ErrEvalTimeout), panics
// recovered (ErrEvalPanic), and no builtin that reads outside the input
// (HTTP, the network, the OPA runtime, time, randomness, files).
// Specialize evaluates a Program partially for the input members known
// when a rule loads (OPA's partial evaluation, bounded in time and size)
// and compiles what is left on its own.
//
// It knows no rule kind, no pack, no Kubernetes object and no admission.
package rego
