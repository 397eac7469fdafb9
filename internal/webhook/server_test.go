package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
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

// gated blocks every evaluation until the test closes the channel it
// hands over on entered, then allows it; a cancelled context fails it as
// the engine would ("context canceled").
type gated struct{ entered chan chan struct{} }

func (g gated) Evaluate(ctx context.Context, _ *engine.Snapshot, _ engine.Request) (*engine.Decision, error) {
	release := make(chan struct{})
	g.entered <- release
	select {
	case <-release:
		return &engine.Decision{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// testServer is a Server on a free port with a fresh certificate.
type testServer struct {
	srv  *Server
	base string
	ca   []byte
}

func startTestServer(t *testing.T, ev Evaluator, mutate func(*ServerOptions)) *testServer {
	t.Helper()
	dir := t.TempDir()
	b, _, err := certs.Ensure(dir, certs.Options{Hosts: []string{"localhost", "127.0.0.1"}, Now: time.Now()}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h := NewDragnet(Options{Evaluator: ev, Snapshots: testSnapshot(t), Log: logr.Discard(), Timeout: time.Minute})
	opts := ServerOptions{
		Addr:     "127.0.0.1:0",
		CertFile: filepath.Join(dir, certs.CertFile),
		KeyFile:  filepath.Join(dir, certs.KeyFile),
		Handlers: map[string]http.Handler{DragnetPath: h},
		Log:      logr.Discard(),
	}
	if mutate != nil {
		mutate(&opts)
	}
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.http.Close() })
	return &testServer{srv: srv, base: "https://" + srv.Addr().String(), ca: b.CAPEM}
}

func (ts *testServer) tlsConfig(protos ...string) *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ts.ca)
	return &tls.Config{RootCAs: pool, NextProtos: protos}
}

// client is an HTTP/2 client with connections of its own.
func (ts *testServer) client() *http.Client {
	return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: ts.tlsConfig()}, Timeout: 30 * time.Second}
}

type answer struct {
	code    int
	body    string
	allowed bool
	err     error
}

func (ts *testServer) review(c *http.Client) answer {
	resp, err := c.Post(ts.base+DragnetPath+"?timeout=30s", "application/json",
		strings.NewReader(reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "x"), "")))
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(body), allowed: strings.Contains(string(body), `"allowed":true`)}
}

func (ts *testServer) get(c *http.Client, path string) (int, string, error) {
	resp, err := c.Get(ts.base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// waitFor polls f until it is true; the bound only keeps a broken test
// from hanging.
func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !f(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestServerShutdown: a stopping server turns unready first, keeps serving
// through the shutdown delay, then stops listening and lets the review in
// flight finish with its own result (its context is not cancelled).
func TestServerShutdown(t *testing.T) {
	ev := gated{entered: make(chan chan struct{})}
	delay := make(chan time.Time)
	var asked atomic.Int64
	ts := startTestServer(t, ev, func(o *ServerOptions) {
		o.ShutdownDelay = time.Hour // ends when the test says so
		o.After = func(d time.Duration) <-chan time.Time { asked.Store(int64(d)); return delay }
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ts.srv.Serve(ctx) }()
	c := ts.client()
	waitFor(t, "ready", func() bool { code, _, _ := ts.get(c, "/readyz"); return code == 200 })

	inflight := make(chan answer, 1)
	go func() { inflight <- ts.review(ts.client()) }()
	release := <-ev.entered

	cancel()
	waitFor(t, "/readyz fails once shutdown begins", func() bool {
		code, body, err := ts.get(c, "/readyz")
		if err != nil {
			t.Fatalf("/readyz during the shutdown delay: %v", err)
		}
		return code == 503 && strings.Contains(body, "shutting down")
	})
	if !ts.srv.Draining() {
		t.Error("Draining() is false after shutdown began")
	}
	// /readyz may fail a moment before the server asks for the delay.
	waitFor(t, "the shutdown delay asked for", func() bool { return time.Duration(asked.Load()) == time.Hour })
	// Still serving during the delay: a new review on a new connection.
	during := make(chan answer, 1)
	go func() { during <- ts.review(ts.client()) }()
	close(<-ev.entered)
	if a := <-during; a.err != nil || a.code != 200 || !a.allowed {
		t.Fatalf("review during the shutdown delay: %+v", a)
	}

	close(delay)
	waitFor(t, "the listener closes after the delay", func() bool {
		conn, err := net.Dial("tcp", ts.srv.Addr().String())
		if err != nil {
			return true
		}
		conn.Close()
		return false
	})
	select {
	case a := <-inflight:
		t.Fatalf("the review in flight was answered before it finished: %+v", a)
	case err := <-served:
		t.Fatalf("Serve returned (%v) with a review in flight", err)
	default:
	}
	close(release)
	if a := <-inflight; a.err != nil || a.code != 200 || !a.allowed {
		t.Fatalf("the review in flight during shutdown: %+v", a)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestServerShutdownDrainTimeout: a request still running after the drain
// timeout has its connection closed, and Serve returns.
func TestServerShutdownDrainTimeout(t *testing.T) {
	ev := gated{entered: make(chan chan struct{}, 1)}
	ts := startTestServer(t, ev, func(o *ServerOptions) { o.WriteTimeout = 50 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ts.srv.Serve(ctx) }()
	inflight := make(chan answer, 1)
	go func() { inflight <- ts.review(ts.client()) }()
	defer close(<-ev.entered)
	cancel()
	if err := <-served; err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Serve after the drain timeout: %v", err)
	}
	if a := <-inflight; a.err == nil && a.allowed {
		t.Fatalf("the stuck review was answered: %+v", a)
	}
}

// TestServerCutsSlowClients: a client trickling its headers (slowloris), a
// request body that never ends, and idle connections (HTTP/1.1 and HTTP/2)
// are closed by the server.
func TestServerCutsSlowClients(t *testing.T) {
	ts := startTestServer(t, engine.New(engine.Options{}), func(o *ServerOptions) {
		o.ReadHeaderTimeout = 200 * time.Millisecond
		o.ReadTimeout = 300 * time.Millisecond
		o.IdleTimeout = 200 * time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ts.srv.Serve(ctx) }()
	addr := ts.srv.Addr().String()

	// trickle writes a byte every 50ms for at most 30s and reports how the
	// connection ended: the server closes it well before the end.
	trickle := func(conn *tls.Conn, head, drip string) error {
		if _, err := conn.Write([]byte(head)); err != nil {
			return err
		}
		readErr := make(chan error, 1)
		go func() {
			b, err := io.ReadAll(conn)
			if err == nil && len(b) > 0 {
				err = fmt.Errorf("answered: %q", b)
			}
			readErr <- err
		}()
		for range 600 {
			select {
			case err := <-readErr:
				return err
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := conn.Write([]byte(drip)); err != nil {
				return <-readErr
			}
		}
		return errors.New("the connection stayed open for 30s")
	}
	dial := func(t *testing.T, proto string) *tls.Conn {
		conn, err := tls.Dial("tcp", addr, ts.tlsConfig(proto))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if got := conn.ConnectionState().NegotiatedProtocol; got != proto {
			t.Fatalf("negotiated %q", got)
		}
		return conn
	}
	t.Run("slowloris headers", func(t *testing.T) {
		err := trickle(dial(t, "http/1.1"), "POST "+DragnetPath+" HTTP/1.1\r\nHost: x\r\nX-Slow: ", "a")
		if err != nil && !strings.HasPrefix(err.Error(), "answered") {
			t.Fatal(err)
		}
		// The server answers 408 or just closes; it never waits for the end.
		if err != nil && !strings.Contains(err.Error(), "408") {
			t.Fatal(err)
		}
	})
	t.Run("endless body", func(t *testing.T) {
		// The dragnet reads the body within the review's deadline (the API
		// server always sends ?timeout=), which replaces the connection's
		// read deadline; the server's ReadTimeout is the same as the review
		// timeout in serve (serverOptions), a backstop.
		err := trickle(dial(t, "http/1.1"), "POST "+DragnetPath+"?timeout=1s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", " ")
		if err != nil && strings.Contains(err.Error(), `"allowed":true`) {
			t.Fatal(err)
		}
		if err != nil && strings.Contains(err.Error(), "30s") {
			t.Fatal(err)
		}
	})
	for _, proto := range []string{"http/1.1", "h2"} {
		t.Run("idle "+proto, func(t *testing.T) {
			closed := make(chan struct{})
			tr := &http.Transport{
				TLSClientConfig:   ts.tlsConfig(proto),
				ForceAttemptHTTP2: proto == "h2",
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return &watchedConn{Conn: conn, closed: closed}, nil
				},
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get(ts.base + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if want := map[string]int{"http/1.1": 1, "h2": 2}[proto]; resp.ProtoMajor != want {
				t.Fatalf("HTTP/%d", resp.ProtoMajor)
			}
			select {
			case <-closed:
			case <-time.After(30 * time.Second):
				t.Fatal("the idle connection stayed open for 30s")
			}
		})
	}
}

// watchedConn closes closed when the connection ends: a read finds it
// ended, or the client's transport, whose read loop saw the server's TLS
// close_notify, closes it (nothing else here closes it before the test
// ends: the transport has no idle timeout).
type watchedConn struct {
	net.Conn
	closed chan struct{}
	once   sync.Once
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.once.Do(func() { close(c.closed) })
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
