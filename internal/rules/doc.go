// Package rules is what every rule kind shares before evaluation: the
// admission Operation a rule reacts to, the Key that names a rule
// (namespace/name, or the name alone), and the one positioned error model
// (errors.go) that the compile step of every kind, lint, status conditions,
// the validating webhook and the CLI all report: FieldError (field path such
// as spec.match[2].select, byte position, message) inside CompileError (the
// kind and namespace/name of the rule), which wraps ErrInvalidRule, and
// ErrUndecodable when the manifest could not be decoded (kinds.Decode).
//
// It knows no rule kind (ModRule's compiler is internal/kinds/modrule), no
// expression language, no evaluation, HTTP or informer.
package rules
