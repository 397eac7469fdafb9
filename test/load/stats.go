package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of sorted samples
// by the nearest-rank method: the smallest sample such that at least p% of
// the samples are less than or equal to it. It returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

// Latency summarizes latency samples, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// Summarize sorts samples in place and summarizes them.
func Summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Latency{
		P50:  ms(Percentile(samples, 50)),
		P95:  ms(Percentile(samples, 95)),
		P99:  ms(Percentile(samples, 99)),
		Max:  ms(samples[len(samples)-1]),
		Mean: ms(sum / time.Duration(len(samples))),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ClockTicks is the kernel's USER_HZ (CLK_TCK), the unit of the CPU times
// in /proc/PID/stat: 100 on every Linux architecture Go supports.
const ClockTicks = 100

// ParseProcStat reads utime and stime (in clock ticks) from the content of
// /proc/PID/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func ParseProcStat(s string) (utime, stime uint64, err error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, errors.New("proc stat: no command name")
	}
	// After ")": field 3 (state) is f[0]; utime is field 14, stime 15.
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("proc stat: %d fields after the command name, want at least 13", len(f))
	}
	if utime, err = strconv.ParseUint(f[11], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("proc stat: utime: %w", err)
	}
	if stime, err = strconv.ParseUint(f[12], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("proc stat: stime: %w", err)
	}
	return utime, stime, nil
}

// Memory is a process' resident memory, in bytes.
type Memory struct {
	// PeakRSS is VmHWM, the resident set's high-water mark over the
	// process' life; RSS is VmRSS, the current resident set.
	PeakRSS, RSS int64
}

// ParseProcStatus reads VmHWM and VmRSS from the content of
// /proc/PID/status.
func ParseProcStatus(s string) (Memory, error) {
	var m Memory
	found := 0
	for line := range strings.Lines(s) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "VmHWM" && name != "VmRSS") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return Memory{}, fmt.Errorf("proc status: %s: unexpected %q", name, strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("proc status: %s: %w", name, err)
		}
		if name == "VmHWM" {
			m.PeakRSS = kb * 1024
		} else {
			m.RSS = kb * 1024
		}
		found++
	}
	if found != 2 {
		return Memory{}, errors.New("proc status: VmHWM or VmRSS missing")
	}
	return m, nil
}

// ResetPeakRSS sets the process pid's VmHWM back to its current resident
// set (Linux 4.0's "5" to /proc/PID/clear_refs), so that the next reading
// of VmHWM is the peak since now: the load's, not the start-up's.
func ResetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// ProcessSample is what /proc says about a process at one moment.
type ProcessSample struct {
	// CPU is user plus system time.
	CPU time.Duration
	Memory
}

// ReadProcess samples the process pid from /proc.
func ReadProcess(pid int) (ProcessSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcessSample{}, err
	}
	u, s, err := ParseProcStat(string(stat))
	if err != nil {
		return ProcessSample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcessSample{}, err
	}
	mem, err := ParseProcStatus(string(status))
	if err != nil {
		return ProcessSample{}, err
	}
	return ProcessSample{CPU: time.Duration(u+s) * (time.Second / ClockTicks), Memory: mem}, nil
}

// Metrics are the samples of a Prometheus text exposition, keyed by
// series: the name, then the labels sorted by name in braces, as in
// `modwright_rules{state="ready"}`; or the bare name for a series without
// labels.
type Metrics map[string]float64

// Get returns the sample of the series name with the given labels (name,
// value pairs, in any order).
func (m Metrics) Get(name string, labels ...string) (float64, bool) {
	if len(labels)%2 != 0 {
		return 0, false
	}
	var ls [][2]string
	for i := 0; i < len(labels); i += 2 {
		ls = append(ls, [2]string{labels[i], labels[i+1]})
	}
	v, ok := m[seriesKey(name, ls)]
	return v, ok
}

func seriesKey(name string, labels [][2]string) string {
	if len(labels) == 0 {
		return name
	}
	slices.SortFunc(labels, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l[0])
		b.WriteString(`="`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l[1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// ParseMetrics reads the Prometheus text exposition format (version 0.0.4):
// one sample per line, `name{label="value",...} value [timestamp]`;
// comments and blank lines are skipped.
func ParseMetrics(r io.Reader) (Metrics, error) {
	m := Metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, rest, err := parseSeries(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		f := strings.Fields(rest)
		if len(f) < 1 || len(f) > 2 {
			return nil, fmt.Errorf("metrics line %d: want a value and an optional timestamp after the series", n)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		m[key] = v
	}
	return m, sc.Err()
}

// parseSeries splits a sample line into its series key and the rest.
func parseSeries(line string) (key, rest string, err error) {
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return "", "", errors.New("no metric name")
	}
	name := line[:end]
	i := end
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i == len(line) || line[i] != '{' {
		return name, line[end:], nil
	}
	var labels [][2]string
	i++
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == ',') {
			i++
		}
		if i < len(line) && line[i] == '}' {
			i++
			break
		}
		eq := strings.IndexByte(line[i:], '=')
		if eq <= 0 {
			return "", "", errors.New("malformed label")
		}
		lname := strings.TrimSpace(line[i : i+eq])
		i += eq + 1
		for i < len(line) && line[i] == ' ' {
			i++
		}
		if lname == "" || i >= len(line) || line[i] != '"' {
			return "", "", errors.New("malformed label")
		}
		i++
		var val strings.Builder
		for {
			if i >= len(line) {
				return "", "", errors.New("unterminated label value")
			}
			c := line[i]
			if c == '"' {
				i++
				break
			}
			if c == '\\' && i+1 < len(line) {
				i++
				switch line[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(line[i])
				}
				i++
				continue
			}
			val.WriteByte(c)
			i++
		}
		labels = append(labels, [2]string{lname, val.String()})
	}
	return seriesKey(name, labels), line[i:], nil
}

// ScrapeMetrics fetches and parses baseURL + "/metrics".
func ScrapeMetrics(ctx context.Context, client *http.Client, baseURL string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	return ParseMetrics(resp.Body)
}
