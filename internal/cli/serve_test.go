package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/modwright/modwright/internal/certs"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/webhook"
)

func TestBindEnv(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	port := fs.Int("webhook-port", 9443, "")
	rulesFlag := fs.StringArray("rules", nil, "")
	open := fs.Bool("fail-open", false, "")
	if err := fs.Parse([]string{"--webhook-port=1234"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"MODWRIGHT_WEBHOOK_PORT": "9999", // the command line wins
		"MODWRIGHT_RULES":        "a, b",
		"MODWRIGHT_FAIL_OPEN":    "true",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := bindEnv(fs, lookup); err != nil {
		t.Fatal(err)
	}
	if *port != 1234 || strings.Join(*rulesFlag, "|") != "a|b" || !*open {
		t.Fatalf("port=%d rules=%q fail-open=%v", *port, *rulesFlag, *open)
	}
	env = map[string]string{"MODWRIGHT_FAIL_OPEN": "maybe"}
	fs2 := pflag.NewFlagSet("y", pflag.ContinueOnError)
	fs2.Bool("fail-open", false, "")
	if err := bindEnv(fs2, lookup); err == nil || !strings.Contains(err.Error(), "MODWRIGHT_FAIL_OPEN") {
		t.Fatalf("bad value: %v", err)
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

const serveRule = `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: label, namespace: default}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch:
    - {op: add, path: /metadata/labels, value: '{"seen": "VALUE"}'}
`

// TestServeStandalone runs the real command: certificates, HTTPS with
// HTTP/2, readiness, a review, a SIGHUP reload, a clean stop.
func TestServeStandalone(t *testing.T) {
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesFile, []byte(strings.Replace(serveRule, "VALUE", "one", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "certs")
	port := freePort(t)
	t.Setenv("MODWRIGHT_CERT_DIR", certDir) // flags from the environment
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- ExecuteContext(ctx, []string{"serve", "--standalone", "--rules", rulesFile, "--webhook-port", strconv.Itoa(port), "--bind-address", "127.0.0.1"},
			Streams{In: strings.NewReader(""), Out: io.Discard, Err: logs})
	}()

	base := "https://127.0.0.1:" + strconv.Itoa(port)
	var client *http.Client
	deadline := time.Now().Add(20 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("not ready in time; log:\n%s", logs)
		}
		select {
		case code := <-exit:
			t.Fatalf("serve exited with %d; log:\n%s", code, logs)
		default:
		}
		if client == nil {
			if ca, err := os.ReadFile(filepath.Join(certDir, "ca.crt")); err == nil {
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(ca)
				client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
			}
		}
		if client != nil {
			if resp, err := client.Get(base + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					if resp.ProtoMajor != 2 {
						t.Fatalf("served over HTTP/%d, want HTTP/2", resp.ProtoMajor)
					}
					break
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}

	review := func() string {
		t.Helper()
		body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"ConfigMap"},` +
			`"namespace":"default","operation":"CREATE","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}}}`
		resp, err := client.Post(base+"/dragnet-webhook?timeout=10s", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rv struct {
			Response struct {
				UID     string `json:"uid"`
				Allowed bool   `json:"allowed"`
				Patch   string `json:"patch"`
			} `json:"response"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&rv); err != nil || rv.Response.UID != "u1" || !rv.Response.Allowed {
			t.Fatalf("review: %v %+v", err, rv)
		}
		p, _ := base64.StdEncoding.DecodeString(rv.Response.Patch)
		return string(p)
	}
	if got, want := review(), `[{"op":"add","path":"/metadata/labels","value":{"seen":"one"}}]`; got != want {
		t.Fatalf("patch %s, want %s", got, want)
	}

	// SIGHUP reloads the rules.
	if err := os.WriteFile(rulesFile, []byte(strings.Replace(serveRule, "VALUE", "two", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if strings.Contains(review(), `"two"`) {
			break
		}
		if i > 200 {
			t.Fatalf("rules not reloaded on SIGHUP; log:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// SIGTERM (main cancels the context): unready at once, still serving
	// through --shutdown-delay (5s by default), then a clean exit.
	cancel()
	stopped := time.Now()
	for {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			t.Fatalf("/readyz %s after the stop, within the shutdown delay: %v", time.Since(stopped), err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := review(); !strings.Contains(got, `"two"`) {
		t.Fatalf("review during the shutdown delay: patch %s", got)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d; log:\n%s", code, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
	for _, want := range []string{`"msg":"serving certificate"`, `"generated":true`, `"msg":"rule snapshot published"`, `"ready":1`,
		`"msg":"shutting down: not ready; serving until the shutdown delay has passed"`, `"delay":"5s"`, `"msg":"shut down"`, `"msg":"stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}

func TestServeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--rules", dir}, "--rules needs --standalone"},
		{[]string{"serve", "--cert-management", "manual"}, "--cert-management must be self or external"},
		{[]string{"serve", "--target-resources", "a b"}, "--target-resources"},
		{[]string{"serve", "--standalone"}, "needs at least one --rules"},
		{[]string{"serve", "--standalone", "--rules", dir, "--webhook-port", "70000"}, "not a port"},
		{[]string{"serve", "--standalone", "--rules", dir, "--log-format", "xml"}, "--log-format must be json or text"},
		{[]string{"serve", "--standalone", "--rules", filepath.Join(dir, "missing"), "--webhook-port", "0", "--cert-dir", filepath.Join(dir, "c")}, "missing"},
	} {
		var stderr syncBuffer
		code := ExecuteContext(context.Background(), tc.args, Streams{In: strings.NewReader(""), Out: io.Discard, Err: &stderr})
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// gatedEvaluator blocks each evaluation until the test closes the channel
// it hands over, then answers allowed unless the review's context was
// cancelled meanwhile (as the engine would: "context canceled").
type gatedEvaluator struct{ entered chan chan struct{} }

func (g gatedEvaluator) Evaluate(ctx context.Context, _ *engine.Snapshot, _ engine.Request) (*engine.Decision, error) {
	release := make(chan struct{})
	g.entered <- release
	<-release
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &engine.Decision{}, nil
}

const reviewJSON = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"ConfigMap"},` +
	`"namespace":"default","operation":"CREATE","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}}}`

// TestOperatorWebhookServerStop: when the manager stops the operator's
// webhook server (it cancels the context it started it with), a review in
// flight is answered with its own result. controller-runtime's webhook
// server derived request contexts from the manager's, and answered
// "modwright: context canceled".
func TestOperatorWebhookServerStop(t *testing.T) {
	b, err := certs.Generate(certs.Options{Hosts: []string{"127.0.0.1"}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(b.CertPEM, b.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	o := &serveOptions{bindAddress: "127.0.0.1", reviewTimeout: time.Minute}
	ws, err := newWebhookServer(context.Background(), o.serverOptions(webhook.ServerOptions{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil },
		Log:            logr.Discard(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.srv.Close() })
	ev := gatedEvaluator{entered: make(chan chan struct{})}
	store := &source.Store{}
	store.Publish(engine.NewSnapshot(nil))
	ws.Register(webhook.DragnetPath, webhook.NewDragnet(webhook.Options{Evaluator: ev, Snapshots: store, Log: logr.Discard(), Timeout: time.Minute}))

	mgrCtx, stopMgr := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- ws.Start(mgrCtx) }()
	addr := ws.srv.Addr().String()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.CAPEM)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for i := 0; ws.StartedChecker()(nil) != nil; i++ {
		if i > 3000 {
			t.Fatal("the webhook server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}

	type answer struct {
		allowed bool
		body    string
		err     error
	}
	inflight := make(chan answer, 1)
	go func() {
		resp, err := client.Post("https://"+addr+webhook.DragnetPath+"?timeout=30s", "application/json", strings.NewReader(reviewJSON))
		if err != nil {
			inflight <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		inflight <- answer{allowed: resp.StatusCode == 200 && strings.Contains(string(body), `"allowed":true`), body: string(body)}
	}()
	release := <-ev.entered

	stopMgr()
	// The server has stopped listening: it is shutting down.
	for i := 0; ; i++ {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		conn.Close()
		if i > 3000 {
			t.Fatal("the webhook server still listens after the manager stopped it")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if a := <-inflight; a.err != nil || !a.allowed {
		t.Fatalf("the review in flight when the manager stopped: %+v", a)
	}
	if err := <-started; err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// serve's flags set the server's bounds: a request is read within
// --review-timeout and answered within 5 seconds more; --shutdown-delay.
func TestServerOptions(t *testing.T) {
	o := &serveOptions{bindAddress: "127.0.0.1", port: 8443, reviewTimeout: 7 * time.Second, shutdownDelay: 3 * time.Second}
	so := o.serverOptions(webhook.ServerOptions{Pprof: true})
	if so.Addr != "127.0.0.1:8443" || so.ReadTimeout != 7*time.Second || so.WriteTimeout != 12*time.Second || so.ShutdownDelay != 3*time.Second || !so.Pprof {
		t.Errorf("serverOptions = %+v", so)
	}
}

// TestOperatorWebhookServerCutsSlowBody: the operator's webhook server
// closes a request whose body trickles in past --review-timeout
// (controller-runtime's server had no read timeout: such a request held
// its connection, and an evaluation slot, for as long as the client liked).
func TestOperatorWebhookServerCutsSlowBody(t *testing.T) {
	b, err := certs.Generate(certs.Options{Hosts: []string{"127.0.0.1"}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(b.CertPEM, b.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	o := &serveOptions{bindAddress: "127.0.0.1", reviewTimeout: 300 * time.Millisecond}
	ws, err := newWebhookServer(context.Background(), o.serverOptions(webhook.ServerOptions{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil },
		Log:            logr.Discard(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.srv.Close() })
	store := &source.Store{}
	store.Publish(engine.NewSnapshot(nil))
	ws.Register(webhook.DragnetPath, o.dragnet("dragnet", store, engine.Options{}, nil, logr.Discard(), nil)) // as serve wires it
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ws.Start(ctx) }()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.CAPEM)
	conn, err := tls.Dial("tcp", ws.srv.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST " + webhook.DragnetPath + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, conn); close(ended) }()
	for i := 0; ; i++ { // a byte every 50ms, for at most 30s
		select {
		case <-ended:
			return
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := conn.Write([]byte(" ")); err != nil {
			return
		}
		if i == 600 {
			t.Fatal("the trickling request was not cut off in 30s")
		}
	}
}

// TestMaxReviewMemoryFlag: --max-review-memory (or MODWRIGHT_MAX_REVIEW_MEMORY)
// sets the dragnet's memory budget; bodies get half as much again.
func TestMaxReviewMemoryFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want int64
	}{
		{args: []string{"--max-review-memory", "100000000"}, want: 100000000},
		{env: "50000000", want: 50000000},
	} {
		if tc.env != "" {
			t.Setenv("MODWRIGHT_MAX_REVIEW_MEMORY", tc.env)
		}
		o := &serveOptions{}
		cmd := newServeCmdWith(Streams{}, o)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := bindEnv(cmd.Flags(), os.LookupEnv); err != nil {
			t.Fatal(err)
		}
		eval, bodies := o.dragnet("dragnet", &source.Store{}, engine.Options{}, nil, logr.Discard(), nil).MemoryBudget()
		if eval != tc.want || bodies != tc.want/2 {
			t.Errorf("%v %s: budget %d (bodies %d), want %d", tc.args, tc.env, eval, bodies, tc.want)
		}
	}
}
