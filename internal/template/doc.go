// Package template compiles and runs the Go templates of ModRule patch values
// and reject messages, with the Sprig function library minus everything that
// reads the environment or the network, mutates its arguments, or can burn
// unbounded CPU on the admission path. It also turns a rendered value into a
// JSON tree exactly as kubectl parses YAML.
//
// Every execution runs under the bounds in limits.go (rendered size,
// generated list and string sizes, loop iterations, a work budget charged by
// every function call and loop body, range nesting, parsed value depth),
// enforced structurally because a running goroutine cannot be stopped: an
// execution that exceeds one fails with ErrLimit.
//
// Templates are compiled once when a rule loads; Execute never parses.
// The package imports no ModRule type, JSONPath or admission code; its Data
// is the template context KubeMod defines (.Target, .Namespace, ...).
package template
