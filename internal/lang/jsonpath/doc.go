// Package jsonpath is the JSONPath language of the language seam (package
// lang): an adapter over the leaf parser and evaluator
// (internal/jsonpath). A query compiles once, against an Env that declares
// the variable VarObject ("object"), the document its root '$' denotes
// (Activation.Object); the resulting *Program is a lang.Query.
//
// # What it owns
//
// The mapping between lang's shapes and the leaf's: Diagnostics from the
// leaf's SyntaxError (with its byte position), Values and Nodes from the
// leaf's EvaluateAppend and Select, and the check of an Env's Limits
// against the leaf's fixed bounds (MaxValues, MaxVisits): a limit other
// than zero (the default) or the leaf's own constant is refused at Compile.
// MaxOutput does not apply to a query (it renders no text) and is ignored.
// Evaluation errors are returned unchanged, so errors.Is on the leaf's
// sentinels (ErrEval, ErrTooManyValues, ErrTooMuchWork) and on ctx.Err()
// holds.
//
// # What it must not know
//
// No rule kind, no Kubernetes type, no admission review: kinds compile
// their fields through it and turn Diagnostics into field errors.
package jsonpath
