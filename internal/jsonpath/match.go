package jsonpath

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// matcher is a compiled regular expression with shortcuts for patterns that
// are plain literals ("abc": substring) or anchored literals ("^abc":
// prefix), which are common in rules and much cheaper than running the
// regexp machine.
type matcher struct {
	re   *regexp.Regexp
	lit  string
	kind uint8 // matchRegexp, matchContains or matchPrefix
}

const (
	matchRegexp uint8 = iota
	matchContains
	matchPrefix
)

func compileMatcher(pattern string) (*matcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	m := &matcher{re: re}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return m, nil
	}
	tree = tree.Simplify()
	if lit, ok := literal(tree); ok {
		m.lit, m.kind = lit, matchContains
	} else if tree.Op == syntax.OpBeginText {
		m.kind = matchPrefix
	} else if tree.Op == syntax.OpConcat && len(tree.Sub) == 2 && tree.Sub[0].Op == syntax.OpBeginText {
		if lit, ok := literal(tree.Sub[1]); ok {
			m.lit, m.kind = lit, matchPrefix
		}
	}
	return m, nil
}

// literal returns the text of a case-sensitive literal node. A literal
// holding U+FFFD is refused: in a regexp it also matches invalid UTF-8,
// which a substring test would not.
func literal(t *syntax.Regexp) (string, bool) {
	switch {
	case t.Op == syntax.OpEmptyMatch:
		return "", true
	case t.Op != syntax.OpLiteral || t.Flags&syntax.FoldCase != 0:
		return "", false
	}
	for _, r := range t.Rune {
		if r == utf8.RuneError {
			return "", false
		}
	}
	return string(t.Rune), true
}

func (m *matcher) match(s string) bool {
	switch m.kind {
	case matchContains:
		return strings.Contains(s, m.lit)
	case matchPrefix:
		return strings.HasPrefix(s, m.lit)
	}
	return m.re.MatchString(s)
}
