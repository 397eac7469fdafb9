// Package cli implements modwright's commands: flags, reading inputs
// through internal/source, evaluating through internal/engine (or
// internal/runner), and printing. It holds no rule logic of its own: what a
// rule means, how it explains itself and what lint checks are the kind
// adapters' (internal/kinds/...); registry.go is the one place that names
// the kinds served. It also wires `serve` (standalone and operator).
package cli
