package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// progress is the progress line of a long run on a terminal's stderr
// ("apply: 1200/5000 objects"): drawn once the run has taken a second,
// redrawn at most every 200ms, erased before any other line and at the
// end. It draws nothing when off (stderr is not a terminal, or -q).
type progress struct {
	w            io.Writer
	what         string
	total        int
	on, shown    bool
	now          func() time.Time
	start, drawn time.Time
}

// newProgress is the progress of a run over total objects on w, on when w
// is a terminal and not quiet.
func newProgress(w io.Writer, what string, total int, quiet bool) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, what: what, total: total, on: ok && !quiet && term.IsTerminal(int(f.Fd())), now: time.Now}
}

// step records that n objects are done.
func (p *progress) step(n int) {
	if !p.on {
		return
	}
	t := p.now()
	if p.start.IsZero() {
		p.start = t
	}
	if t.Sub(p.start) < time.Second || t.Sub(p.drawn) < 200*time.Millisecond || n >= p.total {
		return
	}
	p.drawn = t
	fmt.Fprintf(p.w, "\r%s: %d/%d objects", p.what, n, p.total)
	p.shown = true
}

// clear erases the line, if drawn, so that another line can be printed.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
