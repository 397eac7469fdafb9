package cli

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// ANSI colours for diffs on a terminal.
const (
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
	ansiBold  = "\x1b[1m"
	ansiReset = "\x1b[0m"
)

// unifiedDiff returns a unified diff from a to b (line based, three lines
// of context), or "" when they are equal; color adds ANSI colours. The
// diff is go-udiff's (Go's own tools' diff: Myers' algorithm with a bound
// on its search, so that a large change costs linear time).
func unifiedDiff(aName, bName, a, b string, color bool) string {
	if a == b {
		return ""
	}
	d := udiff.Unified(aName, bName, a, b)
	if !color {
		return d
	}
	var out strings.Builder
	for i, line := range strings.SplitAfter(d, "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		if body == "" {
			out.WriteString(line)
			continue
		}
		c := ""
		switch {
		case i < 2: // the --- and +++ header
			c = ansiBold
		case strings.HasPrefix(body, "@@"):
			c = ansiCyan
		case body[0] == '-':
			c = ansiRed
		case body[0] == '+':
			c = ansiGreen
		}
		if c != "" {
			body = c + body + ansiReset
		}
		out.WriteString(body)
		if nl {
			out.WriteString("\n")
		}
	}
	return out.String()
}

// splitLines splits text into its lines (without a last empty one).
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
