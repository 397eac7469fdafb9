package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/modwright/modwright/internal/certs"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/metrics"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestServer(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Now()}
	b, _, err := certs.Ensure(dir, certs.Options{Hosts: []string{"localhost", "127.0.0.1"}, Now: clock.Now()}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var ready atomic.Bool
	reg := prometheus.NewRegistry()
	h := NewDragnet(Options{Evaluator: engine.New(engine.Options{}), Snapshots: testSnapshot(t), Log: logr.Discard(), Metrics: metrics.New(reg)})
	srv, err := NewServer(ServerOptions{
		Addr:     "127.0.0.1:0",
		CertFile: filepath.Join(dir, certs.CertFile),
		KeyFile:  filepath.Join(dir, certs.KeyFile),
		Handlers: map[string]http.Handler{DragnetPath: h},
		Ready:    ready.Load,
		Gatherer: reg,
		Log:      logr.Discard(),
		Now:      clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	base := "https://" + srv.Addr().String()

	client := func(ca []byte) *http.Client {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	}
	c := client(b.CAPEM)
	get := func(path string) (int, string, int) {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.ProtoMajor
	}
	if code, body, proto := get("/healthz"); code != 200 || proto != 2 {
		t.Fatalf("/healthz: %d %q over HTTP/%d", code, body, proto)
	}
	if code, body, _ := get("/readyz"); code != 503 || !strings.Contains(body, "not ready") {
		t.Fatalf("/readyz before ready: %d %q", code, body)
	}
	ready.Store(true)
	if code, _, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz after ready: %d", code)
	}
	resp, err := c.Post(base+DragnetPath, "application/json", strings.NewReader(reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "x"), "")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"allowed":true`) {
		t.Fatalf("review: %d %s", resp.StatusCode, body)
	}
	if _, body, _ := get("/metrics"); !strings.Contains(body, `modwright_admission_reviews_total{operation="CREATE",outcome="patched",webhook="dragnet"} 1`) {
		t.Fatalf("/metrics lacks the review:\n%s", body)
	}
	if code, _, _ := get("/debug/pprof/"); code != 404 {
		t.Errorf("pprof served without being enabled: %d", code)
	}

	// Rotation: new files on disk are served once the check interval passed.
	time.Sleep(20 * time.Millisecond) // distinct modification times
	nb, err := certs.Generate(certs.Options{Hosts: []string{"localhost", "127.0.0.1"}, Now: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := nb.Write(dir); err != nil {
		t.Fatal(err)
	}
	clock.Add(certCheckInterval + time.Second)
	c2 := client(nb.CAPEM)
	resp, err = c2.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("the rotated certificate is not served: %v", err)
	}
	resp.Body.Close()

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
