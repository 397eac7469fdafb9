// Command bench runs modwright's performance benchmarks end to end (`make
// bench`): it builds modwright and the floor server (the reference Go
// webhook, test/load/cmd/floor), runs the Go micro-benchmarks of the engine
// and the webhook, then load-tests both servers over HTTPS/HTTP/2 as
// kube-apiserver calls webhooks, and prints the results against the
// performance targets as markdown tables.
//
//	go run ./test/load/cmd/bench [-runs 3] [-duration 5s] [-warmup 1s] [-soak 1000000]
//	                             [-bench-count 3] [-quick] [-json PATH] [-keep]
//
// Every load scenario starts a fresh server process on a free port with a
// fresh certificate directory, waits for /readyz, runs the load, scrapes
// /metrics and stops the server (SIGTERM). Each scenario runs -runs times,
// in rounds (every scenario once per round, so that the machine's drift
// falls alike on the floor and on modwright); the tables give the medians. Any request error or server failure makes
// the exit status 1, after the report is printed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/modwright/modwright/test/load"
)

type options struct {
	runs        int
	duration    time.Duration
	warmup      time.Duration
	soak        int
	concurrency int
	rate        float64
	benchCount  int
	benchTime   string
	quick       bool
	jsonPath    string
	goCmd       string
	keep        bool
	noMicro     bool
}

func main() {
	o := &options{}
	flag.IntVar(&o.runs, "runs", 3, "runs of each load scenario (the median is reported)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured duration of each load run")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before each measured run")
	flag.IntVar(&o.soak, "soak", 1_000_000, "reviews of the soak run (100 rules, flat out); 0 skips it")
	flag.IntVar(&o.concurrency, "concurrency", 16, "concurrent workers of the flat-out runs")
	flag.Float64Var(&o.rate, "rate", 1000, "rate of the fixed-rate runs (reviews/s)")
	flag.IntVar(&o.benchCount, "bench-count", 3, "passes of the Go micro-benchmarks, each running every benchmark once (the median is reported)")
	flag.StringVar(&o.benchTime, "bench-time", "1s", "-benchtime of the Go micro-benchmarks")
	flag.BoolVar(&o.quick, "quick", false, "smoke test: 1 run of 2s per scenario, soak of 50,000, 1 short micro-benchmark run")
	flag.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	flag.StringVar(&o.goCmd, "go", "go", "the go command")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binaries, rules, server logs)")
	flag.BoolVar(&o.noMicro, "no-micro", false, "skip the Go micro-benchmarks")
	flag.Parse()
	if o.quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, apply := range map[string]func(){
			"runs":        func() { o.runs = 1 },
			"duration":    func() { o.duration = 2 * time.Second },
			"warmup":      func() { o.warmup = 500 * time.Millisecond },
			"soak":        func() { o.soak = 50_000 },
			"bench-count": func() { o.benchCount = 1 },
			"bench-time":  func() { o.benchTime = "100ms" },
		} {
			if !set[name] {
				apply()
			}
		}
	}
	if o.runs < 1 || o.duration <= 0 || o.concurrency < 1 || o.rate <= 0 || o.benchCount < 1 || o.soak < 0 {
		fmt.Fprintln(os.Stderr, "bench: -runs, -duration, -concurrency, -rate and -bench-count must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o)
	if rep != nil {
		rep.print(os.Stdout)
		if o.jsonPath != "" {
			if werr := writeJSON(o.jsonPath, rep); werr != nil {
				fmt.Fprintln(os.Stderr, "bench:", werr)
				os.Exit(1)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if len(rep.Problems) > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d problem(s):\n", len(rep.Problems))
		for _, p := range rep.Problems {
			fmt.Fprintln(os.Stderr, "  -", firstLine(p))
		}
		os.Exit(1)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// repoRoot is the directory of the main module's go.mod.
func repoRoot(ctx context.Context, goCmd string) (string, error) {
	out, err := exec.CommandContext(ctx, goCmd, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the modwright module (run from the repository)")
	}
	return filepath.Dir(mod), nil
}

// paths of one bench run.
type env struct {
	root, tmp        string
	modwright, floor string
	objects          string
	rules            map[int]string // rule count -> file of ModRules
	policies         map[int]string // policy count -> file of Policies
}

// rulesFile is the rule file of a scenario.
func (e *env) rulesFile(policies bool, n int) string {
	if policies {
		return e.policies[n]
	}
	return e.rules[n]
}

func run(ctx context.Context, o *options) (*report, error) {
	rep := newReport(o)
	root, err := repoRoot(ctx, o.goCmd)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "modwright-bench-")
	if err != nil {
		return nil, err
	}
	if o.keep {
		progress("temporary directory: %s (kept)", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	e := &env{root: root, tmp: tmp, objects: filepath.Join(root, "testdata", "bench", "objects"), rules: map[int]string{}, policies: map[int]string{}}

	// 1. Build both servers, and drop their files' pages from the page
	// cache: each server starts from its binary as read from the disk, as
	// a node starts a container's. The resident pages of a binary depend
	// on how its file came into the cache (the linker's writes, one large
	// write, cp's: 63, 96 and 52 MiB of RssFile for modwright at rest),
	// and they are most of its RSS; read from the disk, 52 MiB whichever.
	e.modwright, e.floor = filepath.Join(tmp, "modwright"), filepath.Join(tmp, "floor")
	for _, b := range []struct{ out, pkg string }{{e.modwright, "./cmd/modwright"}, {e.floor, "./test/load/cmd/floor"}} {
		progress("building %s", b.pkg)
		cmd := exec.CommandContext(ctx, o.goCmd, "build", "-trimpath", "-o", b.out, b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return rep, fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
		if err := uncache(b.out); err != nil {
			return rep, fmt.Errorf("dropping %s from the page cache: %w", b.out, err)
		}
	}
	if out, err := exec.CommandContext(ctx, e.modwright, "serve", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--standalone") {
		return rep, fmt.Errorf("modwright serve --standalone is not available: %v\n%s", err, out)
	}

	// 2. Micro-benchmarks.
	if !o.noMicro {
		bs, err := runMicroBenchmarks(ctx, o, root, filepath.Join(tmp, "gotest-bench.log"))
		rep.Benchmarks = bs
		if err != nil {
			rep.problem("micro-benchmarks: %v", err)
		}
		for _, name := range expectedBenchmarks() {
			if findBench(bs, name) == nil {
				rep.MissingBenchmarks = append(rep.MissingBenchmarks, name)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}

	// 3. Rule sets.
	for _, n := range []int{0, 100, 1000, 10000} {
		path := filepath.Join(tmp, fmt.Sprintf("rules-%d.yaml", n))
		data := []byte("# The \"0 rules\" scenario: no ModRule at all.\n")
		if n > 0 {
			data = load.RuleSet(n, 10)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return rep, err
		}
		e.rules[n] = path
	}
	for _, n := range []int{100, 1000} {
		path := filepath.Join(tmp, fmt.Sprintf("policies-%d.yaml", n))
		if err := os.WriteFile(path, load.PolicySet(n, 10), 0o644); err != nil {
			return rep, err
		}
		e.policies[n] = path
	}

	// 4. Load scenarios, in rounds: each round runs every scenario once, so
	// that what drifts on the machine over the minutes of a run (another
	// tenant, the CPU's clock) falls alike on the floor and on modwright,
	// whose ratios the targets are.
	rep.Scenarios = runScenarios(ctx, o, e, scenarios(o), rep)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	rep.Snapshot = runSnapshot10k(ctx, o, e, rep)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	if o.soak > 0 {
		rep.Soak = runSoak(ctx, o, e, rep)
	}
	rep.Finished = time.Now().UTC().Format(time.RFC3339)
	rep.computeTargets()
	return rep, ctx.Err()
}

// scenario is one load configuration.
type scenario struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Server string `json:"server"` // floor or modwright
	Rules  int    `json:"rules"`
	// Policies: the rules are load.PolicySet's Policies, not ModRules.
	Policies  bool    `json:"policies,omitempty"`
	Rate      float64 `json:"rate,omitempty"` // 0: flat out
	Namespace string  `json:"namespace,omitempty"`
	Mix       string  `json:"mix,omitempty"`
	// Env is added to the server's environment.
	Env []string `json:"env,omitempty"`
}

// namespacedMix sends only the namespaced objects (for the quiet
// namespace, and the floor run it is compared with).
const namespacedMix = "deployment=1,pod=1,service=1,configmap=1"

func scenarios(o *options) []scenario {
	r := o.rate
	return []scenario{
		{ID: "floor-flat", Title: "floor, flat out", Server: "floor"},
		{ID: "floor-rate", Title: fmt.Sprintf("floor, %s/s", count(r)), Server: "floor", Rate: r},
		{ID: "floor-flat-namespaced", Title: "floor, flat out, namespaced objects only", Server: "floor", Mix: namespacedMix},
		{ID: "mw0-flat", Title: "modwright, 0 rules, flat out", Server: "modwright", Rules: 0},
		{ID: "mw100-flat", Title: "modwright, 100 rules (10 matching), flat out", Server: "modwright", Rules: 100},
		{ID: "mw100-rate", Title: fmt.Sprintf("modwright, 100 rules (10 matching), %s/s", count(r)), Server: "modwright", Rules: 100, Rate: r},
		{ID: "mw100-rate-gogc100", Title: fmt.Sprintf("modwright, 100 rules (10 matching), %s/s, GOGC=100 (reference)", count(r)), Server: "modwright", Rules: 100, Rate: r,
			Env: []string{"GOGC=100"}},
		{ID: "mw1000-flat", Title: "modwright, 1,000 rules (10 matching), flat out", Server: "modwright", Rules: 1000},
		{ID: "mw1000-rate", Title: fmt.Sprintf("modwright, 1,000 rules (10 matching), %s/s", count(r)), Server: "modwright", Rules: 1000, Rate: r},
		{ID: "mw1000-quiet", Title: "modwright, 1,000 rules, none can apply (namespace quiet), flat out", Server: "modwright", Rules: 1000,
			Namespace: load.QuietNamespace, Mix: namespacedMix},
		{ID: "pol100-flat", Title: "modwright, 100 policies (10 matching), flat out", Server: "modwright", Rules: 100, Policies: true},
		{ID: "pol100-rate", Title: fmt.Sprintf("modwright, 100 policies (10 matching), %s/s", count(r)), Server: "modwright", Rules: 100, Policies: true, Rate: r},
		{ID: "pol1000-quiet", Title: "modwright, 1,000 policies, none can apply (namespace quiet), flat out", Server: "modwright", Rules: 1000, Policies: true,
			Namespace: load.QuietNamespace, Mix: namespacedMix},
	}
}

// startFor starts the server of a scenario.
// rules is the rule file of a modwright server.
func startFor(ctx context.Context, e *env, server string, rules string, name string, environ ...string) (*server, error) {
	if server == "floor" {
		return startServer(ctx, name, e.tmp, e.floor, nil, environ, "-port", "-cert-dir")
	}
	return startServer(ctx, name, e.tmp, e.modwright, []string{"serve", "--standalone", "--shutdown-delay=0", "--rules", rules}, environ, "--webhook-port", "--cert-dir")
}

// scenarioResult is a scenario's runs and their medians.
type scenarioResult struct {
	scenario
	Runs []*load.Result `json:"runs"`
	// ReadySeconds is each run's time from the process' start to ready.
	ReadySeconds []float64 `json:"ready_s"`
	Median       summary   `json:"median"`
	// PeakRSS is the largest VmHWM of the runs under load, in bytes;
	// StartPeakRSS the largest before the load (the server's start).
	// PeakSinceStart: some run's VmHWM could not be reset before the load,
	// and PeakRSS is over the process' life.
	PeakRSS        int64  `json:"peak_rss_bytes"`
	StartPeakRSS   int64  `json:"start_peak_rss_bytes"`
	PeakSinceStart bool   `json:"peak_since_start,omitempty"`
	Errors         int64  `json:"errors"`
	Failed         string `json:"failed,omitempty"`
	// Metrics are a few of the server's metrics after the last run.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// summary holds the medians over the runs.
type summary struct {
	Throughput float64 `json:"throughput"`
	P50        float64 `json:"p50_ms"`
	P95        float64 `json:"p95_ms"`
	P99        float64 `json:"p99_ms"`
	Max        float64 `json:"max_ms"`
	SendLagP99 float64 `json:"send_lag_p99_ms,omitempty"`
	CPUPer1000 float64 `json:"cpu_s_per_1000"`
	GenCPU1000 float64 `json:"generator_cpu_s_per_1000"`
	PeakRSS    float64 `json:"peak_rss_bytes"`
	Ready      float64 `json:"ready_s"`
}

func runScenarios(ctx context.Context, o *options, e *env, scs []scenario, rep *report) []*scenarioResult {
	results := make([]*scenarioResult, len(scs))
	items := make([][]load.Item, len(scs))
	for j, sc := range scs {
		results[j] = &scenarioResult{scenario: sc}
		weights, err := load.ParseMix(sc.Mix)
		if err == nil {
			items[j], err = load.LoadMix(e.objects, sc.Namespace, weights)
		}
		if err != nil {
			results[j].Failed = err.Error()
		}
	}
	for i := 1; i <= o.runs && ctx.Err() == nil; i++ {
		for j, sc := range scs {
			res := results[j]
			if res.Failed != "" || ctx.Err() != nil {
				continue // a failed run ends its scenario
			}
			progress("%s: run %d/%d", sc.Title, i, o.runs)
			if err := oneRun(ctx, o, e, sc, items[j], res); err != nil && ctx.Err() == nil {
				res.Failed = err.Error()
			}
		}
	}
	for _, res := range results {
		finishScenario(res, rep)
	}
	return results
}

// finishScenario reports a scenario's failures and errors and takes its
// medians.
func finishScenario(res *scenarioResult, rep *report) {
	if res.Failed != "" {
		rep.problem("%s: %s", res.scenario.Title, res.Failed)
	}
	for _, r := range res.Runs {
		res.Errors += r.Errors
		if r.Server != nil {
			res.PeakRSS = max(res.PeakRSS, r.Server.PeakRSS)
			res.StartPeakRSS = max(res.StartPeakRSS, r.Server.StartPeakRSS)
			res.PeakSinceStart = res.PeakSinceStart || r.Server.PeakSinceStart
		}
	}
	if res.Errors > 0 {
		msg := fmt.Sprintf("%s: %d request errors", res.scenario.Title, res.Errors)
		for _, r := range res.Runs {
			if r.Errors > 0 {
				msg += "\n" + load.FormatErrors(r)
			}
		}
		rep.problem("%s", msg)
	}
	res.Median = medians(res.Runs, res.ReadySeconds)
}

func oneRun(ctx context.Context, o *options, e *env, sc scenario, items []load.Item, res *scenarioResult) error {
	srv, err := startFor(ctx, e, sc.Server, e.rulesFile(sc.Policies, sc.Rules), sc.ID, sc.Env...)
	if err != nil {
		return err
	}
	res.ReadySeconds = append(res.ReadySeconds, srv.ready.Seconds())
	roots, err := load.LoadCA(filepath.Join(srv.certDir, "ca.crt"))
	if err != nil {
		srv.kill()
		return err
	}
	client := load.NewClient(roots)
	r, runErr := load.Run(ctx, load.Config{
		URL:         srv.base + load.WebhookPath + "?timeout=10s",
		Client:      client,
		Items:       items,
		Rate:        sc.Rate,
		Concurrency: o.concurrency,
		Duration:    o.duration,
		Warmup:      o.warmup,
		ServerPID:   srv.pid(),
	})
	client.CloseIdleConnections()
	if runErr == nil {
		res.Runs = append(res.Runs, r)
		progress("  %.0f reviews/s, p50 %.2f ms, p99 %.2f ms, %d errors", r.Throughput, r.Latency.P50, r.Latency.P99, r.Errors)
	}
	if sc.Server == "modwright" {
		if m, err := load.ScrapeMetrics(ctx, srv.client, srv.base); err == nil {
			res.Metrics = pickMetrics(m)
		} else if runErr == nil {
			runErr = fmt.Errorf("scraping /metrics: %w", err)
		}
	}
	if err := srv.running(); err != nil {
		return err
	}
	if err := srv.stop(); err != nil {
		return err
	}
	return runErr
}

// pickMetrics keeps the server metrics the report shows.
func pickMetrics(m load.Metrics) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		for _, p := range []string{"modwright_admission_reviews_total", "modwright_rule_evaluation_errors_total", "modwright_admission_panics_total",
			"modwright_rules{", "modwright_snapshot_build_seconds", "go_memstats_heap_inuse_bytes", "go_memstats_next_gc_bytes", "go_gc_duration_seconds_count", "process_resident_memory_bytes"} {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}

func medians(runs []*load.Result, ready []float64) summary {
	var tp, p50, p95, p99, mx, lag, cpu, gen, rss []float64
	for _, r := range runs {
		tp = append(tp, r.Throughput)
		gen = append(gen, r.GeneratorCPUPer1000)
		p50 = append(p50, r.Latency.P50)
		p95 = append(p95, r.Latency.P95)
		p99 = append(p99, r.Latency.P99)
		mx = append(mx, r.Latency.Max)
		if r.SendLag != nil {
			lag = append(lag, r.SendLag.P99)
		}
		if r.Server != nil {
			cpu = append(cpu, r.Server.CPUPer1000)
			rss = append(rss, float64(r.Server.PeakRSS))
		}
	}
	return summary{
		Throughput: load.Median(tp), P50: load.Median(p50), P95: load.Median(p95), P99: load.Median(p99), Max: load.Median(mx),
		SendLagP99: load.Median(lag), CPUPer1000: load.Median(cpu), GenCPU1000: load.Median(gen), PeakRSS: load.Median(rss), Ready: load.Median(ready),
	}
}

// snapshotResult is the 10,000-rule start-up.
type snapshotResult struct {
	Rules        int       `json:"rules"`
	ReadySeconds []float64 `json:"ready_s"`
	Read         []float64 `json:"read_s"`
	Compile      []float64 `json:"compile_s"`
	Index        []float64 `json:"index_s"`
	RulesReady   []float64 `json:"rules_ready"`
	PeakRSS      []int64   `json:"peak_rss_bytes"`
	Failed       string    `json:"failed,omitempty"`
	// Medians.
	MedianReady   float64 `json:"median_ready_s"`
	MedianRead    float64 `json:"median_read_s"`
	MedianCompile float64 `json:"median_compile_s"`
	MedianIndex   float64 `json:"median_index_s"`
}

// Build is the median of read+compile+index.
func (s *snapshotResult) Build() float64 {
	var b []float64
	for i := range s.Read {
		b = append(b, s.Read[i]+s.Compile[i]+s.Index[i])
	}
	return load.Median(b)
}

func runSnapshot10k(ctx context.Context, o *options, e *env, rep *report) *snapshotResult {
	s := &snapshotResult{Rules: 10000}
	for i := 1; i <= o.runs && ctx.Err() == nil; i++ {
		progress("modwright, 10,000 rules: start to ready, run %d/%d", i, o.runs)
		err := func() error {
			srv, err := startFor(ctx, e, "modwright", e.rules[10000], "mw10k")
			if err != nil {
				return err
			}
			s.ReadySeconds = append(s.ReadySeconds, srv.ready.Seconds())
			// The server records the build's metrics before it publishes
			// the snapshot, so they are there once /readyz is ready.
			m, err := load.ScrapeMetrics(ctx, srv.client, srv.base)
			if err != nil {
				srv.kill()
				return fmt.Errorf("scraping /metrics: %w", err)
			}
			var missing []string
			get := func(dst *[]float64, name string, labels ...string) {
				v, ok := m.Get(name, labels...)
				if !ok {
					missing = append(missing, fmt.Sprintf("%s%v", name, labels))
				}
				*dst = append(*dst, v)
			}
			get(&s.Read, "modwright_snapshot_build_seconds", "phase", "read")
			get(&s.Compile, "modwright_snapshot_build_seconds", "phase", "compile")
			get(&s.Index, "modwright_snapshot_build_seconds", "phase", "index")
			get(&s.RulesReady, "modwright_rules", "state", "ready")
			if p, err := load.ReadProcess(srv.pid()); err == nil {
				s.PeakRSS = append(s.PeakRSS, p.PeakRSS)
			}
			progress("  ready in %.3f s (read %.3f, compile %.3f, index %.3f)", srv.ready.Seconds(), s.Read[len(s.Read)-1], s.Compile[len(s.Compile)-1], s.Index[len(s.Index)-1])
			if err := srv.stop(); err != nil {
				return err
			}
			if len(missing) > 0 {
				return fmt.Errorf("metrics missing: %s", strings.Join(missing, ", "))
			}
			if got := s.RulesReady[len(s.RulesReady)-1]; got != 10000 {
				return fmt.Errorf("modwright_rules{state=\"ready\"} is %v, want 10000", got)
			}
			return nil
		}()
		if err != nil {
			s.Failed = err.Error()
			rep.problem("10,000 rules: %v", err)
			break
		}
	}
	s.MedianReady, s.MedianRead, s.MedianCompile, s.MedianIndex = load.Median(s.ReadySeconds), load.Median(s.Read), load.Median(s.Compile), load.Median(s.Index)
	return s
}

// soakResult samples the server's memory over a long run.
type soakResult struct {
	Reviews    int          `json:"reviews"`
	Samples    []soakSample `json:"samples"`
	Throughput float64      `json:"throughput"`
	Errors     int64        `json:"errors"`
	Failed     string       `json:"failed,omitempty"`
	// Baseline and Final are the largest samples of the warm part (samples
	// 2-5) and of the second half (6-10); Flat says whether Final stays
	// within 10% of Baseline for both RSS and the heap goal.
	BaselineRSS  int64   `json:"baseline_rss_bytes"`
	FinalRSS     int64   `json:"final_rss_bytes"`
	BaselineHeap float64 `json:"baseline_heap_goal_bytes"`
	FinalHeap    float64 `json:"final_heap_goal_bytes"`
	Growth       float64 `json:"growth"`
	Flat         bool    `json:"flat"`
	Criterion    string  `json:"criterion"`
}

type soakSample struct {
	After     int64   `json:"after_reviews"`
	RSS       int64   `json:"rss_bytes"`
	HeapInuse float64 `json:"heap_inuse_bytes"`
	// HeapGoal is go_memstats_next_gc_bytes: the heap the last collection
	// found live, times 1 + GOGC/100 (5 at serve's default --gc-percent).
	// Heap in use, sampled at a random point of the collection cycle,
	// swings between the live heap and the goal; the goal moves only when
	// what survives a collection does.
	HeapGoal float64 `json:"heap_goal_bytes"`
	P99      float64 `json:"p99_ms"`
}

// soakCriterion explains how Flat is decided.
const soakCriterion = "memory is flat when, for both VmRSS and the heap goal (go_memstats_next_gc_bytes, a multiple of the heap found live by the last collection), the largest of the samples taken after 6/10..10/10 of the reviews is within 10% of the largest of those after 2/10..5/10 (the first tenth is warm-up)"

func runSoak(ctx context.Context, o *options, e *env, rep *report) *soakResult {
	s := &soakResult{Reviews: o.soak, Criterion: soakCriterion}
	err := func() error {
		srv, err := startFor(ctx, e, "modwright", e.rules[100], "soak")
		if err != nil {
			return err
		}
		defer func() {
			if srv != nil {
				srv.kill()
			}
		}()
		roots, err := load.LoadCA(filepath.Join(srv.certDir, "ca.crt"))
		if err != nil {
			return err
		}
		items, err := load.LoadMix(e.objects, "", nil)
		if err != nil {
			return err
		}
		client := load.NewClient(roots)
		defer client.CloseIdleConnections()
		chunk := max(1, o.soak/10)
		var done int64
		var elapsed float64
		for k := 1; k <= 10 && ctx.Err() == nil; k++ {
			warm := time.Duration(0)
			if k == 1 {
				warm = o.warmup
			}
			r, err := load.Run(ctx, load.Config{URL: srv.base + load.WebhookPath + "?timeout=10s", Client: client, Items: items,
				Concurrency: o.concurrency, Requests: chunk, Warmup: warm, ServerPID: srv.pid()})
			if err != nil {
				return err
			}
			done += r.Requests
			elapsed += r.Duration
			s.Errors += r.Errors
			if r.Errors > 0 {
				rep.problem("soak: %d request errors\n%s", r.Errors, load.FormatErrors(r))
			}
			p, err := load.ReadProcess(srv.pid())
			if err != nil {
				return err
			}
			m, err := load.ScrapeMetrics(ctx, srv.client, srv.base)
			if err != nil {
				return fmt.Errorf("scraping /metrics: %w", err)
			}
			heap, ok := m.Get("go_memstats_heap_inuse_bytes")
			if !ok {
				return errors.New("/metrics has no go_memstats_heap_inuse_bytes")
			}
			goal, ok := m.Get("go_memstats_next_gc_bytes")
			if !ok {
				return errors.New("/metrics has no go_memstats_next_gc_bytes")
			}
			s.Samples = append(s.Samples, soakSample{After: done, RSS: p.RSS, HeapInuse: heap, HeapGoal: goal, P99: r.Latency.P99})
			progress("soak: %d reviews, %.0f reviews/s, RSS %.1f MiB, heap in use %.1f MiB, heap goal %.1f MiB", done, r.Throughput, mib(p.RSS), heap/(1<<20), goal/(1<<20))
		}
		if elapsed > 0 {
			s.Throughput = float64(done) / elapsed
		}
		if err := srv.running(); err != nil {
			return err
		}
		err = srv.stop()
		srv = nil
		return err
	}()
	if err != nil && ctx.Err() == nil {
		s.Failed = err.Error()
		rep.problem("soak: %v", err)
	}
	if len(s.Samples) == 10 {
		for i, x := range s.Samples {
			switch {
			case i >= 1 && i <= 4:
				s.BaselineRSS, s.BaselineHeap = max(s.BaselineRSS, x.RSS), max(s.BaselineHeap, x.HeapGoal)
			case i >= 5:
				s.FinalRSS, s.FinalHeap = max(s.FinalRSS, x.RSS), max(s.FinalHeap, x.HeapGoal)
			}
		}
		if s.BaselineRSS > 0 && s.BaselineHeap > 0 {
			s.Growth = max(float64(s.FinalRSS)/float64(s.BaselineRSS), s.FinalHeap/s.BaselineHeap)
			s.Flat = s.Growth <= 1.10
		}
	}
	return s
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// count formats n with thousands separators.
func count(n float64) string {
	s := fmt.Sprintf("%.0f", n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// uncache writes the file at path to the disk and drops its pages from
// the page cache.
func uncache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
