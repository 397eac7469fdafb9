package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
)

// MinPercent is the lowest percent a Tuner sets: below it, collections
// would run back to back over a large live heap (GOMEMLIMIT bounds the
// heap then, if set).
const MinPercent = 10

// Tuner keeps the collector's percent at Percent(live) after each
// collection.
type Tuner struct {
	percent  int
	headroom uint64
	stopped  atomic.Bool

	mu     sync.Mutex // serializes tune (cleanups may run concurrently)
	sample [1]metrics.Sample
	set    int // the percent set last
	// widened holds the headrooms of the Widen calls not yet undone.
	widened []uint64
}

// Percent is the collector's percent for a live heap of live bytes: the
// configured percent, lowered so that the heap grows by at most headroom
// bytes, and never below MinPercent.
func Percent(percent int, headroom, live uint64) int {
	if headroom == 0 || live == 0 || headroom/live >= uint64(percent)/100+1 {
		return percent // (the last also keeps headroom*100 from overflowing)
	}
	p := headroom * 100 / live
	if p >= uint64(percent) {
		return percent
	}
	return max(int(p), MinPercent)
}

// Start sets the collector's percent to percent and, when headroom is not 0,
// lowers it after each collection so that the heap grows by at most
// headroom bytes over what that collection found live. Stop ends it.
func Start(percent int, headroom uint64) *Tuner {
	t := &Tuner{percent: percent, headroom: headroom, set: percent}
	t.sample[0].Name = "/gc/heap/live:bytes"
	debug.SetGCPercent(percent)
	if headroom > 0 {
		t.arm()
	}
	return t
}

// Stop stops tuning and sets the configured percent back.
func (t *Tuner) Stop() {
	if t.stopped.Swap(true) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	debug.SetGCPercent(t.percent)
}

// sentinel is allocated unreachable: its cleanup runs after the next
// collection. It holds a pointer so that it is not combined with other
// small objects (whose lifetime would delay the cleanup).
type sentinel struct{ _ *byte }

// arm asks for tune after the next collection.
func (t *Tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *Tuner) { t.after() }, t)
}

func (t *Tuner) after() {
	if t.stopped.Load() {
		return
	}
	t.tune()
	t.arm()
}

// tune sets the percent for the live heap the last collection found.
func (t *Tuner) tune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.sample[:])
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	headroom := t.headroom
	for _, h := range t.widened {
		if headroom != 0 && (h == 0 || h > headroom) {
			headroom = h
		}
	}
	p := Percent(t.percent, headroom, t.sample[0].Value.Uint64())
	if p != t.set {
		debug.SetGCPercent(p)
		t.set = p
	}
}

// Widen lets the heap grow by up to headroom bytes (0: by the percent
// alone) until the returned function is called, when that is more than
// the Tuner's own headroom: for a task whose live heap is large for a while
// (a background scan), so that it is not collected over and over. It
// applies at once. Calls may overlap: the widest applies. The returned
// function undoes this call only, once, whatever the number of calls.
func (t *Tuner) Widen(headroom uint64) (undo func()) {
	t.mu.Lock()
	t.widened = append(t.widened, headroom)
	t.mu.Unlock()
	t.tune()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if i := slices.Index(t.widened, headroom); i >= 0 {
				t.widened = slices.Delete(t.widened, i, i+1)
			}
			t.mu.Unlock()
			t.tune()
		})
	}
}

// Current is the percent set last.
func (t *Tuner) Current() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set
}
