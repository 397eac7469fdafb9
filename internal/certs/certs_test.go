package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func TestGenerateAndCheck(t *testing.T) {
	b, err := Generate(Options{Hosts: []string{"modwright.kubemod-system.svc", "127.0.0.1"}, Now: t0, TTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Check([]string{"modwright.kubemod-system.svc", "127.0.0.1"}, t0, time.Hour); err != nil {
		t.Fatalf("fresh bundle: %v", err)
	}
	for name, tc := range map[string]struct {
		hosts  []string
		now    time.Time
		margin time.Duration
	}{
		"uncovered host":    {[]string{"other.example"}, t0, 0},
		"expires in margin": {nil, t0, 25 * time.Hour},
		"expired":           {nil, t0.Add(48 * time.Hour), 0},
		"not yet valid":     {nil, t0.Add(-time.Hour), 0},
	} {
		if err := b.Check(tc.hosts, tc.now, tc.margin); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	// The serving certificate verifies against the CA for TLS server use.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.CAPEM)
	pair, err := tls.X509KeyPair(b.CertPEM, b.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "modwright.kubemod-system.svc", CurrentTime: t0}); err != nil {
		t.Fatal(err)
	}
	// A CA from another bundle does not verify it.
	other, _ := Generate(Options{Hosts: []string{"x"}, Now: t0})
	mixed := *b
	mixed.CAPEM = other.CAPEM
	if err := mixed.Check(nil, t0, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("foreign CA: %v", err)
	}
}

func TestEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	opts := Options{Hosts: []string{"localhost"}, Now: t0, TTL: 10 * 24 * time.Hour}
	b1, gen, err := Ensure(dir, opts, 24*time.Hour)
	if err != nil || !gen {
		t.Fatalf("first Ensure: generated=%v err=%v", gen, err)
	}
	st, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st.Mode(), err)
	}
	b2, gen, err := Ensure(dir, opts, 24*time.Hour)
	if err != nil || gen || string(b2.CertPEM) != string(b1.CertPEM) {
		t.Fatalf("second Ensure must reuse: generated=%v err=%v", gen, err)
	}
	// Close to expiry: rotated.
	later := opts
	later.Now = t0.Add(9*24*time.Hour + time.Hour)
	b3, gen, err := Ensure(dir, later, 24*time.Hour)
	if err != nil || !gen || string(b3.CertPEM) == string(b1.CertPEM) {
		t.Fatalf("rotation: generated=%v err=%v", gen, err)
	}
	// A new host name: regenerated.
	more := opts
	more.Hosts = []string{"localhost", "modwright.svc"}
	if _, gen, err := Ensure(dir, more, 0); err != nil || !gen {
		t.Fatalf("new host: generated=%v err=%v", gen, err)
	}
	// Externally provisioned (no CA key) and unusable: an error, files kept.
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Ensure(dir, Options{Hosts: []string{"elsewhere"}, Now: t0}, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("external cert: %v", err)
	}
	// Garbage in the files: the error names the problem.
	if err := os.WriteFile(filepath.Join(dir, CertFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Ensure(dir, opts, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("junk: %v", err)
	}
}

func TestGenerateNeedsHost(t *testing.T) {
	if _, err := Generate(Options{Now: t0}); err == nil {
		t.Fatal("no error without hosts")
	}
}
