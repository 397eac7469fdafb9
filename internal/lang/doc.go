// Package lang is the language seam: what every expression language shares.
// A Language compiles a source text once, against a declared Env (the
// variables a program may read, the limits of an evaluation), into an
// immutable Program, or reports positioned Diagnostics; a Program is
// evaluated with a context and an Activation (the values of the declared
// variables). Query (JSONPath) and Text (Go templates) are the shapes the
// first two languages add to Program; CEL (lang/cel) evaluates to values
// and mutations. A Lazy is an object whose members are computed on first
// read (a Policy's variables), which languages bind like any object.
//
// The languages live in subpackages (lang/jsonpath, lang/gotemplate,
// lang/cel), each a small adapter over a leaf package (internal/jsonpath,
// internal/template) or a library (cel-go with the kube-apiserver's CEL
// environment). Package lang knows no rule kind, no Kubernetes type,
// no admission review: rule kinds (internal/kinds/...) compile their fields
// through it and turn Diagnostics into rules.FieldErrors.
package lang
