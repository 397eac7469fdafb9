package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/modwright/modwright/test/load"
)

// microBench is one Go benchmark's results over -count runs.
type microBench struct {
	Package string `json:"package"`
	// Name without the "Benchmark" prefix and the -GOMAXPROCS suffix,
	// for example "Evaluate/rules=10/matching=10".
	Name string `json:"name"`
	// Runs is how many result lines were seen; the other fields are the
	// medians over them.
	Runs        int     `json:"runs"`
	NsPerOp     float64 `json:"ns_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	// Lines are the raw result lines.
	Lines []string `json:"lines"`

	ns, bytes, allocs []float64
}

// Benchmarks the targets and the report need; each is reported as missing
// when `go test` did not produce it.
func expectedBenchmarks() []string {
	return []string{
		"Evaluate/rules=10/matching=10",
		"DecodeEncode",
		"Compile",
		"Snapshot10k",
		"Handler/rules=100/matching=10",
		"PSS/policies=16/compliant",
		"PSS/policies=1/compliant",
		"Mutations/policies=1/mutations=10",
		"Load/empty",
		"Load/policies=100/none-apply",
		"Load/modrules=10/matching=10",
		"Load/policies=100/matching=10",
	}
}

// parseBenchOutput reads `go test -bench -benchmem` output: "pkg:" lines
// name the package of the result lines that follow.
func parseBenchOutput(r io.Reader) ([]*microBench, error) {
	benchLine := regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+(\d+)\s+([\d.e+]+) ns/op(.*)$`)
	var (
		out   []*microBench
		byKey = map[string]*microBench{}
		pkg   string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		key := pkg + " " + m[1]
		b := byKey[key]
		if b == nil {
			b = &microBench{Package: pkg, Name: m[1]}
			byKey[key] = b
			out = append(out, b)
		}
		b.Lines = append(b.Lines, line)
		b.ns = append(b.ns, ns)
		b.bytes = append(b.bytes, metric(m[4], "B/op"))
		b.allocs = append(b.allocs, metric(m[4], "allocs/op"))
	}
	for _, b := range out {
		b.Runs = len(b.ns)
		b.NsPerOp, b.BytesPerOp, b.AllocsPerOp = load.Median(b.ns), load.Median(b.bytes), load.Median(b.allocs)
	}
	return out, sc.Err()
}

// metric finds "<value> <unit>" among a result line's extra metrics.
func metric(rest, unit string) float64 {
	f := strings.Fields(rest)
	for i := 1; i < len(f); i++ {
		if f[i] == unit {
			v, err := strconv.ParseFloat(f[i-1], 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}

func findBench(bs []*microBench, name string) *microBench {
	for _, b := range bs {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// microBenchPattern selects the micro-benchmarks: the engine with ModRules
// (internal/kinds/modrule), with Policies (internal/kinds/policy: PSS,
// Mutations, Load) and the webhook's.
const microBenchPattern = "Evaluate|Snapshot10k|Compile|DecodeEncode|Handler|PSS|Mutations|Load"

// runMicroBenchmarks runs the engine and webhook benchmarks. A failing
// `go test` returns its error with the benchmarks it did produce.
func runMicroBenchmarks(ctx context.Context, o *options, root, logPath string) ([]*microBench, error) {
	// -p 1: go test runs the packages' test binaries in parallel
	// otherwise, and the engine's benchmarks would share the 2 CPUs with
	// the webhook's.
	args := []string{"test", "-p", "1", "./internal/kinds/modrule", "./internal/kinds/policy", "./internal/webhook", "-run", "^$",
		"-bench", microBenchPattern, "-benchmem",
		"-count", strconv.Itoa(o.benchCount), "-benchtime", o.benchTime}
	progress("micro-benchmarks: %s %s", o.goCmd, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, o.goCmd, args...)
	cmd.Dir = root
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(logf, pw)
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	parsed := make(chan []*microBench, 1)
	go func() {
		bs, _ := parseBenchOutput(pr)
		_, _ = io.Copy(io.Discard, pr)
		parsed <- bs
	}()
	runErr := cmd.Wait()
	pw.Close()
	bs := <-parsed
	if runErr != nil {
		return bs, fmt.Errorf("go test -bench: %v (output in %s):\n%s", runErr, logPath, tail(logPath, 15))
	}
	return bs, nil
}
