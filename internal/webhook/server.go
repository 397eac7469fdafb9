package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults of ServerOptions' timeouts.
const (
	// DefaultReadHeaderTimeout bounds the reading of a request's headers:
	// the API server sends them at once, a slowloris client is cut off.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the reading of a whole request, body
	// included (per stream over HTTP/2). serve sets it to --review-timeout:
	// a review's body cannot usefully arrive after its deadline.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds a request from the end of its headers to
	// the end of its response (per stream over HTTP/2).
	DefaultWriteTimeout = 40 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection (HTTP/1.1) or an
	// HTTP/2 connection without open streams after this long.
	DefaultIdleTimeout = 90 * time.Second
	// DefaultMaxConcurrentStreams bounds the open streams of one HTTP/2
	// connection. Reviews beyond the evaluation slots only wait, so more
	// streams per connection buy nothing; the API server's client opens
	// another connection when one is full.
	DefaultMaxConcurrentStreams = 100
)

// ServerOptions configure the HTTPS server.
type ServerOptions struct {
	// Addr is the listen address, e.g. ":9443".
	Addr string
	// CertFile and KeyFile hold the serving certificate (PEM). They are
	// re-read when they change on disk, so a rotated certificate is served
	// without a restart.
	CertFile, KeyFile string
	// GetCertificate, when set, serves the certificate instead of CertFile
	// and KeyFile (the operator's, from its Secret).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Handlers maps paths to handlers (the webhooks); Handle adds more
	// before Serve.
	Handlers map[string]http.Handler
	// Ready reports readiness for /readyz; nil: ready. /readyz also fails
	// once shutdown has begun.
	Ready func() bool
	// Gatherer serves /metrics; nil disables it.
	Gatherer prometheus.Gatherer
	// Pprof serves net/http/pprof under /debug/pprof/ (a profile must be
	// shorter than WriteTimeout).
	Pprof bool
	Log   logr.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// After is the timer of the shutdown delay; nil means time.After.
	After func(time.Duration) <-chan time.Time

	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// http.Server's; 0 means the Default* above.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConcurrentStreams bounds the streams of an HTTP/2 connection; 0
	// means DefaultMaxConcurrentStreams.
	MaxConcurrentStreams int
	// ShutdownDelay is how long the server keeps serving, with /readyz
	// failing, after Serve's context ends: the time the API server and the
	// Service need to stop sending to this replica. 0: no delay.
	ShutdownDelay time.Duration
}

// Server is the admission HTTPS server: TLS 1.2+, HTTP/2 and HTTP/1.1,
// keep-alive, the webhooks plus /healthz, /readyz and /metrics.
//
// Request contexts never derive from Serve's context: a stopping server
// lets the reviews it accepted run to their own deadlines.
type Server struct {
	opts     ServerOptions
	ln       net.Listener
	mux      *http.ServeMux
	http     *http.Server
	started  atomic.Bool
	draining atomic.Bool
}

// NewServer loads the certificate and listens; Serve starts answering.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	opts.ReadHeaderTimeout = orDefault(opts.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	opts.ReadTimeout = orDefault(opts.ReadTimeout, DefaultReadTimeout)
	opts.WriteTimeout = orDefault(opts.WriteTimeout, DefaultWriteTimeout)
	opts.IdleTimeout = orDefault(opts.IdleTimeout, DefaultIdleTimeout)
	if opts.MaxConcurrentStreams <= 0 {
		opts.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	getCert := opts.GetCertificate
	if getCert == nil {
		cr := &certReloader{certFile: opts.CertFile, keyFile: opts.KeyFile, now: opts.Now, log: opts.Log}
		if err := cr.load(); err != nil {
			return nil, err
		}
		getCert = cr.get
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	for path, h := range opts.Handlers {
		s.mux.Handle(path, h)
	}
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	s.mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.draining.Load() {
			http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
			return
		}
		if opts.Ready != nil && !opts.Ready() {
			http.Error(w, "not ready: the rule snapshot is not loaded yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if opts.Gatherer != nil {
		s.mux.Handle("/metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{ErrorLog: nil}))
	}
	if opts.Pprof {
		s.mux.HandleFunc("/debug/pprof/", pprof.Index)
		s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	tlsConf := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: getCert,
		NextProtos:     []string{"h2", "http/1.1"},
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.http = &http.Server{
		Handler:   s.mux,
		TLSConfig: tlsConf,
		// Requests get a context of their own, not Serve's: shutdown must
		// not cancel the reviews in flight (controller-runtime's webhook
		// server derives them from the manager's context, which cancelled
		// reviews with "context canceled" when a replica stopped).
		BaseContext:       func(net.Listener) context.Context { return context.Background() },
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: opts.MaxConcurrentStreams},
	}
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Handle serves h at path; call it before Serve.
func (s *Server) Handle(path string, h http.Handler) { s.mux.Handle(path, h) }

// Mux is the server's request multiplexer.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// Started reports whether Serve has begun answering.
func (s *Server) Started() bool { return s.started.Load() }

// Draining reports whether shutdown has begun (/readyz fails).
func (s *Server) Draining() bool { return s.draining.Load() }

// DrainTimeout is the longest Serve waits, after the shutdown delay, for
// the requests in flight: WriteTimeout, by which every request has been
// answered or cut off by the server anyway.
func (s *Server) DrainTimeout() time.Duration { return s.opts.WriteTimeout }

// Serve answers until ctx ends, then shuts down gracefully:
//
//  1. /readyz fails at once (Draining reports true), so that the
//     Service's endpoints drop this replica;
//  2. the server keeps serving for ShutdownDelay, while the API server and
//     the Service catch up;
//  3. it stops listening, tells HTTP/2 clients to go away, closes idle
//     connections and waits for the requests in flight, which run to their
//     own deadlines (their contexts are not cancelled), for at most
//     DrainTimeout; then it closes what remains.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.ServeTLS(s.ln, "", "") }()
	s.started.Store(true)
	select {
	case err := <-errc:
		return closedOK(err)
	case <-ctx.Done():
	}
	begin := s.opts.Now()
	s.draining.Store(true)
	delay := s.opts.ShutdownDelay
	if s.opts.Ready != nil && !s.opts.Ready() {
		delay = 0 // never ready: nobody was sent here
	}
	s.opts.Log.Info("shutting down: not ready; serving until the shutdown delay has passed", "delay", delay.String())
	if delay > 0 {
		select {
		case <-s.opts.After(delay):
		case err := <-errc:
			return closedOK(err)
		}
	}
	s.opts.Log.Info("shutting down: no new connections; waiting for the requests in flight", "timeout", s.DrainTimeout().String())
	sctx, cancel := context.WithTimeout(context.Background(), s.DrainTimeout())
	defer cancel()
	err := s.http.Shutdown(sctx)
	if err != nil {
		s.opts.Log.Error(err, "requests still in flight after the drain timeout; closing their connections")
		err = errors.Join(err, s.http.Close())
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	s.opts.Log.Info("shut down", "took", s.opts.Now().Sub(begin).String())
	return err
}

// Close stops the server at once, closing every connection (Serve then
// returns nil); for a start that failed before serving anyone.
func (s *Server) Close() error { return s.http.Close() }

func closedOK(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// certReloader serves the key pair from disk and reloads it when the files
// change (checked at most every few seconds, on handshakes).
type certReloader struct {
	certFile, keyFile string
	now               func() time.Time
	log               logr.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	checked time.Time
	certMod time.Time
	keyMod  time.Time
}

const certCheckInterval = 10 * time.Second

func (c *certReloader) load() error {
	cst, err := os.Stat(c.certFile)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	kst, err := os.Stat(c.keyFile)
	if err != nil {
		return fmt.Errorf("serving key: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("serving certificate %s: %w", c.certFile, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cert, c.certMod, c.keyMod, c.checked = &pair, cst.ModTime(), kst.ModTime(), c.now()
	return nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	cert := c.cert
	due := c.now().Sub(c.checked) >= certCheckInterval
	if due {
		c.checked = c.now()
	}
	certMod, keyMod := c.certMod, c.keyMod
	c.mu.Unlock()
	if !due {
		return cert, nil
	}
	cst, err1 := os.Stat(c.certFile)
	kst, err2 := os.Stat(c.keyFile)
	if err1 != nil || err2 != nil || (cst.ModTime().Equal(certMod) && kst.ModTime().Equal(keyMod)) {
		return cert, nil
	}
	if err := c.load(); err != nil {
		// Keep serving the old pair; a half-written rotation completes soon.
		c.log.Error(err, "reloading the serving certificate failed; keeping the previous one")
		return cert, nil
	}
	c.log.Info("serving certificate reloaded", "file", c.certFile)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert, nil
}
