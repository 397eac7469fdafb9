package jsonpath

import (
	"regexp"
	"testing"
)

func TestMatcher(t *testing.T) {
	patterns := []struct {
		pattern string
		kind    uint8
	}{
		{``, matchContains},
		{`abc`, matchContains},
		{`a\.b`, matchContains},
		{`^`, matchPrefix},
		{`^abc`, matchPrefix},
		{`^envoyproxy/`, matchPrefix},
		{`^abc$`, matchRegexp},
		{`abc$`, matchRegexp},
		{`a.c`, matchRegexp},
		{`(?i)abc`, matchRegexp},
		{`^(?i)abc`, matchRegexp},
		{`^^abc`, matchRegexp},
		{`^a|b`, matchRegexp},
		{`a|b`, matchRegexp},
		{"\uFFFD", matchRegexp},
		{`nginx:1\.14\..*`, matchRegexp},
		{`\Aabc`, matchPrefix},
		{`(abc)`, matchRegexp},
		{`(?:abc)`, matchContains},
		{`^(?:abc)`, matchPrefix},
		{`^(?m)abc`, matchPrefix},
		{`(?m)^abc`, matchRegexp},
		{`\x{FFFD}`, matchRegexp},
		{`^\x{FFFD}`, matchRegexp},
		{`a*`, matchRegexp},
		{`^$`, matchRegexp},
	}
	inputs := []string{"", "abc", "xabc", "ABC", "a.b", "axb", "b", "envoyproxy/envoy", "nginx:1.14.2", "\xff", "\uFFFD", "^abc", "abc\n", "x\nabc", "aaa"}
	for _, p := range patterns {
		m, err := compileMatcher(p.pattern)
		if err != nil {
			t.Fatalf("%q: %v", p.pattern, err)
		}
		if m.kind != p.kind {
			t.Errorf("%q: kind %d, want %d", p.pattern, m.kind, p.kind)
		}
		re := regexp.MustCompile(p.pattern)
		for _, s := range inputs {
			if got, want := m.match(s), re.MatchString(s); got != want {
				t.Errorf("%q matching %q: got %v, want %v", p.pattern, s, got, want)
			}
		}
	}
}
