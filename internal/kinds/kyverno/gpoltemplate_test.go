package kyverno

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScanPlaceholders: (( )) ends at the first )) outside parentheses and
// CEL strings; \(( is a literal ((; what cannot be a placeholder is an
// error.
func TestScanPlaceholders(t *testing.T) {
	for _, tc := range []struct {
		in    string
		parts []string
		exprs []bool
		err   string
	}{
		{in: "plain", parts: []string{"plain"}, exprs: []bool{false}},
		{in: "(( a ))", parts: []string{"a"}, exprs: []bool{true}},
		{in: "x-(( f(g(1)) ))-y", parts: []string{"x-", "f(g(1))", "-y"}, exprs: []bool{false, true, false}},
		{in: `(( "))".size() ))`, parts: []string{`"))".size()`}, exprs: []bool{true}},
		{in: `(( 'a\'))' ))`, parts: []string{`'a\'))'`}, exprs: []bool{true}},
		{in: `\(( kept ))`, parts: []string{"(( kept ))"}, exprs: []bool{false}},
		{in: "((a))((b))", parts: []string{"a", "b"}, exprs: []bool{true, true}},
		{in: "(( ))", err: "empty placeholder"},
		{in: "(( a", err: "no closing"},
		{in: "(( a) ))", err: "unbalanced"},
		{in: `(( "a ))`, err: "unterminated string"},
	} {
		parts, exprs, err := scanPlaceholders(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !cmp.Equal(tc.parts, parts) || !cmp.Equal(tc.exprs, exprs) {
			t.Errorf("%q: %q %v %v, want %q %v", tc.in, parts, exprs, err, tc.parts, tc.exprs)
		}
	}
}

// FuzzScanPlaceholders: any scalar scans without panic, and what it scans
// into gives back a placeholder-free text when it has no placeholder.
func FuzzScanPlaceholders(f *testing.F) {
	for _, s := range []string{"(( a ))", `x (( "))" )) y`, `\(( z ))`, "((((", "))((", `(( '\'' ))`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, exprs, err := scanPlaceholders(s)
		if err != nil {
			return
		}
		if len(parts) != len(exprs) {
			t.Fatalf("%q: %d parts, %d flags", s, len(parts), len(exprs))
		}
		for i, p := range parts {
			if exprs[i] && strings.TrimSpace(p) == "" {
				t.Fatalf("%q: an empty expression", s)
			}
		}
	})
}
