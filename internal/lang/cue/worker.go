package cue

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/value"
)

// The worker protocol: frames of a 4-byte big-endian length and a JSON
// message, requests on the worker's stdin, replies on its stdout. The
// first request configures the worker; then each check or run is
// answered by one reply, a run's task (processing.http) by a task reply
// the parent answers with a task request.

// ExitMemory is the exit status of a worker whose heap grew past its
// limit.
const ExitMemory = 3

// maxRequest bounds a request frame (the parameters of one evaluation);
// DefaultMaxReply bounds a reply the parent reads.
const (
	maxRequest      = 256 << 20
	DefaultMaxReply = 16 << 20
)

type request struct {
	Op string `json:"op"` // opConfig, opCheck, opRun, opTask
	// opConfig
	MemoryLimit int64 `json:"memoryLimit,omitempty"`
	// opCheck, opRun: the program's id (Workers number the programs
	// compiled with them) and, the first time a worker sees it, its text
	ID  uint64 `json:"id,omitempty"`
	Src string `json:"src,omitempty"`
	// opRun
	Params map[string]json.RawMessage `json:"params,omitempty"`
	Output string                     `json:"output,omitempty"`
	Tasks  bool                       `json:"tasks,omitempty"`
	// opTask: the task's response body, or its error
	Body []byte `json:"body,omitempty"`
	Err  string `json:"err,omitempty"`
}

const (
	opConfig = "config"
	opCheck  = "check"
	opRun    = "run"
	opTask   = "task"
)

type reply struct {
	Diags []lang.Diagnostic `json:"diags,omitempty"`
	Value json.RawMessage   `json:"value,omitempty"`
	Err   string            `json:"err,omitempty"`
	Code  string            `json:"code,omitempty"` // codeNoOutput, codeNoTasks, codeTask
	Task  *Task             `json:"task,omitempty"`
}

// The sentinels a reply's error carries across the pipe.
const (
	codeNoOutput = "noOutput"
	codeNoTasks  = "noTasks"
	codeTask     = "task" // the task failed: the parent has its error
	// codeUnknown: a run without the text of a program the worker does
	// not hold (never sent, or dropped); the parent sends it again.
	codeUnknown = "unknown"
)

// writeFrame writes msg as one frame, in one write (one wake-up of the
// reader).
func writeFrame(w io.Writer, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	frame := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(frame, uint32(len(b)))
	_, err = w.Write(append(frame, b...))
	return err
}

// errFrameTooLarge is wrapped by the error of a frame over its bound.
var errFrameTooLarge = errors.New("frame too large")

// readFrame reads one frame into msg, refusing one over max bytes before
// allocating it.
func readFrame(r io.Reader, max int, msg any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if int64(size) > int64(max) {
		return fmt.Errorf("%w: %d bytes, over the %d limit", errFrameTooLarge, size, max)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, msg)
}

// ServeWorker is a worker process's work (modwright's hidden cue-worker
// command): it answers the requests of a Workers on in and out until in
// ends. Its heap is watched: past the configured limit it calls exit
// with ExitMemory at once (a runaway program is not stopped politely);
// exit is os.Exit in a worker process.
func ServeWorker(in io.Reader, out io.Writer, exit func(code int)) error {
	rd := bufio.NewReader(in)
	wr := bufio.NewWriter(out)
	var cfg request
	if err := readFrame(rd, maxRequest, &cfg); err != nil {
		return fmt.Errorf("reading the configuration: %w", err)
	}
	if cfg.Op != opConfig {
		return fmt.Errorf("the first request is %q, not %q", cfg.Op, opConfig)
	}
	if cfg.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimit)
		stop := make(chan struct{})
		defer close(stop)
		go watchHeap(cfg.MemoryLimit, stop, exit)
	}
	// The worker is killed at its deadline: its own checks run to the end.
	l := Language{CheckTimeout: time.Duration(1<<63 - 1)}
	cache := &programs{byID: map[uint64]*Program{}}
	send := func(r *reply) error {
		if err := writeFrame(wr, r); err != nil {
			return err
		}
		return wr.Flush()
	}
	// Ready: the parent counts an evaluation's time from here on.
	if err := send(&reply{}); err != nil {
		return err
	}
	for {
		var req request
		if err := readFrame(rd, maxRequest, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch req.Op {
		case opCheck:
			p, ds := l.compile(req.Src)
			if ds == nil {
				cache.put(req.ID, p) // its first run needs no text
			}
			if err := send(&reply{Diags: ds}); err != nil {
				return err
			}
		case opRun:
			rep, err := workerRun(l, cache, &req, rd, send)
			if err != nil {
				return err
			}
			if err := send(rep); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected request %q", req.Op)
		}
	}
}

// The programs a worker keeps compiled: at most maxCached, with at most
// maxCachedBytes of text; past either, it starts over (the parent sends
// what it asks for again).
const (
	maxCached      = 256
	maxCachedBytes = 8 << 20
)

// programs are a worker's compiled programs, by id.
type programs struct {
	byID  map[uint64]*Program
	bytes int
}

func (c *programs) put(id uint64, p *Program) {
	if len(c.byID) >= maxCached || c.bytes+len(p.src) > maxCachedBytes {
		clear(c.byID)
		c.bytes = 0
	}
	c.byID[id] = p
	c.bytes += len(p.src)
}

// workerRun runs one program in the worker: compiled once per worker,
// each task sent to the parent and its answer read.
func workerRun(l Language, cache *programs, req *request, rd io.Reader, send func(*reply) error) (*reply, error) {
	p := cache.byID[req.ID]
	if p == nil {
		if req.Src == "" {
			return &reply{Code: codeUnknown}, nil
		}
		var ds []lang.Diagnostic
		if p, ds = l.compile(req.Src); ds != nil {
			return &reply{Err: fmt.Sprintf("the program does not compile: %v", ds[0])}, nil
		}
		cache.put(req.ID, p)
	}
	params := make(map[string]any, len(req.Params))
	for k, raw := range req.Params {
		v, err := value.Decode(raw)
		if err != nil {
			return &reply{Err: fmt.Sprintf("parameter %s: %v", k, err)}, nil
		}
		params[k] = v
	}
	var tasks Tasks
	var protoErr error
	if req.Tasks {
		tasks = func(_ context.Context, t Task) ([]byte, error) {
			if err := send(&reply{Task: &t}); err != nil {
				protoErr = err
				return nil, err
			}
			var ans request
			if err := readFrame(rd, maxRequest, &ans); err != nil {
				protoErr = err
				return nil, err
			}
			if ans.Op != opTask {
				protoErr = fmt.Errorf("unexpected request %q during a task", ans.Op)
				return nil, protoErr
			}
			if ans.Err != "" {
				return nil, taskFailed{ans.Err}
			}
			return ans.Body, nil
		}
	}
	b, err := p.runJSON(context.Background(), params, req.Output, tasks)
	if protoErr != nil {
		return nil, protoErr
	}
	switch {
	case err == nil:
		return &reply{Value: b}, nil
	case errors.As(err, new(taskFailed)):
		return &reply{Err: err.Error(), Code: codeTask}, nil
	case errors.Is(err, ErrNoOutput):
		return &reply{Err: err.Error(), Code: codeNoOutput}, nil
	case errors.Is(err, ErrNoTasks):
		return &reply{Err: err.Error(), Code: codeNoTasks}, nil
	}
	return &reply{Err: err.Error()}, nil
}

// taskFailed is a task's error as the parent sent it.
type taskFailed struct{ msg string }

func (e taskFailed) Error() string { return e.msg }

// watchHeap exits with ExitMemory when the heap's live objects pass
// limit, checking every millisecond (a doubling string passes it by at
// most what the allocator writes meanwhile).
func watchHeap(limit int64, stop <-chan struct{}, exit func(int)) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && int64(sample[0].Value.Uint64()) > limit {
			fmt.Fprintf(os.Stderr, "the CUE worker's heap passed its %d MiB limit\n", limit>>20)
			exit(ExitMemory)
			return
		}
	}
}
