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
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServerOptions configure the standalone HTTPS server.
type ServerOptions struct {
	// Addr is the listen address, e.g. ":9443".
	Addr string
	// CertFile and KeyFile hold the serving certificate (PEM). They are
	// re-read when they change on disk, so a rotated certificate is served
	// without a restart.
	CertFile, KeyFile string
	// Handlers maps paths to handlers (the webhooks).
	Handlers map[string]http.Handler
	// Ready reports readiness for /readyz.
	Ready func() bool
	// Gatherer serves /metrics; nil disables it.
	Gatherer prometheus.Gatherer
	// Pprof serves net/http/pprof under /debug/pprof/.
	Pprof bool
	Log   logr.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is the standalone admission server: TLS 1.2+, HTTP/2 and
// HTTP/1.1, keep-alive, the webhooks plus /healthz, /readyz and /metrics.
type Server struct {
	opts  ServerOptions
	ln    net.Listener
	http  *http.Server
	certs *certReloader
}

// NewServer loads the certificate and listens; Serve starts answering.
func NewServer(opts ServerOptions) (*Server, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	cr := &certReloader{certFile: opts.CertFile, keyFile: opts.KeyFile, now: now, log: opts.Log}
	if err := cr.load(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	for path, h := range opts.Handlers {
		mux.Handle(path, h)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if opts.Ready != nil && !opts.Ready() {
			http.Error(w, "not ready: the rule snapshot is not loaded yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if opts.Gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{ErrorLog: nil}))
	}
	if opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	tlsConf := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: cr.get,
		NextProtos:     []string{"h2", "http/1.1"},
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:  opts,
		ln:    ln,
		certs: cr,
		http: &http.Server{
			Handler:           mux,
			TLSConfig:         tlsConf,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       5 * time.Minute,
			MaxHeaderBytes:    64 << 10,
		},
	}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers until ctx ends, then shuts down gracefully (in-flight
// reviews are answered, for up to 25 seconds).
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.ServeTLS(s.ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	err := s.http.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
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
