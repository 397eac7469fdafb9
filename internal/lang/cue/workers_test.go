package cue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cue"
)

// workerEnv makes this test binary a CUE worker (TestMain).
const workerEnv = "MODWRIGHT_TEST_CUE_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := cue.ServeWorker(os.Stdin, os.Stdout, os.Exit); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testWorkers are Workers running this test binary as their worker.
func testWorkers(t testing.TB, o cue.WorkerOptions) *cue.Workers {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o.Command = func() *exec.Cmd {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), workerEnv+"=1")
		return cmd
	}
	ws := cue.NewWorkers(o)
	t.Cleanup(ws.Close)
	return ws
}

type namedLanguage struct {
	name string
	cue.Language
}

// languages are CUE in this process and in workers: every case runs
// through both.
func languages(t *testing.T) []namedLanguage {
	return []namedLanguage{{"in-process", cue.Language{}}, {"workers", cue.Language{Workers: testWorkers(t, cue.WorkerOptions{})}}}
}

// children are the pids of the processes this one started that still
// run.
func children(t *testing.T) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) && fields[0] != "Z" {
			out = append(out, filepath.Base(filepath.Dir(f)))
		}
	}
	return out
}

// runKilled runs p with n, and checks that its worker was killed: one
// more kill, and soon no process but the idle and starting workers (a
// replacement) runs.
func runKilled(t *testing.T, ctx context.Context, ws *cue.Workers, p *cue.Program, n int) error {
	t.Helper()
	before := ws.Stats().Killed
	_, err := p.Run(ctx, map[string]any{"n": n}, "out")
	if k := ws.Stats().Killed; k != before+1 {
		t.Errorf("%d workers killed, want %d", k, before+1)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := ws.Stats()
		if len(children(t)) <= st.Idle+st.Starting {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes run, %d workers are idle or starting", len(children(t)), st.Idle+st.Starting)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWorkersRun(t *testing.T) {
	ws := testWorkers(t, cue.WorkerOptions{Max: 2})
	l := cue.Language{Workers: ws}
	p, ds := l.CompileExpr(env, `
object: _ @tag(object)
patches: [{op: "add", path: "/metadata/labels/name", value: object.metadata.name}]
`)
	if ds != nil {
		t.Fatal(ds)
	}
	ctx := context.Background()
	for i := range 5 {
		name := fmt.Sprint("web", i)
		got, err := p.Run(ctx, map[string]any{"object": map[string]any{"metadata": map[string]any{"name": name}, "spec": "pruned"}}, cue.OutputPatches)
		if err != nil {
			t.Fatal(err)
		}
		want := []any{map[string]any{"op": "add", "path": "/metadata/labels/name", "value": name}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	}
	if _, err := p.Run(ctx, map[string]any{"object": map[string]any{}}, "nope"); !errors.Is(err, cue.ErrNoOutput) {
		t.Errorf("a missing output: %v", err)
	}
	// A check's errors come back positioned.
	if _, ds := l.CompileExpr(env, "a: 1\na: 2"); len(ds) == 0 || !strings.Contains(ds[0].Msg, "conflicting values") {
		t.Errorf("diagnostics %v", ds)
	}
	if _, ds := l.CompileExpr(env, "a: {"); len(ds) == 0 || ds[0].Pos != 4 {
		t.Errorf("a syntax error: %v", ds)
	}
}

// TestWorkersStopAtDeadline: an evaluation that does not end is stopped
// at its deadline (its worker killed), not only stopped being waited for.
func TestWorkersStopAtDeadline(t *testing.T) {
	// A memory bound far above what the program reaches in its time: on a
	// fast machine it passed the default 64 MiB before the deadline, and
	// the bound, not the deadline, stopped it (TestWorkersMemoryLimit tests
	// the bound).
	ws := testWorkers(t, cue.WorkerOptions{Max: 1, MemoryLimit: 1 << 30})
	p, ds := cue.Language{Workers: ws}.CompileExpr(env, squares)
	if ds != nil {
		t.Fatal(ds)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := runKilled(t, ctx, ws, p, 100000)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline", err)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("Run returned after %v", took)
	}
	// Without a deadline, the evaluation's own time bound stops it.
	start = time.Now()
	err = runKilled(t, context.Background(), ws, p, 100000)
	if !errors.Is(err, cue.ErrTimeout) || !errors.Is(err, lang.ErrLimit) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the time bound", err)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("Run returned after %v", took)
	}
	// The next evaluation gets a new worker.
	got, err := p.Run(context.Background(), map[string]any{"n": 2}, "out")
	if err != nil || len(got.([]any)) != 4 {
		t.Errorf("after a kill: %v %v", got, err)
	}
}

// doubling is a program whose string doubles 40 times: a terabyte.
func doubling(param bool) string {
	var b strings.Builder
	if param {
		b.WriteString("s: string @tag(s)\na0: s\n")
	} else {
		b.WriteString("a0: \"0123456789abcdef\"\n")
	}
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "a%d: a%d + a%d\n", i, i-1, i-1)
	}
	b.WriteString("out: len(a40)\n")
	return b.String()
}

// TestWorkersMemoryLimit: a program whose memory doubles stops at its
// worker's limit, as an error in lang.ErrLimit's chain, within moments,
// at load and per request; this process does not grow.
func TestWorkersMemoryLimit(t *testing.T) {
	// A minute to run: the memory limit, not the time, stops them.
	ws := testWorkers(t, cue.WorkerOptions{MemoryLimit: 32 << 20, Timeout: time.Minute})
	l := cue.Language{Workers: ws, CheckTimeout: time.Minute}
	start := time.Now()
	_, ds := l.CompileExpr(env, doubling(false))
	if len(ds) != 1 || !strings.Contains(ds[0].Msg, "more memory than its worker may (32 MiB)") {
		t.Errorf("diagnostics %v", ds)
	}
	p, ds := l.CompileExpr(env, doubling(true))
	if ds != nil {
		t.Fatal(ds)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.Run(ctx, map[string]any{"s": "0123456789abcdef"}, "out")
	if !errors.Is(err, cue.ErrMemory) || !errors.Is(err, lang.ErrLimit) {
		t.Errorf("error %v, want the memory limit", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v", took)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > 256<<20 {
		t.Errorf("this process's heap is %d MiB", ms.HeapAlloc>>20)
	}
}

// TestWorkersTasks: a program's processing.http is carried out by the
// caller's Tasks across the pipe; a task's error keeps its chain.
func TestWorkersTasks(t *testing.T) {
	ws := testWorkers(t, cue.WorkerOptions{Timeout: 300 * time.Millisecond})
	p, ds := cue.Language{Workers: ws}.CompileExpr(env, "processing: {http: {url: \"http://x/\\(n)\"}, output: {a?: int}}\nn: int @tag(n)\nout: processing.output")
	if ds != nil {
		t.Fatal(ds)
	}
	ctx := context.Background()
	var urls []string
	got, err := p.RunTasks(ctx, map[string]any{"n": 7}, "out", func(_ context.Context, task cue.Task) ([]byte, error) {
		urls = append(urls, task.URL)
		return []byte(`{"a": 1}`), nil
	})
	if err != nil || fmt.Sprint(got) != "map[a:1]" || fmt.Sprint(urls) != "[http://x/7]" {
		t.Errorf("got %v %v, urls %v", got, err, urls)
	}
	// A task's time is not the program's.
	got, err = p.RunTasks(ctx, map[string]any{"n": 7}, "out", func(_ context.Context, task cue.Task) ([]byte, error) {
		time.Sleep(500 * time.Millisecond)
		return []byte(`{"a": 2}`), nil
	})
	if err != nil || fmt.Sprint(got) != "map[a:2]" {
		t.Errorf("a slow task: %v %v", got, err)
	}
	if _, err := p.Run(ctx, map[string]any{"n": 7}, "out"); !errors.Is(err, cue.ErrNoTasks) {
		t.Errorf("no tasks: %v", err)
	}
	errNo := lang.ErrNoReader
	_, err = p.RunTasks(ctx, map[string]any{"n": 7}, "out", func(context.Context, cue.Task) ([]byte, error) { return nil, fmt.Errorf("offline: %w", errNo) })
	if !errors.Is(err, lang.ErrNoReader) {
		t.Errorf("a task's error: %v", err)
	}
}

// TestWorkersFail: a worker that cannot start, or that dies, is an
// ErrWorker with what it said.
func TestWorkersFail(t *testing.T) {
	ws := cue.NewWorkers(cue.WorkerOptions{Command: func() *exec.Cmd { return exec.Command("/nonexistent/modwright") }})
	defer ws.Close()
	_, ds := cue.Language{Workers: ws}.CompileExpr(env, "a: 1")
	if len(ds) != 1 || !strings.Contains(ds[0].Msg, cue.ErrWorker.Error()) {
		t.Errorf("diagnostics %v", ds)
	}
	ws = cue.NewWorkers(cue.WorkerOptions{Command: func() *exec.Cmd { return exec.Command("sh", "-c", "echo broken >&2; exit 7") }})
	defer ws.Close()
	_, ds = cue.Language{Workers: ws}.CompileExpr(env, "a: 1")
	if len(ds) != 1 || !strings.Contains(ds[0].Msg, "broken") {
		t.Errorf("diagnostics %v", ds)
	}
}

// TestWorkersResendDropped: a program's text crosses to a worker once; a
// worker that dropped it (its cache holds 8 MiB of text) asks for it
// again and the evaluation goes on.
func TestWorkersResendDropped(t *testing.T) {
	// A megabyte of text takes its time to compile: not what is tested.
	ws := testWorkers(t, cue.WorkerOptions{Max: 1, Timeout: time.Minute})
	l := cue.Language{Workers: ws}
	pad := "// " + strings.Repeat("x", 900<<10) + "\n"
	var ps []*cue.Program
	for i := range 10 { // 9 MiB of text: the first is dropped
		p, ds := l.CompileExpr(env, pad+fmt.Sprintf("n: int @tag(n)\nout: n + %d\n", i))
		if ds != nil {
			t.Fatal(ds)
		}
		ps = append(ps, p)
	}
	for i, p := range append(ps, ps[0]) {
		got, err := p.Run(context.Background(), map[string]any{"n": 1}, "out")
		if want := fmt.Sprint(1 + i%10); err != nil || fmt.Sprint(got) != want {
			t.Fatalf("program %d: %v, %v; want %s", i%10, got, err, want)
		}
	}
	if st := ws.Stats(); st.Started != 1 || st.Killed != 0 {
		t.Errorf("workers %+v: want one, never killed", st)
	}
}
