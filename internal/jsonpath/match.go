package jsonpath

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Matcher is a regular expression matched as `=~` matches (RE2, unanchored:
// regexp.MatchString), with shortcuts for the shapes rules write most,
// which cost a substring or prefix test instead of running the regexp
// machine: a plain literal ("abc": substring), an anchored one ("^abc":
// prefix), either followed by ".*" ("nginx:1\.14\..*": what may follow a
// match does not change whether there is one), or preceded by it (".*abc":
// substring).
type Matcher struct {
	re   *regexp.Regexp
	lit  string
	kind uint8 // matchRegexp, matchContains or matchPrefix
}

const (
	matchRegexp uint8 = iota
	matchContains
	matchPrefix
)

// CompileMatcher compiles pattern (RE2 syntax, regexp.Compile's errors).
func CompileMatcher(pattern string) (*Matcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return NewMatcher(re), nil
}

// NewMatcher is the Matcher of a compiled regular expression.
func NewMatcher(re *regexp.Regexp) *Matcher {
	m := &Matcher{re: re}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return m
	}
	tree = tree.Simplify()
	subs := []*syntax.Regexp{tree}
	if tree.Op == syntax.OpConcat {
		subs = tree.Sub
	}
	// Unanchored, a leading or trailing ".*" matches the empty string
	// where nothing else would: dropping it keeps the matches.
	if n := len(subs); n > 1 && anyStar(subs[n-1]) {
		subs = subs[:n-1]
	}
	if len(subs) > 1 && anyStar(subs[0]) {
		subs = subs[1:]
	}
	switch {
	case len(subs) == 1:
		if lit, ok := literal(subs[0]); ok {
			m.lit, m.kind = lit, matchContains
		} else if subs[0].Op == syntax.OpBeginText {
			m.kind = matchPrefix
		}
	case len(subs) == 2 && subs[0].Op == syntax.OpBeginText:
		if lit, ok := literal(subs[1]); ok {
			m.lit, m.kind = lit, matchPrefix
		}
	}
	return m
}

// anyStar reports whether t is ".*", with or without (?s).
func anyStar(t *syntax.Regexp) bool {
	return t.Op == syntax.OpStar && (t.Sub[0].Op == syntax.OpAnyCharNotNL || t.Sub[0].Op == syntax.OpAnyChar)
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

// MatchString reports whether s holds a match of the expression.
func (m *Matcher) MatchString(s string) bool {
	switch m.kind {
	case matchContains:
		return strings.Contains(s, m.lit)
	case matchPrefix:
		return strings.HasPrefix(s, m.lit)
	}
	return m.re.MatchString(s)
}

// String is the expression's source text.
func (m *Matcher) String() string { return m.re.String() }
