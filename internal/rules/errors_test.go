package rules

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		most int
		want string
	}{
		{"short", 5, "short"},
		{"short", 100, "short"},
		{"abcdefgh", 7, "abcd…"},
		{"abcdefgh", 3, "…"},
		{"abcdefgh", 2, ""},
		// A rune of three bytes straddling the cut is left out whole.
		{"ab€€€", 8, "ab€…"},
		{"ab€€€", 7, "ab…"},
		{"ab€€€", 6, "ab…"},
	} {
		got := Truncate(tc.s, tc.most)
		if got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.most, got, tc.want)
		}
		if len(got) > tc.most || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q: %d bytes, valid UTF-8 %v", tc.s, tc.most, got, len(got), utf8.ValidString(got))
		}
	}
	long := strings.Repeat("é", MaxConditionMessage)
	if got := Truncate(long, MaxConditionMessage); len(got) > MaxConditionMessage || len(got) < MaxConditionMessage-4 || !utf8.ValidString(got) {
		t.Errorf("Truncate of %d bytes to %d: %d bytes, valid UTF-8 %v", len(long), MaxConditionMessage, len(got), utf8.ValidString(got))
	}
}
