package cluster

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// TestResponsesBounded: the cache keeps a response for its TTL, never more
// than maxCachedBytes of keys and responses nor maxCachedResponses
// entries, and no response larger than maxCachedBytes/8; errors are not
// kept.
func TestResponsesBounded(t *testing.T) {
	var c responses[[]byte]
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	reads := 0
	get := func(key string, n int) {
		t.Helper()
		if _, err := c.get(key, time.Minute, clock, func() ([]byte, error) { reads++; return make([]byte, n), nil }, func(b []byte) int { return len(b) }); err != nil {
			t.Fatal(err)
		}
		if c.bytes > maxCachedBytes || len(c.entries) > maxCachedResponses {
			t.Fatalf("%d bytes in %d entries kept", c.bytes, len(c.entries))
		}
	}
	get("a", 10)
	get("a", 10)
	if reads != 1 {
		t.Errorf("%d reads of a kept response, want 1", reads)
	}
	get("huge", maxCachedBytes/8+1)
	get("huge", maxCachedBytes/8+1)
	if reads != 3 {
		t.Errorf("a response over maxCachedBytes/8 was kept (%d reads)", reads)
	}
	for i := range 40 {
		get("big"+strconv.Itoa(i), maxCachedBytes/10) // past the budget: emptied once
	}
	for i := range maxCachedResponses + 10 {
		get("small"+strconv.Itoa(i), 1)
	}
	if _, err := c.get("err", time.Minute, clock, func() ([]byte, error) { return nil, errors.New("no") }, func(b []byte) int { return len(b) }); err == nil {
		t.Fatal("the error is lost")
	}
	if _, ok := c.entries["err"]; ok {
		t.Error("an error was kept")
	}
}
