package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// microBenchPackages are the packages whose benchmarks microBenchPattern
// selects.
var microBenchPackages = []string{"./internal/kinds/modrule", "./internal/kinds/policy", "./internal/webhook"}

// runMicroBenchmarks runs the engine and webhook benchmarks: each
// package's test binary built once, then -bench-count passes of every
// benchmark once (-test.count 1), so that a slow spell of the machine
// falls on every benchmark of a ratio rather than on the three runs of
// one. A failing build or run returns its error with the benchmarks
// produced.
func runMicroBenchmarks(ctx context.Context, o *options, root, logPath string) ([]*microBench, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	dir, err := os.MkdirTemp("", "modwright-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bins := make([]string, len(microBenchPackages))
	for i, pkg := range microBenchPackages {
		bins[i] = filepath.Join(dir, strconv.Itoa(i)+".test")
		args := []string{"test", "-c", "-o", bins[i], pkg}
		progress("micro-benchmarks: %s %s", o.goCmd, strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, o.goCmd, args...)
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go test -c %s: %v (output in %s):\n%s", pkg, err, logPath, tail(logPath, 15))
		}
	}
	var out bytes.Buffer
	for pass := 1; pass <= o.benchCount; pass++ {
		for i, pkg := range microBenchPackages {
			// One package at a time: the engine's benchmarks must not
			// share the 2 CPUs with the webhook's.
			args := []string{"-test.run", "^$", "-test.bench", microBenchPattern, "-test.benchmem", "-test.count", "1", "-test.benchtime", o.benchTime}
			progress("micro-benchmarks, pass %d/%d: %s %s", pass, o.benchCount, pkg, strings.Join(args, " "))
			cmd := exec.CommandContext(ctx, bins[i], args...)
			cmd.Dir = filepath.Join(root, pkg) // as go test runs it: testdata is relative
			cmd.Stdout, cmd.Stderr = io.MultiWriter(logf, &out), logf
			if err := cmd.Run(); err != nil {
				bs, _ := parseBenchOutput(&out)
				return bs, fmt.Errorf("%s benchmarks, pass %d: %v (output in %s):\n%s", pkg, pass, err, logPath, tail(logPath, 15))
			}
		}
	}
	return parseBenchOutput(&out)
}
