package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name           string
		percent        int
		headroom, live uint64
		want           int
	}{
		{"small heap: the percent", 400, 64 * mib, 10 * mib, 400},
		{"at the bound", 400, 64 * mib, 16 * mib, 400},
		{"large heap: lowered", 400, 64 * mib, 128 * mib, 50},
		{"very large heap: the floor", 400, 64 * mib, 10000 * mib, MinPercent},
		{"no headroom: the percent", 400, 0, 1000 * mib, 400},
		{"nothing live yet", 400, 64 * mib, 0, 400},
		{"a percent under the bound stays", 100, 64 * mib, 32 * mib, 100},
		{"a headroom too large to scale by 100", 400, 1 << 62, 1000 * mib, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percent(tt.percent, tt.headroom, tt.live); got != tt.want {
				t.Errorf("Percent(%d, %d, %d) = %d, want %d", tt.percent, tt.headroom, tt.live, got, tt.want)
			}
		})
	}
}

// TestTuner: with a live heap far over the headroom, the percent is
// lowered after a collection; as the heap shrinks it goes back; Stop sets
// the configured percent back.
func TestTuner(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	live := make([]byte, 64<<20) // 64 MiB live
	tu := Start(400, 8<<20)
	defer tu.Stop()
	waitFor(t, func() bool { runtime.GC(); return tu.Current() < 400 })
	if got := tu.Current(); got > 13 { // 8 MiB over ~64 MiB: about 12%
		t.Errorf("percent %d with 64 MiB live and 8 MiB of headroom, want at most 13", got)
	}
	runtime.KeepAlive(live)
	live = nil
	waitFor(t, func() bool { runtime.GC(); return tu.Current() == 400 })
	tu.Stop()
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("after Stop the percent is %d, want the configured 400", got)
	}
}

// TestWiden: a widened headroom applies at once and until undone; the
// widest of overlapping calls applies; undoing twice undoes once.
func TestWiden(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	live := make([]byte, 64<<20) // 64 MiB live
	tu := Start(400, 8<<20)
	defer tu.Stop()
	waitFor(t, func() bool { runtime.GC(); return tu.Current() <= 13 })

	undo32 := tu.Widen(32 << 20)
	if got := tu.Current(); got < 45 || got > 55 { // 32 MiB over ~64 MiB
		t.Errorf("percent %d widened to 32 MiB over 64 MiB live, want about 50", got)
	}
	undo0 := tu.Widen(0) // no bound: the percent alone
	if got := tu.Current(); got != 400 {
		t.Errorf("percent %d widened without bound, want 400", got)
	}
	undo0()
	undo0()
	if got := tu.Current(); got < 45 || got > 55 {
		t.Errorf("percent %d once the unbounded widening is undone (twice), want about 50 (32 MiB still)", got)
	}
	undo4 := tu.Widen(4 << 20) // narrower than the Tuner's own: no change
	if got := tu.Current(); got < 45 || got > 55 {
		t.Errorf("percent %d with a narrower widening added, want about 50", got)
	}
	undo32()
	undo4()
	if got := tu.Current(); got > 13 {
		t.Errorf("percent %d with every widening undone, want at most 13 (8 MiB)", got)
	}
	runtime.KeepAlive(live)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10 s")
}
