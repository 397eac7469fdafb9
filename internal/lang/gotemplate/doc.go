// Package gotemplate is the Go template language of the language seam
// (package lang): an adapter over the leaf template package
// (internal/template), whose templates see KubeMod's context
// (template.Data). A template compiles once, against an Env whose variables
// are among VarTarget, VarNamespace, VarSelectedItem and VarSelectKeyParts
// (bound to Activation.Object, Namespace, Item and Keys); the resulting
// *Program is a lang.Text.
//
// # What it owns
//
// The mapping between lang's shapes and the leaf's: the binding of an
// Activation to a template.Data (taken from a pool the Program owns, so a
// render allocates nothing of its own), Diagnostics from the leaf's compile
// errors (positioned at the line and column the error names), the check
// of an Env's Limits against the leaf's fixed bounds (MaxOutput, MaxWork:
// a limit other than zero or the leaf's own constant is refused at
// Compile; MaxValues does not apply to a text and is ignored), and
// ParseValue, the value a rendered text denotes. The leaf's Execute takes
// no context: Render checks ctx before it runs, and the leaf's own bounds
// (MaxWork, MaxSteps, MaxOutput in internal/template/limits.go) bound the
// run. Errors are returned unchanged (errors.Is(err, template.ErrLimit)
// holds).
//
// # What it must not know
//
// No rule kind, no Kubernetes type, no admission review: kinds compile
// their fields through it and turn Diagnostics into field errors.
package gotemplate
