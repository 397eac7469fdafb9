package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnifiedDiff(t *testing.T) {
	lines := func(n int, change map[int]string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if c, ok := change[i]; ok {
				if c != "" {
					b.WriteString(c + "\n")
				}
				continue
			}
			b.WriteString("line" + string(rune('a'+i-1)) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name  string
		a, b  string
		color bool
		want  string
	}{
		{"equal", "x\n", "x\n", false, ""},
		{"one change", lines(3, nil), lines(3, map[int]string{2: "changed"}), false,
			"--- a\n+++ b\n@@ -1,3 +1,3 @@\n linea\n-lineb\n+changed\n linec\n"},
		{"insertion into empty", "", "new\n", false, "--- a\n+++ b\n@@ -0,0 +1 @@\n+new\n"},
		{"two hunks", lines(20, nil), lines(20, map[int]string{2: "", 18: "x"}), false,
			"--- a\n+++ b\n@@ -1,5 +1,4 @@\n linea\n-lineb\n linec\n lined\n linee\n" +
				"@@ -15,6 +14,6 @@\n lineo\n linep\n lineq\n-liner\n+x\n lines\n linet\n"},
		{"a removed line that looks like a header", "-- x\n", "y\n", true,
			"\x1b[1m--- a\x1b[0m\n\x1b[1m+++ b\x1b[0m\n\x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m--- x\x1b[0m\n\x1b[32m+y\x1b[0m\n"},
		{"colour", "a\n", "b\n", true,
			"\x1b[1m--- a\x1b[0m\n\x1b[1m+++ b\x1b[0m\n\x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m-a\x1b[0m\n\x1b[32m+b\x1b[0m\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unifiedDiff("a", "b", tt.a, tt.b, tt.color)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnifiedDiffLarge: two large texts with nothing in common still give
// a diff that removes one and adds the other (the search is bounded).
func TestUnifiedDiffLarge(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	d := unifiedDiff("a", "b", a.String(), b.String(), false)
	if got := strings.Count(d, "\n-a"); got != 20000 {
		t.Errorf("%d lines removed, want 20000", got)
	}
	if got := strings.Count(d, "\n+b"); got != 20000 {
		t.Errorf("%d lines added, want 20000", got)
	}
}
