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
		{`nginx:1\.14\..*`, matchContains},
		{`^nginx:1\.14\..*`, matchPrefix},
		{`.*abc`, matchContains},
		{`.*abc.*`, matchContains},
		{`(?s)abc.*`, matchContains},
		{`abc.*?`, matchContains},
		{`^.*`, matchPrefix},
		{`.*`, matchRegexp},
		{`^.*abc`, matchRegexp},
		{`abc.*$`, matchRegexp},
		{`a.*b`, matchRegexp},
		{`abc.+`, matchRegexp},
		{`(?i)abc.*`, matchRegexp},
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
	inputs := []string{"", "abc", "xabc", "ABC", "a.b", "axb", "b", "envoyproxy/envoy", "nginx:1.14.2", "nginx:1.14.", "x/nginx:1.14.2", "\xff", "\uFFFD", "^abc", "abc\n", "abc\nx", "x\nabc", "aaa"}
	for _, p := range patterns {
		m, err := CompileMatcher(p.pattern)
		if err != nil {
			t.Fatalf("%q: %v", p.pattern, err)
		}
		if m.kind != p.kind {
			t.Errorf("%q: kind %d, want %d", p.pattern, m.kind, p.kind)
		}
		re := regexp.MustCompile(p.pattern)
		for _, s := range inputs {
			if got, want := m.MatchString(s), re.MatchString(s); got != want {
				t.Errorf("%q matching %q: got %v, want %v", p.pattern, s, got, want)
			}
		}
	}
}

// FuzzMatcher: a Matcher matches exactly what its regular expression does.
func FuzzMatcher(f *testing.F) {
	for _, seed := range [][2]string{{`nginx:1\.14\..*`, "nginx:1.14.2"}, {`.*abc.*`, "x\nabc"}, {`^a.*`, "a\n"}, {`abc.*$`, "abc\nx"}, {"\uFFFD.*", "\xff"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		if got, want := NewMatcher(re).MatchString(s), re.MatchString(s); got != want {
			t.Fatalf("%q matching %q: got %v, want %v", pattern, s, got, want)
		}
	})
}
