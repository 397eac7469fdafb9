// Package cli implements modwright's commands. Commands parse flags, read
// inputs through internal/source, evaluate through internal/engine and print.
// Two commands still hold ModRule logic of their own, which issue 14 moves
// into the rule kind's adapter: explain's scope reasons (scope.go,
// explain.go) and lint's checks and sample objects (lint.go,
// lint_values.go).
package cli
