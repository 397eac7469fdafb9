package cue

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/value"
)

// ErrWorker is in the chain of the error of an evaluation whose worker
// process failed (it could not start, or exited for another reason than
// its memory limit).
var ErrWorker = errors.New("the CUE worker failed")

// ErrMemory is in the chain (with lang.ErrLimit) of the error of an
// evaluation whose worker's heap passed its limit.
var ErrMemory = errors.New("the CUE program used more memory than its worker may")

// ErrClosed is in the chain of the error of an evaluation asked of closed
// Workers.
var ErrClosed = errors.New("the CUE workers are closed")

// Defaults of WorkerOptions.
const (
	DefaultWorkerMemory = 64 << 20
	// DefaultWorkerUses is how many evaluations a worker serves before it
	// is replaced (what its CUE contexts interned is then returned).
	DefaultWorkerUses = 10000
)

// WorkerOptions configure Workers.
type WorkerOptions struct {
	// Command makes the command of a new worker: a process that runs
	// ServeWorker on its stdin and stdout (modwright's hidden cue-worker
	// command). Its Stdin, Stdout and Stderr are set by Workers.
	Command func() *exec.Cmd
	// Max is how many workers run at once; evaluations beyond it wait for
	// one (within their deadline). Zero: DefaultMaxWorkers.
	Max int
	// MemoryLimit bounds a worker's heap in bytes: past it the worker
	// exits and its evaluation fails with ErrMemory. Zero:
	// DefaultWorkerMemory.
	MemoryLimit int64
	// MaxReply bounds a worker's reply (an evaluation's output) in
	// bytes. Zero: DefaultMaxReply.
	MaxReply int
	// Uses is how many evaluations a worker serves before it is
	// replaced. Zero: DefaultWorkerUses.
	Uses int
	// Timeout bounds one evaluation once a worker runs it (the request's
	// deadline bounds it too): past it the worker is killed and the
	// evaluation fails with ErrTimeout. It keeps a program that does not
	// end from holding a worker, and the evaluations queued behind it,
	// for a whole review's deadline. Zero: DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout is WorkerOptions.Timeout's default: programs that
// admission runs take milliseconds (a 1 MiB object about 50 ms).
const DefaultTimeout = 250 * time.Millisecond

// ErrTimeout is in the chain (with lang.ErrLimit and
// context.DeadlineExceeded) of the error of an evaluation stopped at
// WorkerOptions.Timeout.
var ErrTimeout = errors.New("the CUE program ran out of time")

// Workers evaluate CUE programs in worker processes, so that an
// evaluation that does not end by its deadline, or grows past its memory
// limit, is stopped: its worker is killed (CUE has no cancellation). A
// worker evaluates one program at a time; idle ones are kept for the next
// evaluation. Safe for concurrent use.
type Workers struct {
	o     WorkerOptions
	slots chan struct{} // one per running worker
	mu    sync.Mutex
	idle  []*worker
	// starting counts the replacements being started (release).
	starting int
	// started and killed count worker processes (Stats).
	started, killed int
	// ids numbers the programs compiled with these workers.
	ids atomic.Uint64
	// closed: later evaluations fail with ErrClosed.
	closed bool
}

// DefaultMaxWorkers is WorkerOptions.Max when it is zero: one worker per
// CPU (GOMAXPROCS), at least 2.
func DefaultMaxWorkers() int { return max(runtime.GOMAXPROCS(0), 2) }

// NewWorkers returns Workers started lazily: no worker runs before the
// first check or evaluation.
func NewWorkers(o WorkerOptions) *Workers {
	if o.Max <= 0 {
		o.Max = DefaultMaxWorkers()
	}
	if o.MemoryLimit <= 0 {
		o.MemoryLimit = DefaultWorkerMemory
	}
	if o.MaxReply <= 0 {
		o.MaxReply = DefaultMaxReply
	}
	if o.Uses <= 0 {
		o.Uses = DefaultWorkerUses
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Workers{o: o, slots: make(chan struct{}, o.Max)}
}

// WorkerStats are counts of Workers' processes.
type WorkerStats struct {
	// Started and Killed count the workers started and killed (at a
	// deadline, a time bound, or any failure) so far.
	Started, Killed int
	// Idle and Starting are the workers waiting for an evaluation and
	// the replacements being started now.
	Idle, Starting int
}

// Stats returns the counts now.
func (ws *Workers) Stats() WorkerStats {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return WorkerStats{Started: ws.started, Killed: ws.killed, Idle: len(ws.idle), Starting: ws.starting}
}

// Close stops the idle workers; running evaluations end as they would,
// later ones fail with ErrClosed.
func (ws *Workers) Close() {
	ws.mu.Lock()
	idle := ws.idle
	ws.idle, ws.closed = nil, true
	ws.mu.Unlock()
	for _, w := range idle {
		w.kill()
		<-w.exited
	}
}

// worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	in     *os.File // the worker's stdin
	out    *os.File // the worker's stdout
	rd     *bufio.Reader
	stderr *tail
	exited chan struct{} // closed when the process has been waited for
	uses   int
	// holds are the ids of the programs whose text this worker was sent
	// (it may have dropped some: it then asks again); at most maxCached.
	holds map[uint64]bool
}

func (ws *Workers) start() (*worker, error) {
	if ws.o.Command == nil {
		return nil, fmt.Errorf("%w: no worker command", ErrWorker)
	}
	cmd := ws.o.Command()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWorker, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("%w: %v", ErrWorker, err)
	}
	w := &worker{holds: map[uint64]bool{}, cmd: cmd, in: inW, out: outR, rd: bufio.NewReader(outR), stderr: &tail{max: 4096}, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, w.stderr
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("%w: starting %s: %v", ErrWorker, cmd.Path, err)
	}
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	if err := writeFrame(w.in, &request{Op: opConfig, MemoryLimit: ws.o.MemoryLimit}); err != nil {
		w.kill()
		return nil, fmt.Errorf("%w: configuring it: %v", ErrWorker, err)
	}
	// The worker answers its configuration once it runs: its start (a
	// process and its runtime, slow on a busy node) is not counted in an
	// evaluation's time, only bounded by bootTimeout.
	_ = w.out.SetReadDeadline(time.Now().Add(bootTimeout))
	var ready reply
	err = readFrame(w.rd, ws.o.MaxReply, &ready)
	_ = w.out.SetReadDeadline(time.Time{})
	if err != nil {
		w.kill()
		<-w.exited
		msg := strings.TrimSpace(w.stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%w: starting: %s", ErrWorker, msg)
	}
	ws.mu.Lock()
	ws.started++
	ws.mu.Unlock()
	return w, nil
}

// bootTimeout bounds a worker's start, until it answers its configuration.
const bootTimeout = 30 * time.Second

// kill kills the process and closes the pipes (a read or write under way
// returns).
func (w *worker) kill() {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
	w.in.Close()
	w.out.Close()
}

// acquire takes a slot and an idle worker, or starts one.
func (ws *Workers) acquire(ctx context.Context) (*worker, error) {
	select {
	case ws.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a CUE worker: %w", context.Cause(ctx))
	}
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		<-ws.slots
		return nil, ErrClosed
	}
	var w *worker
	if n := len(ws.idle); n > 0 {
		w, ws.idle = ws.idle[n-1], ws.idle[:n-1]
	}
	ws.mu.Unlock()
	if w != nil {
		return w, nil
	}
	w, err := ws.start()
	if err != nil {
		<-ws.slots
		return nil, err
	}
	return w, nil
}

// release returns a worker that answered to the idle ones, or kills it
// and starts a replacement in the background, so that the next
// evaluation does not wait for a worker to start (a killed worker is what
// a hostile program leaves, one after another). At most Max workers
// evaluate, and at most Max more are idle or starting.
func (ws *Workers) release(w *worker, healthy bool) {
	defer func() { <-ws.slots }()
	if healthy {
		w.uses++
		ws.mu.Lock()
		if !ws.closed && w.uses < ws.o.Uses {
			ws.idle = append(ws.idle, w)
			ws.mu.Unlock()
			return
		}
		ws.mu.Unlock()
	}
	w.kill()
	ws.mu.Lock()
	ws.killed++
	spare := !ws.closed && len(ws.idle)+ws.starting < ws.o.Max
	if spare {
		ws.starting++
	}
	ws.mu.Unlock()
	if spare {
		go ws.replace()
	}
}

// replace starts a worker into the idle ones.
func (ws *Workers) replace() {
	w, err := ws.start()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.starting--
	switch {
	case err != nil:
		// The next evaluation starts one and reports the error.
	case ws.closed:
		w.kill()
	default:
		ws.idle = append(ws.idle, w)
	}
}

// exchange sends req to a worker and returns its reply, answering the
// tasks it asks for on the way; at ctx's end, or timeout after a worker
// was found, the worker is killed. src is the text of the program req
// names (ID): sent only to a worker that does not hold it. The error of
// the last task, if one failed, is returned with the reply.
func (ws *Workers) exchange(ctx context.Context, timeout time.Duration, req *request, src string, tasks Tasks) (*reply, error, error) {
	w, err := ws.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, w.kill)
	b := startBudget(timeout, w.kill)
	healthy := false
	defer func() {
		if !stop() || !b.stop() {
			healthy = false // killed
		}
		ws.release(w, healthy)
	}()
	fail := func(err error) error {
		if b.fired.Load() && ctx.Err() == nil {
			return fmt.Errorf("the CUE program did not finish: %w", timeoutError{timeout})
		}
		return ws.failure(ctx, w, err)
	}
	send := func(withSrc bool) error {
		req.Src = ""
		if withSrc {
			req.Src = src
		}
		return writeFrame(w.in, req)
	}
	if err := send(!w.holds[req.ID]); err != nil {
		return nil, nil, fail(err)
	}
	var taskErr error
	for {
		var rep reply
		if err := readFrame(w.rd, ws.o.MaxReply, &rep); err != nil {
			return nil, nil, fail(err)
		}
		if rep.Code == codeUnknown && req.Src == "" {
			if err := send(true); err != nil { // the worker dropped it
				return nil, nil, fail(err)
			}
			continue
		}
		if rep.Task == nil {
			if len(w.holds) >= maxCached {
				clear(w.holds)
			}
			w.holds[req.ID] = true
			healthy = true
			return &rep, taskErr, nil
		}
		// The task's time is the parent's (the reader's own timeout),
		// not the program's.
		if !b.pause() {
			return nil, nil, fail(errors.New("stopped"))
		}
		ans := &request{Op: opTask}
		if tasks == nil {
			ans.Err = ErrNoTasks.Error()
		} else if ans.Body, taskErr = tasks(ctx, *rep.Task); taskErr != nil {
			ans.Err = taskErr.Error()
		}
		b.resume()
		if err := writeFrame(w.in, ans); err != nil {
			return nil, nil, fail(err)
		}
	}
}

// budget kills a worker once its evaluation has run for its time (time
// spent on the parent's tasks not counted).
type budget struct {
	left  time.Duration
	start time.Time
	t     *time.Timer
	fired atomic.Bool
}

func startBudget(d time.Duration, kill func()) *budget {
	b := &budget{left: d, start: time.Now()}
	b.t = time.AfterFunc(d, func() {
		b.fired.Store(true)
		kill()
	})
	return b
}

// pause stops the clock; false when the budget has run out.
func (b *budget) pause() bool {
	if !b.t.Stop() {
		return false
	}
	b.left -= time.Since(b.start)
	return true
}

func (b *budget) resume() {
	b.start = time.Now()
	b.t.Reset(max(b.left, 0))
}

// stop stops the clock for good; false when the budget had run out.
func (b *budget) stop() bool { return b.t.Stop() || !b.fired.Load() }

// failure is the error of an exchange whose worker stopped answering.
func (ws *Workers) failure(ctx context.Context, w *worker, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the CUE program did not finish: %w", context.Cause(ctx))
	}
	if errors.Is(err, errFrameTooLarge) {
		return lang.Limit(fmt.Errorf("the CUE program's output is too large: %w", err))
	}
	w.kill()
	// Its exit status, once waited for (ProcessState is Wait's to write).
	select {
	case <-w.exited:
		if w.cmd.ProcessState.ExitCode() == ExitMemory {
			return lang.Limit(fmt.Errorf("%w (%d MiB)", ErrMemory, ws.o.MemoryLimit>>20))
		}
	case <-time.After(time.Second):
	}
	msg := strings.TrimSpace(w.stderr.String())
	if msg == "" {
		msg = err.Error()
	}
	return fmt.Errorf("%w: %s", ErrWorker, msg)
}

// checkWait bounds how long a check waits for a worker (every one busy).
const checkWait = time.Minute

// check checks src in a worker within timeout (once one is free).
func (ws *Workers) check(id uint64, src string, timeout time.Duration) []lang.Diagnostic {
	ctx, cancel := context.WithTimeout(context.Background(), checkWait)
	defer cancel()
	rep, _, err := ws.exchange(ctx, timeout, &request{Op: opCheck, ID: id}, src, nil)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return checkTimeoutMsg(timeout)
	case errors.Is(err, ErrMemory):
		return []lang.Diagnostic{{Pos: -1, Msg: "checking the program: " + err.Error() + ": what it computes without its parameters is too large"}}
	case err != nil:
		return []lang.Diagnostic{{Pos: -1, Msg: "checking the program: " + err.Error()}}
	}
	return rep.Diags
}

// run evaluates p in a worker: parameters pruned here to what the program
// reads, as an evaluation in this process prunes them.
func (ws *Workers) run(ctx context.Context, p *Program, params map[string]any, output string, tasks Tasks) (any, error) {
	req := &request{Op: opRun, ID: p.id, Output: output, Tasks: p.task && tasks != nil, Params: make(map[string]json.RawMessage, len(params))}
	root, _, _ := strings.Cut(output, ".")
	whole := output == "" || p.aliases[root]
	for name, pv := range params {
		pv, ok := p.inject(name, pv, whole)
		if !ok {
			continue
		}
		b, err := value.AppendJSON(nil, pv)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", name, err)
		}
		req.Params[name] = b
	}
	rep, taskErr, err := ws.exchange(ctx, ws.o.Timeout, req, p.src, tasks)
	if err != nil {
		return nil, err
	}
	switch rep.Code {
	case codeTask:
		if taskErr != nil {
			return nil, fmt.Errorf("processing.http: %w", taskErr)
		}
	case codeNoOutput:
		return nil, fmt.Errorf("%w %q", ErrNoOutput, output)
	case codeNoTasks:
		return nil, ErrNoTasks
	case codeUnknown:
		return nil, fmt.Errorf("%w: it lost the program it was just sent", ErrWorker)
	}
	if rep.Err != "" {
		return nil, errors.New(rep.Err)
	}
	return value.Decode(rep.Value)
}

// timeoutError is the cause of an evaluation's end at its timeout.
type timeoutError struct{ d time.Duration }

func (e timeoutError) Error() string {
	return fmt.Sprintf("%v after %v", ErrTimeout, e.d)
}
func (e timeoutError) Unwrap() []error {
	return []error{ErrTimeout, lang.ErrLimit, context.DeadlineExceeded}
}

// tail keeps the last max bytes written to it (a worker's stderr).
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
