package exepages

import (
	"strings"
	"testing"
)

// TestRelease: the test binary gives back its own pages and goes on
// running the code it unmapped.
func TestRelease(t *testing.T) {
	// Touch code and read-only data first, so that there is something to
	// give back.
	if strings.Repeat("x", 3) != "xxx" {
		t.Fatal("strings.Repeat")
	}
	res, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if res.Mapped == 0 {
		t.Fatal("released no mapping of the test binary")
	}
	if res.Before == 0 || res.After >= res.Before {
		t.Errorf("resident file pages %d before, %d after: want fewer after", res.Before, res.After)
	}
	// The code runs again from the page cache.
	if got := strings.ToUpper("released"); got != "RELEASED" {
		t.Errorf("strings.ToUpper after Release = %q", got)
	}
	if _, err := Release(); err != nil {
		t.Errorf("a second Release: %v", err)
	}
}
