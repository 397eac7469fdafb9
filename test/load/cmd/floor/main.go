// Command floor is the reference admission webhook of the load tests: what
// any Go admission webhook pays per review, and nothing more. It serves
// HTTPS with HTTP/2 (TLS 1.2+, keep-alive), decodes each AdmissionReview
// with encoding/json (the object into a generic tree), and admits it with a
// one-operation JSON patch encoded with encoding/json.
//
//	floor -cert-dir DIR [-port 9443]
//
// The serving certificate, its CA (DIR/ca.crt) and key are created in
// -cert-dir when missing. Paths: /dragnet-webhook, /healthz, /readyz.
// SIGTERM or SIGINT stops it gracefully.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/modwright/modwright/internal/certs"
)

// review is an AdmissionReview request, the object decoded generically.
type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID    string         `json:"uid"`
		Object map[string]any `json:"object"`
	} `json:"request"`
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

type reviewResponse struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   struct {
		UID       string `json:"uid"`
		Allowed   bool   `json:"allowed"`
		PatchType string `json:"patchType,omitempty"`
		Patch     []byte `json:"patch,omitempty"`
	} `json:"response"`
}

const maxBody = 8 << 20

func webhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxBody {
		http.Error(w, "review too large", http.StatusRequestEntityTooLarge)
		return
	}
	var rv review
	if err := json.Unmarshal(body, &rv); err != nil || rv.Request == nil || rv.Request.UID == "" {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	var out reviewResponse
	out.APIVersion, out.Kind = rv.APIVersion, "AdmissionReview"
	out.Response.UID, out.Response.Allowed = rv.Request.UID, true
	// One operation, depending on the object as a real webhook's would.
	op := patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{"floor.modwright.io/seen": "true"}}
	if md, ok := rv.Request.Object["metadata"].(map[string]any); ok {
		if _, ok := md["annotations"].(map[string]any); ok {
			op = patchOp{Op: "add", Path: "/metadata/annotations/floor.modwright.io~1seen", Value: "true"}
		}
	}
	patch, err := json.Marshal([]patchOp{op})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out.Response.PatchType, out.Response.Patch = "JSONPatch", patch
	resp, err := json.Marshal(&out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(resp)))
	_, _ = w.Write(resp)
}

func ok(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}

func main() {
	certDir := flag.String("cert-dir", filepath.Join(os.TempDir(), "modwright-floor"), "directory of tls.crt, tls.key and ca.crt (created when missing)")
	port := flag.Int("port", 9443, "HTTPS port")
	flag.Parse()
	if err := run(*certDir, *port); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(certDir string, port int) error {
	if _, _, err := certs.Ensure(certDir, certs.Options{Hosts: certs.DefaultHosts(), Now: time.Now()}, time.Hour); err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, certs.CertFile), filepath.Join(certDir, certs.KeyFile))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/dragnet-webhook", webhook)
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/readyz", ok)
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          log.New(os.Stderr, "floor: ", log.LstdFlags),
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	log.Printf("floor: serving https://%s/dragnet-webhook (CA %s)", ln.Addr(), filepath.Join(certDir, certs.CAFile))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
