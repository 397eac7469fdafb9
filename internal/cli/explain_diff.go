package cli

import (
	"fmt"
	"strings"
)

// ANSI colours for diffs on a terminal.
const (
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
	ansiBold  = "\x1b[1m"
	ansiReset = "\x1b[0m"
)

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// maxDiffCells bounds the line-matching table; larger changed regions are
// shown as removed then added as a whole.
const maxDiffCells = 4 << 20

// unifiedDiff returns a unified diff from a to b (line based), or "" when
// they are equal. color adds ANSI colours.
func unifiedDiff(aName, bName, a, b string, color bool) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	edits := lineEdits(al, bl)
	paint := func(c, s string) string {
		if !color {
			return s
		}
		return c + s + ansiReset
	}
	var out strings.Builder
	out.WriteString(paint(ansiBold, "--- "+aName) + "\n")
	out.WriteString(paint(ansiBold, "+++ "+bName) + "\n")
	// Group edits into hunks with context.
	for i := 0; i < len(edits); {
		if edits[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-diffContext)
		end := i
		for j := i; j < len(edits); j++ {
			if edits[j].kind != ' ' {
				end = j
				continue
			}
			if j-end > 2*diffContext {
				break
			}
		}
		end = min(len(edits), end+diffContext+1)
		aStart, bStart, aLen, bLen := edits[start].a, edits[start].b, 0, 0
		for _, e := range edits[start:end] {
			if e.kind != '+' {
				aLen++
			}
			if e.kind != '-' {
				bLen++
			}
		}
		out.WriteString(paint(ansiCyan, fmt.Sprintf("@@ -%s +%s @@", hunkRange(aStart, aLen), hunkRange(bStart, bLen))) + "\n")
		for _, e := range edits[start:end] {
			line := string(e.kind) + e.text
			switch e.kind {
			case '-':
				line = paint(ansiRed, line)
			case '+':
				line = paint(ansiGreen, line)
			}
			out.WriteString(line + "\n")
		}
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// edit is one line of a diff: ' ' kept, '-' only in a, '+' only in b; a and
// b are the line's (or, for an insertion, the next line's) index in each.
type edit struct {
	kind byte
	text string
	a, b int
}

// lineEdits matches lines by longest common subsequence, after trimming
// the common prefix and suffix.
func lineEdits(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var edits []edit
	for i := 0; i < pre; i++ {
		edits = append(edits, edit{' ', a[i], i, i})
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(am), len(bm)
	if n*m > maxDiffCells {
		for i, l := range am {
			edits = append(edits, edit{'-', l, pre + i, pre})
		}
		for j, l := range bm {
			edits = append(edits, edit{'+', l, pre + n, pre + j})
		}
	} else {
		// lcs[i][j]: length of the LCS of am[i:] and bm[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && am[i] == bm[j]:
				edits = append(edits, edit{' ', am[i], pre + i, pre + j})
				i++
				j++
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				edits = append(edits, edit{'-', am[i], pre + i, pre + j})
				i++
			default:
				edits = append(edits, edit{'+', bm[j], pre + i, pre + j})
				j++
			}
		}
	}
	for k := 0; k < suf; k++ {
		ai, bi := len(a)-suf+k, len(b)-suf+k
		edits = append(edits, edit{' ', a[ai], ai, bi})
	}
	return edits
}
