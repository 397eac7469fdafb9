package main

import (
	"strings"
	"testing"
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
