// Command loadgen sends AdmissionReviews to an admission webhook as
// kube-apiserver does (HTTPS, HTTP/2, keep-alive, POST with
// ?timeout=10s), at a fixed rate or flat out, and reports throughput,
// latency percentiles and, given the server's PID, its CPU time per 1,000
// reviews and its memory.
//
//	loadgen -url https://127.0.0.1:9443/dragnet-webhook?timeout=10s -ca DIR/ca.crt \
//	        [-rate 1000 | -concurrency 16] [-duration 10s | -requests N] [-warmup 1s] \
//	        [-namespace quiet] [-mix deployment=1,pod=1,service=1,configmap=1,namespace=1] \
//	        [-objects testdata/bench/objects] [-server-pid PID] [-json]
//
// Every response is checked: HTTP 200 over HTTP/2, an AdmissionReview with
// the request's uid, allowed, without warnings. Errors are counted by class;
// any error makes the exit status 1.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/modwright/modwright/test/load"
)

func main() {
	var (
		url         = flag.String("url", "https://127.0.0.1:9443/dragnet-webhook?timeout=10s", "webhook URL")
		ca          = flag.String("ca", "", "CA file (PEM) of the server's certificate (required)")
		rate        = flag.Float64("rate", 0, "fixed rate in reviews/s (open loop); 0 runs flat out")
		concurrency = flag.Int("concurrency", 16, "closed-loop workers when flat out")
		duration    = flag.Duration("duration", 10*time.Second, "measurement duration (0 with -requests: no time limit)")
		requests    = flag.Int("requests", 0, "stop after this many reviews instead (0: use -duration)")
		warmup      = flag.Duration("warmup", time.Second, "warm-up before measuring")
		namespace   = flag.String("namespace", "", "send the namespaced objects into this namespace")
		mix         = flag.String("mix", "", "object weights: deployment=1,pod=1,service=1,configmap=1,namespace=1 (default: all 1)")
		objects     = flag.String("objects", "testdata/bench/objects", "directory of the mix's objects")
		pid         = flag.Int("server-pid", 0, "server process to report CPU and memory of (from /proc)")
		asJSON      = flag.Bool("json", false, "print the result as JSON")
		cpuProfile  = flag.String("cpuprofile", "", "write the generator's own CPU profile to this file")
	)
	flag.Parse()
	if *ca == "" {
		fmt.Fprintln(os.Stderr, "loadgen: -ca is required")
		os.Exit(2)
	}
	if *requests > 0 && !isSet("duration") {
		*duration = 0
	}
	roots, err := load.LoadCA(*ca)
	if err != nil {
		fail(err)
	}
	weights, err := load.ParseMix(*mix)
	if err != nil {
		fail(err)
	}
	items, err := load.LoadMix(*objects, *namespace, weights)
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	client := load.NewClient(roots)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(2)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	res, err := load.Run(ctx, load.Config{
		URL: *url, Client: client, Items: items,
		Rate: *rate, Concurrency: *concurrency,
		Duration: *duration, Requests: *requests, Warmup: *warmup,
		ServerPID: *pid,
	})
	if err != nil {
		fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		printHuman(res)
	}
	if res.Errors > 0 {
		os.Exit(1)
	}
}

func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}

func printHuman(r *load.Result) {
	mode := fmt.Sprintf("flat out, %d workers", r.Concurrency)
	if r.Mode == "rate" {
		mode = fmt.Sprintf("fixed rate %.0f reviews/s (latency from the due time)", r.Rate)
	}
	fmt.Printf("mode:        %s\n", mode)
	fmt.Printf("requests:    %d in %.2fs (%d patched), %d errors\n", r.Requests, r.Duration, r.Patched, r.Errors)
	fmt.Printf("throughput:  %.0f reviews/s\n", r.Throughput)
	l := r.Latency
	fmt.Printf("latency:     p50 %.3f ms  p95 %.3f ms  p99 %.3f ms  max %.3f ms  mean %.3f ms\n", l.P50, l.P95, l.P99, l.Max, l.Mean)
	if r.SendLag != nil {
		fmt.Printf("send lag:    p99 %.3f ms  max %.3f ms (the generator's own lateness)\n", r.SendLag.P99, r.SendLag.Max)
	}
	if s := r.Server; s != nil {
		since := "under load"
		if s.PeakSinceStart {
			since = "since the start"
		}
		fmt.Printf("server:      %.3f CPU s per 1,000 reviews (%.2f s), peak RSS %.1f MiB %s (%.1f MiB before), RSS %.1f MiB\n",
			s.CPUPer1000, s.CPUSeconds, float64(s.PeakRSS)/(1<<20), since, float64(s.StartPeakRSS)/(1<<20), float64(s.RSS)/(1<<20))
	}
	fmt.Printf("generator:   %.3f CPU s per 1,000 reviews (this process)\n", r.GeneratorCPUPer1000)
	if r.Errors > 0 {
		fmt.Printf("errors:\n%s", load.FormatErrors(r))
	}
}
