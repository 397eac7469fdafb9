// Package jmespath is the JMESPath language with
// Kyverno's custom functions, over github.com/jmespath-community/go-jmespath
// (the maintained community library; Kyverno evaluates with a fork of it).
//
// It owns: parsing an expression once at Compile (a syntax error is a
// lang.Diagnostic at the library's offset; a call of an unknown function
// is one too, at load, where Kyverno fails only when the call is reached);
// the function table (JMESPath's built-ins, then Kyverno's functions,
// which replace a built-in of the same name as in Kyverno), built once per
// compiled Program; the binding of an
// evaluation's document (Activation.Vars[VarContext], else
// Activation.Object); the conversion between our JSON value trees
// (json.Number numbers, lang.Lazy objects) and the library's (float64),
// both ways: integral results come back as json.Number integer text;
// the evaluation of the library's syntax tree, with the library's
// semantics (eval.go, checked against the library's own interpreter by
// FuzzEvaluate) within bounds the library lacks: MaxDepth and MaxSource
// checked before parsing (depth.go), MaxWork steps and MaxOutput bytes
// for any value built or returned, functions that multiply their input
// (replace_all, pad_left, join, regex_replace_all...) refused before they
// allocate (bounds.go), the context checked as it goes; quantities
// parsed within package quantity's bounds.
//
// Kyverno's functions implemented: compare, equal_fold, replace,
// replace_all, to_upper, to_lower, trim, trim_prefix, split,
// regex_replace_all, regex_replace_all_literal, regex_match,
// pattern_match, label_match, to_boolean, base64_decode, base64_encode,
// sha256, sha1, md5, truncate, path_canonicalize, parse_json, parse_yaml,
// items, object_from_lists, lookup, semver_compare (blang/semver ranges,
// as Kyverno), image_normalize, and the arithmetic add, subtract,
// multiply, divide, modulo, sum, round over numbers, Kubernetes quantities
// and Go durations (a string operand is a quantity when it parses as one,
// else a duration, as Kyverno: '1m' is a milli-unit, not a minute), the
// time functions time_since, time_now, time_now_utc, time_add,
// time_parse, time_to_cron, time_utc, time_diff, time_before, time_after,
// time_between, time_truncate (RFC 3339 times; time_now* and time_since
// with an empty end read the wall clock), is_external_url (an IP literal
// is classified; a host name is resolved through DNS, bounded by
// lookupTimeout: the only function doing I/O), x509_decode (Go's x509
// types as JSON, an RSA key as {N: decimal text, E}) and random (a text
// matching a regular expression). Every error of a function call is a
// *FunctionError naming the function ("JMESPath function '<name>': ...",
// Kyverno's wording): its own errors, and the library's argument count
// and type errors, which Kyverno gives without the name.
//
// Remaining work: none of the functions Kyverno's current release
// registers is missing; the conformance test counts and logs the cases of
// any function added there later (skipped until implemented here). The
// built-ins are the community library's (v1.1.1), a superset of the
// JMESPath specification's; Kyverno's fork may differ on functions and
// syntax beyond the specification, which the conformance data does not
// exercise.
//
// It must not know: rule kinds, Kubernetes types, admission reviews, what
// the document holds (a Policy builds Kyverno's context and passes it as
// VarContext), or `{{ }}` substitution (a caller compiles each variable's
// expression through this package).
package jmespath
