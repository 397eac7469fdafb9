package load

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 50 * time.Millisecond}, {95, 95 * time.Millisecond}, {99, 99 * time.Millisecond},
		{99.9, 100 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.001, time.Millisecond},
	} {
		if got := Percentile(s, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := Percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
	one := []time.Duration{7}
	if Percentile(one, 50) != 7 || Percentile(one, 99) != 7 {
		t.Error("one sample")
	}
	// Summarize sorts.
	l := Summarize([]time.Duration{4 * time.Millisecond, time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond})
	if l.P50 != 2 || l.P95 != 4 || l.P99 != 4 || l.Max != 4 || l.Mean != 2.5 {
		t.Errorf("Summarize = %+v", l)
	}
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("Median odd = %v", m)
	}
	if m := Median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("Median even = %v", m)
	}
}

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and parentheses, as the kernel writes it.
	const stat = "12345 (mod (wright) x) S 1 12345 12345 0 -1 4194560 2615 0 0 0 1234 567 0 0 20 0 9 0 4215689 1262641152 6543 18446744073709551615 1 1 0 0 0 0 0 0 2143420159 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	u, s, err := ParseProcStat(stat)
	if err != nil || u != 1234 || s != 567 {
		t.Errorf("ParseProcStat = %d, %d, %v; want 1234, 567", u, s, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 11"} {
		if _, _, err := ParseProcStat(bad); err == nil {
			t.Errorf("ParseProcStat(%q) accepted", bad)
		}
	}
}

func TestParseProcStatus(t *testing.T) {
	const status = "Name:\tmodwright\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t 1290388 kB\nVmSize:\t 1233044 kB\nVmHWM:\t   48212 kB\nVmRSS:\t   31480 kB\nRssAnon:\t   20000 kB\nThreads:\t9\n"
	m, err := ParseProcStatus(status)
	if err != nil || m.PeakRSS != 48212*1024 || m.RSS != 31480*1024 {
		t.Errorf("ParseProcStatus = %+v, %v", m, err)
	}
	if _, err := ParseProcStatus("Name:\tx\nVmRSS:\t 1 kB\n"); err == nil {
		t.Error("missing VmHWM accepted")
	}
	if _, err := ParseProcStatus("VmHWM:\t 1 MB\nVmRSS:\t 1 kB\n"); err == nil {
		t.Error("unknown unit accepted")
	}
}

// TestReadProcess reads this test's own process.
func TestReadProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	p, err := ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.RSS <= 0 || p.PeakRSS < p.RSS || p.CPU < 0 {
		t.Errorf("ReadProcess = %+v", p)
	}
}

// TestResetPeakRSS: after a reset, this process' VmHWM is its current
// resident set, not the peak of 64 MiB touched and given back before.
func TestResetPeakRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("no /proc/PID/clear_refs")
	}
	big := make([]byte, 64<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	peak, err := ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(big)
	big = nil
	debug.FreeOSMemory()
	if err := ResetPeakRSS(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	after, err := ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.PeakRSS > peak.PeakRSS-32<<20 {
		t.Errorf("VmHWM %d MiB after the reset, %d MiB before (64 MiB given back): not reset", after.PeakRSS>>20, peak.PeakRSS>>20)
	}
}

func TestParseMetrics(t *testing.T) {
	const text = `# HELP modwright_rules ModRules in the serving snapshot, by state (ready, broken).
# TYPE modwright_rules gauge
modwright_rules{state="broken"} 0
modwright_rules{state="ready"} 10000
# TYPE modwright_snapshot_build_seconds gauge
modwright_snapshot_build_seconds{phase="compile"} 0.412
modwright_snapshot_build_seconds{phase="index"} 0.0061
modwright_snapshot_build_seconds{phase="read"} 1.5e-01
go_memstats_heap_inuse_bytes 1.2345678e+07
modwright_admission_reviews_total{operation="CREATE",outcome="patched",webhook="dragnet"} 42 1700000000000
modwright_rule_broken{kind="ModRule",rule="a \"quoted\" \\ rule,{x}"} 1
modwright_admission_duration_seconds_bucket{webhook="dragnet",le="+Inf"} 42

odd_spacing { a = "1" , b="2" } NaN
`
	m, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"modwright_rules", []string{"state", "ready"}, 10000},
		{"modwright_rules", []string{"state", "broken"}, 0},
		{"modwright_snapshot_build_seconds", []string{"phase", "read"}, 0.15},
		{"modwright_snapshot_build_seconds", []string{"phase", "compile"}, 0.412},
		{"modwright_snapshot_build_seconds", []string{"phase", "index"}, 0.0061},
		{"go_memstats_heap_inuse_bytes", nil, 12345678},
		{"modwright_admission_reviews_total", []string{"webhook", "dragnet", "outcome", "patched", "operation", "CREATE"}, 42},
		{"modwright_rule_broken", []string{"kind", "ModRule", "rule", `a "quoted" \ rule,{x}`}, 1},
		{"modwright_admission_duration_seconds_bucket", []string{"le", "+Inf", "webhook", "dragnet"}, 42},
	} {
		got, ok := m.Get(tc.name, tc.labels...)
		if !ok || got != tc.want {
			t.Errorf("%s%v = %v, %v; want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if v, ok := m.Get("odd_spacing", "b", "2", "a", "1"); !ok || !math.IsNaN(v) {
		t.Errorf("odd_spacing = %v, %v; want NaN", v, ok)
	}
	if _, ok := m.Get("modwright_rules"); ok {
		t.Error("a labelled series found without its labels")
	}
	if _, ok := m.Get("modwright_rules", "state"); ok {
		t.Error("odd label list accepted")
	}
	for _, bad := range []string{"x{a=\"1\" 2\n", "x{a=1} 2\n", "x 1 2 3\n", "x abc\n", "{a=\"1\"} 2\n"} {
		if _, err := ParseMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseMetrics(%q) accepted", bad)
		}
	}
}
