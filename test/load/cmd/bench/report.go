package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// report is everything a bench run found.
type report struct {
	Machine           machine           `json:"machine"`
	Settings          settings          `json:"settings"`
	Targets           []target          `json:"targets"`
	Scenarios         []*scenarioResult `json:"scenarios"`
	Benchmarks        []*microBench     `json:"benchmarks"`
	MissingBenchmarks []string          `json:"missing_benchmarks,omitempty"`
	Snapshot          *snapshotResult   `json:"snapshot_10k,omitempty"`
	Soak              *soakResult       `json:"soak,omitempty"`
	Problems          []string          `json:"problems,omitempty"`
	Started           string            `json:"started"`
	Finished          string            `json:"finished,omitempty"`
}

type machine struct {
	CPUs        int    `json:"cpus"`
	Model       string `json:"model"`
	GoVersion   string `json:"go_version"`
	OS          string `json:"os"`
	LoadAverage string `json:"load_average_before"`
}

type settings struct {
	Runs        int     `json:"runs"`
	Duration    string  `json:"duration"`
	Warmup      string  `json:"warmup"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate"`
	Soak        int     `json:"soak"`
	BenchCount  int     `json:"bench_count"`
	BenchTime   string  `json:"bench_time"`
}

// target is one row of the targets table.
type target struct {
	Measure   string `json:"measure"`
	Target    string `json:"target"`
	Result    string `json:"result"`
	Reference string `json:"reference"`
	Ratio     string `json:"ratio"`
	Verdict   string `json:"verdict"`
	// Met is nil when there is no result.
	Met *bool `json:"met"`
}

func newReport(o *options) *report {
	return &report{
		Machine: machine{
			CPUs:        runtime.NumCPU(),
			Model:       cpuModel(),
			GoVersion:   runtime.Version(),
			OS:          runtime.GOOS + "/" + runtime.GOARCH,
			LoadAverage: loadAverage(),
		},
		Settings: settings{Runs: o.runs, Duration: o.duration.String(), Warmup: o.warmup.String(), Concurrency: o.concurrency,
			Rate: o.rate, Soak: o.soak, BenchCount: o.benchCount, BenchTime: o.benchTime},
		Started: time.Now().UTC().Format(time.RFC3339),
	}
}

func (r *report) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	progress("PROBLEM: %s", msg)
	r.Problems = append(r.Problems, msg)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func (r *report) scenario(id string) *scenarioResult {
	for _, s := range r.Scenarios {
		if s.ID == id && s.Failed == "" && len(s.Runs) > 0 {
			return s
		}
	}
	return nil
}

// verdict compares a result with its target: at least (higher is better)
// or at most.
func verdict(result, limit float64, atLeast bool) (string, bool) {
	if atLeast {
		if result >= limit {
			return "met", true
		}
		return fmt.Sprintf("MISSED by %.0f%%", (limit-result)/limit*100), false
	}
	if result <= limit {
		return "met", true
	}
	return fmt.Sprintf("MISSED by %.0f%%", (result-limit)/limit*100), false
}

func (r *report) add(t target, result, limit float64, atLeast, ok bool) {
	if !ok {
		t.Verdict = "no result"
		if t.Result == "" {
			t.Result = "—"
		}
		r.Targets = append(r.Targets, t)
		return
	}
	v, met := verdict(result, limit, atLeast)
	t.Verdict, t.Met = v, &met
	r.Targets = append(r.Targets, t)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func (r *report) computeTargets() {
	r.Targets = nil
	floor, floorRate, floorNS := r.scenario("floor-flat"), r.scenario("floor-rate"), r.scenario("floor-flat-namespaced")
	r.throughputTarget(floor)
	r.latencyTarget(floorRate)
	r.bytesTarget()
	r.engineTarget()
	r.quietTarget(floorNS)
	r.policyTargets(floorNS)
	r.rssTarget()
	r.snapshotTargets(floor)
	r.soakTarget()
}

// throughputTarget: Throughput at 100 rules >= 0.8x the floor (issue 30,
// target 3).
func (r *report) throughputTarget(floor *scenarioResult) {
	t := target{Measure: "Throughput, 100 rules (10 matching each object), flat out", Target: "≥ 0.8× floor"}
	r.throughputRatio(t, r.scenario("mw100-flat"), floor, "floor", 0.8)
}

// latencyTarget: p99 at 1,000/s with 100 rules <= 1.2x the floor's (issue
// 30, target 3).
func (r *report) latencyTarget(floorRate *scenarioResult) {
	rate := count(r.Settings.Rate)
	t := target{Measure: fmt.Sprintf("p99 latency at %s reviews/s, 100 rules (10 matching)", rate), Target: "≤ 1.2× floor's p99"}
	r.p99Ratio(t, r.scenario("mw100-rate"), floorRate, "floor", 1.2)
}

// p99Ratio adds a target on the ratio of two scenarios' p99 latencies (at
// most limit).
func (r *report) p99Ratio(t target, s, ref *scenarioResult, refLabel string, limit float64) {
	r.scenarioRatio(t, s, ref, refLabel, limit, false, func(m summary) float64 { return m.P99 }, "%.2f ms")
}

// scenarioRatio adds a target on the ratio of a measure (of format) of two
// scenarios' medians: at least limit, or at most.
func (r *report) scenarioRatio(t target, s, ref *scenarioResult, refLabel string, limit float64, atLeast bool, of func(summary) float64, format string) {
	t.Reference, t.Ratio = "—", "—"
	if s != nil {
		t.Result = fmt.Sprintf(format, of(s.Median))
	}
	if ref != nil {
		t.Reference = refLabel + " " + fmt.Sprintf(format, of(ref.Median))
	}
	ok := s != nil && ref != nil && of(ref.Median) > 0
	var x float64
	if ok {
		x = of(s.Median) / of(ref.Median)
		t.Ratio = ratio(of(s.Median), of(ref.Median))
	}
	r.add(t, x, limit, atLeast, ok)
}

// bytesTarget: <= 20 KB allocated per review with 10 matching ModRules
// (issue 30, target 3), by the webhook handler's benchmark.
func (r *report) bytesTarget() {
	const name = "Handler/rules=100/matching=10"
	r.benchLimit(target{Measure: "Allocated per review, 10 matching ModRules (Benchmark" + name + ")", Target: "≤ 20 KB"},
		name, func(b *microBench) float64 { return b.BytesPerOp / 1024 }, "%.1f KB", 20)
}

// benchLimit adds a target on a micro-benchmark's measure (of, written
// with format): at most limit.
func (r *report) benchLimit(t target, name string, of func(*microBench) float64, format string, limit float64) {
	t.Reference, t.Ratio, t.Result = "—", "—", "missing"
	b := findBench(r.Benchmarks, name)
	var x float64
	if b != nil {
		x = of(b)
		t.Result = fmt.Sprintf(format, x)
	}
	r.add(t, x, limit, false, b != nil)
}

// engineTarget: Engine cost at 10 matching rules <= 3x the floor's JSON cost.
func (r *report) engineTarget() {
	t := target{Measure: "Engine cost, 10 matching rules (BenchmarkEvaluate/rules=10/matching=10)", Target: "≤ 3× BenchmarkDecodeEncode", Reference: "—", Ratio: "—"}
	ev, de := findBench(r.Benchmarks, "Evaluate/rules=10/matching=10"), findBench(r.Benchmarks, "DecodeEncode")
	if ev != nil {
		t.Result = fmt.Sprintf("%.1f µs/op", ev.NsPerOp/1000)
	} else {
		t.Result = "missing"
	}
	if de != nil {
		t.Reference = fmt.Sprintf("DecodeEncode %.1f µs/op", de.NsPerOp/1000)
	} else {
		t.Reference = "DecodeEncode missing"
	}
	ok := ev != nil && de != nil && de.NsPerOp > 0
	var x float64
	if ok {
		x = ev.NsPerOp / de.NsPerOp
		t.Ratio = ratio(ev.NsPerOp, de.NsPerOp)
	}
	r.add(t, x, 3, false, ok)
}

// quietTarget: No rule can apply: cost <= 1.2x the floor.
func (r *report) quietTarget(floorNS *scenarioResult) {
	t := target{Measure: "No rule can apply (1,000 rules, objects in namespace quiet), flat out", Target: "≥ 0.83× floor throughput (cost ≤ 1.2×)", Reference: "—", Ratio: "—"}
	mw := r.scenario("mw1000-quiet")
	if mw != nil {
		t.Result = fmt.Sprintf("%.0f reviews/s", mw.Median.Throughput)
	}
	if floorNS != nil {
		t.Reference = fmt.Sprintf("floor %.0f reviews/s (same objects)", floorNS.Median.Throughput)
	}
	ok := mw != nil && floorNS != nil && floorNS.Median.Throughput > 0
	var x float64
	if ok {
		x = mw.Median.Throughput / floorNS.Median.Throughput
		t.Ratio = ratio(mw.Median.Throughput, floorNS.Median.Throughput)
	}
	r.add(t, x, 1/1.2, true, ok)
}

// rssTarget: Peak RSS with 1,000 rules under load <= 64 MiB (issue 30,
// targets 2 and 3).
func (r *report) rssTarget() {
	t := target{Measure: "Peak RSS (VmHWM), 1,000 rules under load", Target: "≤ 64 MiB", Reference: "—", Ratio: "—"}
	var (
		peak, startPeak int64
		sinceStart      bool
		parts           []string
	)
	for _, id := range []string{"mw1000-flat", "mw1000-rate"} {
		if s := r.scenario(id); s != nil {
			peak = max(peak, s.PeakRSS)
			startPeak = max(startPeak, s.StartPeakRSS)
			sinceStart = sinceStart || s.PeakSinceStart
			what := "flat out"
			if s.Rate > 0 {
				what = fmt.Sprintf("%s/s", count(s.Rate))
				if s.Median.Throughput < 0.95*s.Rate {
					what += ", saturated"
				}
			}
			parts = append(parts, fmt.Sprintf("%.1f %s", mib(s.PeakRSS), what))
		}
	}
	if peak > 0 {
		t.Result = fmt.Sprintf("%.1f MiB (%s)%s", mib(peak), strings.Join(parts, "; "), startPeakNote(startPeak, sinceStart))
	}
	var floorPeak int64
	for _, id := range []string{"floor-flat", "floor-rate"} {
		if s := r.scenario(id); s != nil {
			floorPeak = max(floorPeak, s.PeakRSS)
		}
	}
	if floorPeak > 0 {
		t.Reference = fmt.Sprintf("floor %.1f MiB", mib(floorPeak))
		if peak > 0 {
			t.Ratio = ratio(float64(peak), float64(floorPeak))
		}
	}
	r.add(t, mib(peak), 64, false, peak > 0)
}

// snapshotTargets: Snapshot build of 10,000 rules <= 1 s, and start to
// ready <= 0.6 s (issue 30's target 2).
func (r *report) snapshotTargets(floor *scenarioResult) {
	s := r.Snapshot
	ok := s != nil && len(s.Read) > 0 && s.Failed == ""
	t := target{Measure: "Snapshot build, 10,000 rules (read + compile + index gauges)", Target: "≤ 1 s", Reference: "—", Ratio: "—"}
	var build float64
	if ok {
		build = s.Build()
		t.Result = fmt.Sprintf("%.3f s (read %.3f, compile %.3f, index %.3f)", build, s.MedianRead, s.MedianCompile, s.MedianIndex)
	}
	r.add(t, build, 1, false, ok)

	t = target{Measure: "Start to ready, 10,000 rules (process start to /readyz 200)", Target: "≤ 0.6 s", Reference: "—", Ratio: "—"}
	ok = s != nil && len(s.ReadySeconds) > 0
	var ready float64
	if ok {
		ready = s.MedianReady
		t.Result = fmt.Sprintf("%.3f s", ready)
	}
	if floor != nil {
		t.Reference = fmt.Sprintf("floor %.3f s", floor.Median.Ready)
		if ok {
			t.Ratio = ratio(ready, floor.Median.Ready)
		}
	}
	r.add(t, ready, 0.6, false, ok && s.Failed == "")
}

// soakTarget: Memory flat after the soak.
func (r *report) soakTarget() {
	s := r.Soak
	t := target{Measure: "Memory after the soak, 100 rules, flat out", Target: "flat (≤ 1.10× growth, see below)", Reference: "—", Ratio: "—"}
	ok := s != nil && len(s.Samples) == 10 && s.Growth > 0
	if ok {
		t.Measure = fmt.Sprintf("Memory after the soak (%s reviews, 100 rules, flat out)", count(float64(s.Reviews)))
		t.Result = fmt.Sprintf("RSS %.1f → %.1f MiB, heap goal %.1f → %.1f MiB", mib(s.BaselineRSS), mib(s.FinalRSS), s.BaselineHeap/(1<<20), s.FinalHeap/(1<<20))
		t.Reference = "its own first half"
		t.Ratio = fmt.Sprintf("%.2f×", s.Growth)
	}
	var g float64
	if ok {
		g = s.Growth
	}
	r.add(t, g, 1.10, false, ok)
}

// policyTargets are issue 15's targets for Policies (CEL), as issue 30
// sets them.
func (r *report) policyTargets(floorNS *scenarioResult) {
	// 16 CEL validations <= 40 µs of engine cost.
	for _, name := range []string{"PSS/policies=16/compliant", "PSS/policies=1/compliant"} {
		r.benchLimit(target{Measure: fmt.Sprintf("Engine cost, 16 CEL validations (Benchmark%s)", name), Target: "≤ 40 µs/op"},
			name, func(b *microBench) float64 { return b.NsPerOp / 1000 }, "%.1f µs/op", 40)
	}
	// 100 Policies (10 apply) <= 1.5x the same work with ModRules.
	r.benchRatio(target{Measure: "Engine cost, 100 Policies (10 apply) vs 10 ModRules (BenchmarkLoad)", Target: "≤ 1.5× modrules=10/matching=10"},
		"Load/policies=100/matching=10", "Load/modrules=10/matching=10", "ModRules", 1.5)
	r.throughputRatio(target{Measure: "Throughput, 100 Policies (10 matching each object) vs 100 ModRules (10 matching), flat out", Target: "≥ 0.67× ModRules (cost ≤ 1.5×)"},
		r.scenario("pol100-flat"), r.scenario("mw100-flat"), "ModRules", 1/1.5)
	r.p99Ratio(target{Measure: fmt.Sprintf("p99 latency at %s reviews/s, 100 Policies vs 100 ModRules (10 matching)", count(r.Settings.Rate)), Target: "≤ 1.5× ModRules' p99"},
		r.scenario("pol100-rate"), r.scenario("mw100-rate"), "ModRules", 1.5)
	r.rssOf(target{Measure: "Peak RSS (VmHWM), 1,000 Policies (none can apply) under load", Target: "≤ 128 MiB"}, r.scenario("pol1000-quiet"), 128)
	// No Policy can apply: <= 1.2x the floor.
	r.throughputRatio(target{Measure: "No Policy can apply (1,000 policies, objects in namespace quiet), flat out", Target: "≥ 0.83× floor throughput (cost ≤ 1.2×)"},
		r.scenario("pol1000-quiet"), floorNS, "floor (same objects)", 1/1.2)
	r.benchRatio(target{Measure: "No Policy can apply, engine (BenchmarkLoad/policies=100/none-apply)", Target: "≤ 1.2× Load/empty"},
		"Load/policies=100/none-apply", "Load/empty", "empty snapshot", 1.2)
}

// rssOf adds a target on a scenario's peak RSS (at most limit MiB).
func (r *report) rssOf(t target, s *scenarioResult, limit float64) {
	t.Reference, t.Ratio = "—", "—"
	var x float64
	if s != nil {
		x = mib(s.PeakRSS)
		t.Result = fmt.Sprintf("%.1f MiB%s", x, startPeakNote(s.StartPeakRSS, s.PeakSinceStart))
	}
	r.add(t, x, limit, false, s != nil && s.PeakRSS > 0)
}

// startPeakNote says what a peak under load leaves out: the start-up's
// own peak, or that the peak is over the process' life (its high-water
// mark could not be reset before the load).
func startPeakNote(startPeak int64, sinceStart bool) string {
	switch {
	case sinceStart:
		return "; over the process' life (VmHWM not reset before the load)"
	case startPeak > 0:
		return fmt.Sprintf("; start-up's peak %.1f MiB", mib(startPeak))
	}
	return ""
}

// benchRatio adds a target on the ratio of two micro-benchmarks' times
// (at most limit).
func (r *report) benchRatio(t target, name, ref, refLabel string, limit float64) {
	t.Reference, t.Ratio, t.Result = "—", "—", "missing"
	b, rb := findBench(r.Benchmarks, name), findBench(r.Benchmarks, ref)
	if b != nil {
		t.Result = fmt.Sprintf("%.1f µs/op", b.NsPerOp/1000)
	}
	if rb != nil {
		t.Reference = fmt.Sprintf("%s %.1f µs/op", refLabel, rb.NsPerOp/1000)
	}
	ok := b != nil && rb != nil && rb.NsPerOp > 0
	var x float64
	if ok {
		x = b.NsPerOp / rb.NsPerOp
		t.Ratio = ratio(b.NsPerOp, rb.NsPerOp)
	}
	r.add(t, x, limit, false, ok)
}

// throughputRatio adds a target on the ratio of two scenarios'
// throughputs (at least limit).
func (r *report) throughputRatio(t target, s, ref *scenarioResult, refLabel string, limit float64) {
	r.scenarioRatio(t, s, ref, refLabel, limit, true, func(m summary) float64 { return m.Throughput }, "%.0f reviews/s")
}

func (r *report) print(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	m := r.Machine
	p("# modwright performance: standalone server against the floor\n\n")
	p("Machine: %d CPUs (%s), %s %s, %s, load average before the run %s.\n", m.CPUs, m.Model, m.GoVersion, m.OS, r.Started, m.LoadAverage)
	st := r.Settings
	p("Each load scenario: %d run(s) of %s after a %s warm-up, fresh server process each run; the medians are shown. ", st.Runs, st.Duration, st.Warmup)
	p("Flat out: %d concurrent closed-loop workers; fixed rate: open loop, latency from each request's due time. ", st.Concurrency)
	p("Client: HTTPS, HTTP/2, one kept-alive connection, POST /dragnet-webhook?timeout=10s (as kube-apiserver). ")
	p("The load generator runs on the same %d CPUs as the server.\n\n", m.CPUs)

	p("## Targets\n\n")
	p("| measure | target | result | floor/reference | ratio | verdict |\n|---|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		p("| %s | %s | %s | %s | %s | %s |\n", t.Measure, t.Target, t.Result, t.Reference, t.Ratio, t.Verdict)
	}

	p("\n## Scenarios (median of runs)\n\n")
	p("| scenario | throughput (reviews/s) | p50 ms | p95 ms | p99 ms | max ms | send lag p99 ms | server CPU s / 1,000 reviews | generator CPU s / 1,000 | peak RSS MiB | start → ready ms | errors |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		if len(s.Runs) == 0 {
			p("| %s | failed: %s |%s\n", s.Title, strings.ReplaceAll(firstLine(s.Failed), "|", "/"), strings.Repeat(" |", 10))
			continue
		}
		md := s.Median
		lag, tput := "—", fmt.Sprintf("%.0f", md.Throughput)
		if s.Rate > 0 {
			lag = fmt.Sprintf("%.2f", md.SendLagP99)
			if md.Throughput < 0.95*s.Rate {
				tput += " (saturated)"
			}
		}
		p("| %s | %s | %.2f | %.2f | %.2f | %.2f | %s | %.3f | %.3f | %.1f | %.0f | %d |\n", s.Title, tput, md.P50, md.P95, md.P99, md.Max, lag,
			md.CPUPer1000, md.GenCPU1000, md.PeakRSS/(1<<20), md.Ready*1000, s.Errors)
	}
	p("\n\"0 rules\": an empty rule file (the server warns and serves no rules). ")
	p("\"Saturated\": the server could not sustain the fixed rate, so requests queued and latencies grew without bound while the run lasted. ")
	p("\"Namespaced objects only\" is the floor with the same objects as the quiet scenario (the Namespace object is left out of both). ")
	p("\"GOGC=100\" is for reference only (no target reads it): the same server with Go's default garbage collector target (GOGC=100, which overrides serve's --gc-percent 400): a smaller heap, more collections.\n")

	if s := r.Snapshot; s != nil {
		p("\n## 10,000 rules at start-up\n\n")
		p("| run | start → ready s | read s | compile s | index s | rules ready | peak RSS MiB |\n|---|---|---|---|---|---|---|\n")
		for i := range s.ReadySeconds {
			cell := func(xs []float64) string {
				if i < len(xs) {
					return fmt.Sprintf("%.3f", xs[i])
				}
				return "—"
			}
			rss := "—"
			if i < len(s.PeakRSS) {
				rss = fmt.Sprintf("%.1f", mib(s.PeakRSS[i]))
			}
			ready := "—"
			if i < len(s.RulesReady) {
				ready = fmt.Sprintf("%.0f", s.RulesReady[i])
			}
			p("| %d | %.3f | %s | %s | %s | %s | %s |\n", i+1, s.ReadySeconds[i], cell(s.Read), cell(s.Compile), cell(s.Index), ready, rss)
		}
		if s.Failed != "" {
			p("\nFailed: %s\n", firstLine(s.Failed))
		}
	}

	if s := r.Soak; s != nil {
		p("\n## Soak: %s reviews, 100 rules, flat out (%.0f reviews/s, %d errors)\n\n", count(float64(s.Reviews)), s.Throughput, s.Errors)
		p("| after reviews | VmRSS MiB | heap goal MiB | heap in use MiB | p99 ms of the tenth |\n|---|---|---|---|---|\n")
		for _, x := range s.Samples {
			p("| %s | %.1f | %.1f | %.1f | %.2f |\n", count(float64(x.After)), mib(x.RSS), x.HeapGoal/(1<<20), x.HeapInuse/(1<<20), x.P99)
		}
		p("\nCriterion: %s. ", soakCriterion)
		switch {
		case len(s.Samples) < 10:
			p("Not enough samples.\n")
		case s.Flat:
			p("Growth %.2f×: flat.\n", s.Growth)
		default:
			p("Growth %.2f×: NOT flat.\n", s.Growth)
		}
		if s.Failed != "" {
			p("\nFailed: %s\n", firstLine(s.Failed))
		}
	}

	p("\n## Go micro-benchmarks (median of %d; go test -p 1 ./internal/kinds/modrule ./internal/kinds/policy ./internal/webhook -bench '%s' -benchmem)\n\n", r.Settings.BenchCount, microBenchPattern)
	p("| package | benchmark | ns/op | B/op | allocs/op | runs |\n|---|---|---|---|---|---|\n")
	for _, b := range r.Benchmarks {
		p("| %s | %s | %.0f | %.0f | %.0f | %d |\n", strings.TrimPrefix(b.Package, "github.com/modwright/modwright/"), b.Name, b.NsPerOp, b.BytesPerOp, b.AllocsPerOp, b.Runs)
	}
	for _, name := range r.MissingBenchmarks {
		p("| | %s | missing ||||\n", name)
	}

	if len(r.Problems) > 0 {
		p("\n## Problems\n\n")
		for _, pr := range r.Problems {
			p("- %s\n", strings.ReplaceAll(strings.TrimRight(pr, "\n"), "\n", "\n  "))
		}
	}
}
