package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestApplySummary: apply ends with a summary line on stderr, which -q
// silences (the refusals stay).
func TestApplySummary(t *testing.T) {
	run := func(args ...string) string {
		var stdout, stderr bytes.Buffer
		if code := ExecuteContext(context.Background(), args, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr}); code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", code, stderr.String())
		}
		return stderr.String()
	}
	args := []string{"apply", "--rules", "../../examples/rules", "-f", "../../examples/manifests"}
	const want = "apply: 3 objects read: 1 patched, 1 rejected, 1 admitted unchanged; 0 warnings; 2 of 3 rules patched\n"
	if got := run(args...); !strings.HasSuffix(got, want) || !strings.Contains(got, "rejected: ") {
		t.Errorf("stderr:\n%s\nwant it to end with %q", got, want)
	}
	if got := run(append(args, "-q")...); strings.Contains(got, "apply: ") || !strings.Contains(got, "rejected: ") {
		t.Errorf("-q: stderr:\n%s\nwant the refusal and no summary", got)
	}
}

// TestProgress: the progress line appears once the run has taken a
// second, at most every 200ms, never for the last object, and is erased
// before other lines.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := &progress{w: &buf, what: "apply", total: 10, on: true, now: func() time.Time { return clock }}
	tick := func(d time.Duration, n int) { clock = clock.Add(d); p.step(n) }
	tick(0, 1)
	tick(500*time.Millisecond, 2) // before a second: nothing
	tick(600*time.Millisecond, 3) // drawn
	tick(100*time.Millisecond, 4) // too soon
	p.clear()
	tick(300*time.Millisecond, 5) // drawn
	tick(time.Second, 10)         // the last: nothing
	want := "\rapply: 3/10 objects\r\033[K\rapply: 5/10 objects"
	if buf.String() != want {
		t.Errorf("progress %q, want %q", buf.String(), want)
	}
	off := newProgress(&buf, "apply", 10, false) // a buffer is no terminal
	if off.on {
		t.Error("progress on for a buffer")
	}
}
