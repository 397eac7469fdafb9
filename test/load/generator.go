package load

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// WebhookPath is where the dragnet webhook (and the floor server) listen.
const WebhookPath = "/dragnet-webhook"

// Item is one review of the mix with its weight.
type Item struct {
	Review *Review
	Weight int
}

// ParseMix parses "deployment=1,pod=2,..." into weights by mix name (see
// Mix). Names not given get weight 0; an empty string means every object
// with weight 1.
func ParseMix(s string) (map[string]int, error) {
	w := map[string]int{}
	if strings.TrimSpace(s) == "" {
		for _, o := range Mix() {
			w[o.Name] = 1
		}
		return w, nil
	}
	known := map[string]bool{}
	for _, o := range Mix() {
		known[o.Name] = true
	}
	for part := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			val = "1"
		}
		if !known[name] {
			return nil, fmt.Errorf("mix: unknown object %q (known: deployment, pod, service, configmap, namespace)", name)
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("mix: %s: weight %q is not a non-negative integer", name, val)
		}
		w[name] = n
	}
	return w, nil
}

// LoadMix reads the objects of Mix from dir and builds their reviews, in
// mix order, skipping objects of weight 0 (weights nil: all 1). namespace,
// when not empty, moves the namespaced objects there (see NewReview).
func LoadMix(dir, namespace string, weights map[string]int) ([]Item, error) {
	var items []Item
	for _, o := range Mix() {
		w := 1
		if weights != nil {
			w = weights[o.Name]
		}
		if w <= 0 {
			continue
		}
		obj, err := os.ReadFile(filepath.Join(dir, o.File))
		if err != nil {
			return nil, err
		}
		rv, err := NewReview(obj, namespace)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
		items = append(items, Item{Review: rv, Weight: w})
	}
	if len(items) == 0 {
		return nil, errors.New("mix: every weight is 0")
	}
	return items, nil
}

// schedule interleaves the items by weight (smooth weighted round robin):
// request i sends items[s[i%len(s)]].
func schedule(items []Item) []int {
	total := 0
	for _, it := range items {
		total += it.Weight
	}
	cur := make([]int, len(items))
	s := make([]int, 0, total)
	for range total {
		best := -1
		for j, it := range items {
			cur[j] += it.Weight
			if best < 0 || cur[j] > cur[best] {
				best = j
			}
		}
		cur[best] -= total
		s = append(s, best)
	}
	return s
}

// LoadCA reads a PEM CA bundle.
func LoadCA(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", file)
	}
	return pool, nil
}

// NewClient returns an HTTPS client like kube-apiserver's webhook client:
// HTTP/2 over one kept-alive TLS connection, trusting roots.
func NewClient(roots *x509.CertPool) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			ForceAttemptHTTP2:   true,
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		Timeout: 30 * time.Second,
	}
}

// Config describes one load run.
type Config struct {
	// URL of the webhook, for example
	// https://127.0.0.1:9443/dragnet-webhook?timeout=10s.
	URL    string
	Client *http.Client
	// Items are the reviews sent, rotated by weight.
	Items []Item
	// Rate is the fixed request rate (reviews/s) of an open-loop stream:
	// request i is due at start + i/Rate and is sent then, whether or not
	// earlier ones have returned; its latency counts from its due time.
	// 0 runs flat out: Concurrency closed-loop workers.
	Rate        float64
	Concurrency int
	// The measurement stops after Duration, or after Requests requests
	// when Requests > 0 (the first reached when both are set).
	Duration time.Duration
	Requests int
	// Warmup runs the same load for this long before measuring.
	Warmup time.Duration
	// ServerPID, when not 0, is the server process whose CPU time and
	// memory are reported (from /proc).
	ServerPID int
	// MaxInFlight bounds the requests outstanding at a fixed rate
	// (default 10,000); requests due while it is reached are counted as
	// errors of class "overload" and not sent.
	MaxInFlight int
}

// Result is what one measured run produced.
type Result struct {
	Mode        string  `json:"mode"` // "flat-out" or "rate"
	Rate        float64 `json:"rate,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	// Requests counts the requests answered or failed while measuring.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// ErrorClasses counts errors by class (transport, http-503,
	// not-http2, decode, uid-mismatch, denied, warning, overload, ...);
	// ErrorSamples holds the first message of each class.
	ErrorClasses map[string]int64  `json:"error_classes,omitempty"`
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	// Patched counts responses that carried a patch.
	Patched  int64   `json:"patched"`
	Duration float64 `json:"duration_s"`
	// Throughput is Requests / Duration (reviews/s).
	Throughput float64 `json:"throughput"`
	// Latency is measured from the due time at a fixed rate (so stalls
	// are not hidden), from the send otherwise; SendLag is how late the
	// generator sent the requests at a fixed rate (its own jitter).
	Latency Latency  `json:"latency"`
	SendLag *Latency `json:"send_lag,omitempty"`
	// Server is reported when Config.ServerPID is set.
	Server *ServerUsage `json:"server,omitempty"`
	// GeneratorCPUPer1000 is this process' own CPU seconds per 1,000
	// requests (it shares the machine with the server).
	GeneratorCPUPer1000 float64 `json:"generator_cpu_s_per_1000"`
}

// ServerUsage is what the server paid during the measurement.
type ServerUsage struct {
	CPUSeconds float64 `json:"cpu_s"`
	// CPUPer1000 is CPU seconds per 1,000 requests.
	CPUPer1000 float64 `json:"cpu_s_per_1000"`
	// PeakRSS is the resident set's high-water mark (VmHWM) under the
	// load: from the first review (warm-up included) to the end; RSS is
	// VmRSS at the end. StartPeakRSS is the high-water mark before the
	// first review (the server's start: its packages, its rules). When the
	// high-water mark could not be reset (PeakSinceStart), PeakRSS is over
	// the process' whole life.
	PeakRSS        int64 `json:"peak_rss_bytes"`
	RSS            int64 `json:"rss_bytes"`
	StartPeakRSS   int64 `json:"start_peak_rss_bytes"`
	PeakSinceStart bool  `json:"peak_since_start,omitempty"`
}

// run is the state shared by the phases of one Run.
type run struct {
	cfg    *Config
	sched  []int
	prefix string // first 24 characters of every uid
	seq    atomic.Uint64
	url    string
}

// Run checks that the server answers one review over HTTP/2, warms up, and
// measures. It returns an error when the configuration is invalid or the
// first review fails (not HTTP/2, invalid answer); errors during the
// measurement are counted in the Result instead.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.URL == "" || cfg.Client == nil || len(cfg.Items) == 0 {
		return nil, errors.New("load: URL, Client and Items are required")
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return nil, errors.New("load: a Duration or a number of Requests is required")
	}
	if cfg.Rate < 0 {
		return nil, errors.New("load: negative rate")
	}
	for _, it := range cfg.Items {
		if it.Review == nil || it.Weight <= 0 {
			return nil, errors.New("load: every item needs a review and a positive weight")
		}
	}
	r := newRun(cfg)
	var start ProcessSample
	peakSinceStart := false
	if cfg.ServerPID > 0 {
		var err error
		if start, err = ReadProcess(cfg.ServerPID); err != nil {
			return nil, fmt.Errorf("load: server process: %w", err)
		}
		peakSinceStart = ResetPeakRSS(cfg.ServerPID) != nil
	}

	// One review first, checked strictly: fail loudly on anything but a
	// valid HTTP/2 answer.
	if _, err := r.send(ctx, 0); err != nil {
		return nil, fmt.Errorf("load: first review: %w", err)
	}
	if cfg.Warmup > 0 {
		if _, err := r.phase(ctx, cfg.Warmup, 0); err != nil {
			return nil, err
		}
	}
	var before ProcessSample
	if cfg.ServerPID > 0 {
		var err error
		if before, err = ReadProcess(cfg.ServerPID); err != nil {
			return nil, fmt.Errorf("load: server process: %w", err)
		}
	}
	self0, selfErr := ReadProcess(os.Getpid())
	res, err := r.phase(ctx, cfg.Duration, cfg.Requests)
	if err != nil {
		return nil, err
	}
	if self1, err := ReadProcess(os.Getpid()); err == nil && selfErr == nil && res.Requests > 0 {
		res.GeneratorCPUPer1000 = (self1.CPU - self0.CPU).Seconds() * 1000 / float64(res.Requests)
	}
	if cfg.ServerPID > 0 {
		after, err := ReadProcess(cfg.ServerPID)
		if err != nil {
			return nil, fmt.Errorf("load: server process: %w", err)
		}
		u := &ServerUsage{CPUSeconds: (after.CPU - before.CPU).Seconds(), PeakRSS: after.PeakRSS, RSS: after.RSS,
			StartPeakRSS: start.PeakRSS, PeakSinceStart: peakSinceStart}
		if res.Requests > 0 {
			u.CPUPer1000 = u.CPUSeconds * 1000 / float64(res.Requests)
		}
		res.Server = u
	}
	return res, nil
}

// newRun prepares a run: defaults, the mix's schedule, a random uid
// prefix.
func newRun(cfg Config) *run {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 10000
	}
	var rnd [9]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand panics instead)
	h := hex.EncodeToString(rnd[:])
	return &run{cfg: &cfg, sched: schedule(cfg.Items), url: cfg.URL,
		prefix: h[0:8] + "-" + h[8:12] + "-4" + h[12:15] + "-8" + h[15:18] + "-"}
}

// uid returns the fixed-width uid of request n of this run.
func (r *run) uid(n uint64) string {
	b := make([]byte, 0, UIDLen)
	b = append(b, r.prefix...)
	h := strconv.AppendUint(nil, n&0xffffffffffff, 16)
	for range 12 - len(h) {
		b = append(b, '0')
	}
	return string(append(b, h...))
}

// classError is a failed review with its class.
type classError struct {
	class string
	msg   string
}

func (e *classError) Error() string { return e.class + ": " + e.msg }

func errClass(class, format string, args ...any) error {
	return &classError{class: class, msg: fmt.Sprintf(format, args...)}
}

// send sends request i and validates the answer; patched reports a patch.
func (r *run) send(ctx context.Context, i int) (patched bool, err error) {
	uid := r.uid(r.seq.Add(1))
	it := r.cfg.Items[r.sched[i%len(r.sched)]]
	body := it.Review.Body(uid)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return false, errClass("request", "%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, */*")
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, errClass("canceled", "%v", err)
		}
		return false, errClass("transport", "%v", err)
	}
	buf := responseBufs.Get().(*bytes.Buffer)
	defer responseBufs.Put(buf)
	buf.Reset()
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, 16<<20))
	resp.Body.Close()
	data := buf.Bytes()
	if err != nil {
		return false, errClass("transport", "reading the response: %v", err)
	}
	if resp.ProtoMajor != 2 {
		return false, errClass("not-http2", "the server answered over %s, not HTTP/2", resp.Proto)
	}
	if resp.StatusCode != http.StatusOK {
		return false, errClass("http-"+strconv.Itoa(resp.StatusCode), "%s %s: %.200s", it.Review.Kind, it.Review.Name, bytes.TrimSpace(data))
	}
	rv, err := decodeResponse(data)
	if err != nil {
		return false, errClass("decode", "%v: %.200s", err, data)
	}
	switch {
	case rv.Kind != "AdmissionReview" || rv.APIVersion != "admission.k8s.io/v1" || rv.Response == nil:
		return false, errClass("decode", "not an AdmissionReview v1 response: %.200s", data)
	case rv.Response.UID != uid:
		return false, errClass("uid-mismatch", "sent uid %s, got %q", uid, rv.Response.UID)
	case !rv.Response.Allowed:
		msg := ""
		if rv.Response.Status != nil {
			msg = fmt.Sprintf("code %d: %s", rv.Response.Status.Code, rv.Response.Status.Message)
		}
		return false, errClass("denied", "%s %s: %s", it.Review.Kind, it.Review.Name, msg)
	case len(rv.Response.Warnings) > 0:
		return false, errClass("warning", "%s %s: %s", it.Review.Kind, it.Review.Name, strings.Join(rv.Response.Warnings, "; "))
	}
	return rv.Response.Patched, nil
}

// responseBufs holds the buffers responses are read into.
var responseBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// tally accumulates one worker's (or the whole run's) outcomes.
type tally struct {
	samples []time.Duration
	lags    []time.Duration
	done    int64
	patched int64
	classes map[string]int64
	first   map[string]string
}

func (t *tally) record(lat time.Duration, patched bool, err error) {
	t.done++
	t.samples = append(t.samples, lat)
	if err != nil {
		t.fail(err)
		return
	}
	if patched {
		t.patched++
	}
}

func (t *tally) fail(err error) {
	class, msg := "other", err.Error()
	var ce *classError
	if errors.As(err, &ce) {
		class, msg = ce.class, ce.msg
	}
	if t.classes == nil {
		t.classes, t.first = map[string]int64{}, map[string]string{}
	}
	t.classes[class]++
	if _, ok := t.first[class]; !ok {
		t.first[class] = msg
	}
}

func (t *tally) merge(o *tally) {
	t.samples = append(t.samples, o.samples...)
	t.lags = append(t.lags, o.lags...)
	t.done += o.done
	t.patched += o.patched
	for c, n := range o.classes {
		if t.classes == nil {
			t.classes, t.first = map[string]int64{}, map[string]string{}
		}
		t.classes[c] += n
		if _, ok := t.first[c]; !ok {
			t.first[c] = o.first[c]
		}
	}
}

// phase runs the load for d (0: no limit) or n requests (0: no limit).
func (r *run) phase(ctx context.Context, d time.Duration, n int) (*Result, error) {
	var (
		t       tally
		elapsed time.Duration
	)
	if r.cfg.Rate > 0 {
		elapsed = r.fixedRate(ctx, d, n, &t)
	} else {
		elapsed = r.flatOut(ctx, d, n, &t)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &Result{
		Mode:         "flat-out",
		Concurrency:  r.cfg.Concurrency,
		Requests:     t.done,
		Patched:      t.patched,
		Duration:     elapsed.Seconds(),
		ErrorClasses: t.classes,
		ErrorSamples: t.first,
		Latency:      Summarize(t.samples),
	}
	for _, c := range t.classes {
		res.Errors += c
	}
	if r.cfg.Rate > 0 {
		res.Mode, res.Rate, res.Concurrency = "rate", r.cfg.Rate, 0
		lag := Summarize(t.lags)
		res.SendLag = &lag
	}
	if elapsed > 0 {
		res.Throughput = float64(t.done) / elapsed.Seconds()
	}
	return res, nil
}

// flatOut runs Concurrency closed-loop workers.
func (r *run) flatOut(ctx context.Context, d time.Duration, n int, total *tally) time.Duration {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
	)
	start := time.Now()
	deadline := start.Add(d)
	for range r.cfg.Concurrency {
		wg.Go(func() {
			var t tally
			if n > 0 {
				t.samples = make([]time.Duration, 0, n/r.cfg.Concurrency+1)
			}
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if n > 0 && i >= int64(n) {
					break
				}
				t0 := time.Now()
				if d > 0 && !t0.Before(deadline) {
					break
				}
				patched, err := r.send(ctx, int(i))
				t.record(time.Since(t0), patched, err)
			}
			mu.Lock()
			total.merge(&t)
			mu.Unlock()
		})
	}
	wg.Wait()
	return time.Since(start)
}

// fixedRate sends request i at start + i/Rate, each on its own goroutine,
// and measures its latency from that due time.
func (r *run) fixedRate(ctx context.Context, d time.Duration, n int, total *tally) time.Duration {
	count := n
	if byTime := int(d.Seconds() * r.cfg.Rate); d > 0 && (count == 0 || byTime < count) {
		count = byTime
	}
	lat := make([]time.Duration, count)
	lags := make([]time.Duration, count)
	errs := make([]error, count)
	patched := make([]bool, count)
	sent := make([]bool, count)
	var (
		wg       sync.WaitGroup
		inFlight atomic.Int64
	)
	start := time.Now()
	for i := 0; i < count && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(float64(i) * float64(time.Second) / r.cfg.Rate))
		sleepUntil(ctx, due)
		lags[i] = time.Since(due)
		if inFlight.Load() >= int64(r.cfg.MaxInFlight) {
			lat[i], errs[i], sent[i] = time.Since(due), errClass("overload", "%d requests in flight", r.cfg.MaxInFlight), true
			continue
		}
		inFlight.Add(1)
		sent[i] = true
		wg.Go(func() {
			defer inFlight.Add(-1)
			p, err := r.send(ctx, i)
			lat[i], patched[i], errs[i] = time.Since(due), p, err
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i := range count {
		if !sent[i] {
			continue
		}
		total.record(lat[i], patched[i], errs[i])
		total.lags = append(total.lags, lags[i])
	}
	return elapsed
}

// sleepUntil returns at t (or when ctx is done): long waits on Go's
// timers, the last 2 ms with the precise sleep.
func sleepUntil(ctx context.Context, t time.Time) {
	for ctx.Err() == nil {
		d := time.Until(t)
		switch {
		case d <= 0:
			return
		case d > 3*time.Millisecond:
			timer := time.NewTimer(d - 2*time.Millisecond)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
			}
		default:
			sleepPrecise(d)
		}
	}
}

// FormatErrors lists error classes with counts and first messages, sorted
// by class.
func FormatErrors(res *Result) string {
	var b strings.Builder
	for _, c := range slices.Sorted(maps.Keys(res.ErrorClasses)) {
		fmt.Fprintf(&b, "  %s: %d (first: %s)\n", c, res.ErrorClasses[c], res.ErrorSamples[c])
	}
	return b.String()
}

// Median returns the median of xs (the mean of the two middle values for
// an even count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
