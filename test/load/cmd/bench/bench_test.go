package main

import (
	"strings"
	"testing"

	"github.com/modwright/modwright/test/load"
)

func TestParseBenchOutput(t *testing.T) {
	const out = `goos: linux
goarch: amd64
pkg: github.com/modwright/modwright/internal/engine
cpu: Intel(R) Xeon(R) Processor
BenchmarkEvaluate/rules=10/matching=10-2         	   10000	    112000 ns/op	   30000 B/op	     273 allocs/op
BenchmarkEvaluate/rules=10/matching=10-2         	   10000	    114000 ns/op	   30100 B/op	     273 allocs/op
BenchmarkEvaluate/rules=10/matching=10-2         	   10000	    130000 ns/op	   30200 B/op	     275 allocs/op
BenchmarkEvaluate/rules=1000/none-apply-2        	 4000000	       290.5 ns/op	      64 B/op	       2 allocs/op
PASS
ok  	github.com/modwright/modwright/internal/engine	12.3s
pkg: github.com/modwright/modwright/internal/webhook
BenchmarkDecodeEncode-2   	     200	    118890 ns/op	  34.32 MB/s	   19457 B/op	     336 allocs/op
BenchmarkSnapshot10k     	     200	   6.1e+06 ns/op
--- FAIL: BenchmarkHandler/rules=0
`
	bs, err := parseBenchOutput(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 4 {
		t.Fatalf("%d benchmarks, want 4", len(bs))
	}
	ev := findBench(bs, "Evaluate/rules=10/matching=10")
	if ev == nil || ev.Runs != 3 || ev.NsPerOp != 114000 || ev.BytesPerOp != 30100 || ev.AllocsPerOp != 273 || !strings.HasSuffix(ev.Package, "/engine") {
		t.Errorf("Evaluate: %+v", ev)
	}
	if b := findBench(bs, "Evaluate/rules=1000/none-apply"); b == nil || b.NsPerOp != 290.5 || b.AllocsPerOp != 2 {
		t.Errorf("none-apply: %+v", b)
	}
	if de := findBench(bs, "DecodeEncode"); de == nil || de.NsPerOp != 118890 || de.BytesPerOp != 19457 || de.AllocsPerOp != 336 || !strings.HasSuffix(de.Package, "/webhook") {
		t.Errorf("DecodeEncode: %+v", de)
	}
	if s := findBench(bs, "Snapshot10k"); s == nil || s.NsPerOp != 6.1e6 || s.BytesPerOp != 0 {
		t.Errorf("Snapshot10k: %+v", s)
	}
	if findBench(bs, "Handler/rules=0") != nil {
		t.Error("a failed benchmark was parsed")
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		result, limit float64
		atLeast       bool
		want          string
		met           bool
	}{
		{0.6, 0.5, true, "met", true},
		{0.4, 0.5, true, "MISSED by 20%", false},
		{1.5, 2, false, "met", true},
		{2, 2, false, "met", true},
		{2.5, 2, false, "MISSED by 25%", false},
	} {
		got, met := verdict(tc.result, tc.limit, tc.atLeast)
		if got != tc.want || met != tc.met {
			t.Errorf("verdict(%v, %v, %v) = %q, %v; want %q, %v", tc.result, tc.limit, tc.atLeast, got, met, tc.want, tc.met)
		}
	}
	for n, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1000000: "1,000,000", 50000: "50,000"} {
		if got := count(n); got != want {
			t.Errorf("count(%v) = %q, want %q", n, got, want)
		}
	}
}

// TestStartPeakNote: the peak under load says what it leaves out.
func TestStartPeakNote(t *testing.T) {
	tests := []struct {
		start      int64
		sinceStart bool
		want       string
	}{
		{70 << 20, false, "; start-up's peak 70.0 MiB"},
		{70 << 20, true, "; over the process' life (VmHWM not reset before the load)"},
		{0, false, ""},
	}
	for _, tt := range tests {
		if got := startPeakNote(tt.start, tt.sinceStart); got != tt.want {
			t.Errorf("startPeakNote(%d, %v) = %q, want %q", tt.start, tt.sinceStart, got, tt.want)
		}
	}
}

// TestIssue30Targets: the serving targets are issue 30's, judged on the
// scenarios and benchmarks of one run.
func TestIssue30Targets(t *testing.T) {
	sc := func(id string, throughput, p99 float64, rssMiB int64) *scenarioResult {
		s := &scenarioResult{Runs: []*load.Result{{}}, Median: summary{Throughput: throughput, P99: p99}, PeakRSS: rssMiB << 20}
		s.ID = id
		return s
	}
	r := &report{Settings: settings{Rate: 1000}, Scenarios: []*scenarioResult{
		sc("floor-flat", 10000, 3, 15), sc("floor-rate", 1000, 1, 15),
		sc("mw100-flat", 8100, 4, 90), sc("mw100-rate", 1000, 1.3, 90),
		sc("mw1000-flat", 7000, 5, 70), sc("mw1000-rate", 1000, 1.5, 60),
		sc("pol100-flat", 6000, 5, 100), sc("pol100-rate", 1000, 2.0, 100),
		sc("pol1000-quiet", 9000, 3, 130),
	}, Benchmarks: []*microBench{
		{Name: "Handler/rules=100/matching=10", BytesPerOp: 35 * 1024},
		{Name: "PSS/policies=16/compliant", NsPerOp: 39000},
		{Name: "PSS/policies=1/compliant", NsPerOp: 47000},
	}}
	r.computeTargets()
	want := map[string]string{
		"Throughput, 100 rules (10 matching each object), flat out":                           "met",           // 0.81x
		"p99 latency at 1,000 reviews/s, 100 rules (10 matching)":                             "MISSED by 8%",  // 1.3x
		"Allocated per review, 10 matching ModRules (BenchmarkHandler/rules=100/matching=10)": "MISSED by 75%", // 35 KB
		"Peak RSS (VmHWM), 1,000 rules under load":                                            "MISSED by 9%",  // 70 MiB
		"Engine cost, 16 CEL validations (BenchmarkPSS/policies=16/compliant)":                "met",
		"Engine cost, 16 CEL validations (BenchmarkPSS/policies=1/compliant)":                 "MISSED by 18%",
		"p99 latency at 1,000 reviews/s, 100 Policies vs 100 ModRules (10 matching)":          "MISSED by 3%", // 2.0 / 1.3
		"Peak RSS (VmHWM), 1,000 Policies (none can apply) under load":                        "MISSED by 2%", // 130 MiB
	}
	got := map[string]string{}
	for _, tg := range r.Targets {
		got[tg.Measure] = tg.Verdict
	}
	for m, v := range want {
		if got[m] != v {
			t.Errorf("%s: %q, want %q", m, got[m], v)
		}
	}
}
