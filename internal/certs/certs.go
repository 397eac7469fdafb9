package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File names inside a certificate directory.
const (
	CertFile   = "tls.crt"
	KeyFile    = "tls.key"
	CAFile     = "ca.crt"
	CAKeyFile  = "ca.key"
	DefaultTTL = 365 * 24 * time.Hour
)

// ErrInvalid marks certificate material that cannot be used: unparsable,
// expired, not yet valid, or not covering the required host names.
var ErrInvalid = errors.New("invalid certificate")

// Bundle is a serving certificate with the CA that signed it, PEM encoded.
type Bundle struct {
	CertPEM, KeyPEM     []byte
	CAPEM, CAKeyPEM     []byte
	NotBefore, NotAfter time.Time
}

// Options say what to generate.
type Options struct {
	// Hosts are the DNS names and IP addresses the serving certificate must
	// cover (for example the webhook Service's DNS names).
	Hosts []string
	// Now is the clock reading (inject it; tests use fixed times).
	Now time.Time
	// TTL is the serving certificate's lifetime; the CA lives twice as long.
	// Zero means DefaultTTL.
	TTL time.Duration
	// Organization names the issuer; "modwright" when empty.
	Organization string
}

func (o *Options) ttl() time.Duration {
	if o.TTL <= 0 {
		return DefaultTTL
	}
	return o.TTL
}

// Generate creates a fresh CA and a serving certificate signed by it, both
// with ECDSA P-256 keys.
func Generate(opts Options) (*Bundle, error) {
	if len(opts.Hosts) == 0 {
		return nil, errors.New("certs: at least one host name is required")
	}
	org := opts.Organization
	if org == "" {
		org = "modwright"
	}
	notBefore := opts.Now.Add(-5 * time.Minute).UTC() // tolerate clock skew
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: org + " webhook CA", Organization: []string{org}},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(2 * opts.ttl()),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: creating the CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: opts.Hosts[0], Organization: []string{org}},
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(opts.ttl()),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range opts.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: creating the serving certificate: %w", err)
	}
	b := &Bundle{
		CertPEM:   pemBlock("CERTIFICATE", der),
		CAPEM:     pemBlock("CERTIFICATE", caDER),
		NotBefore: tmpl.NotBefore,
		NotAfter:  tmpl.NotAfter,
	}
	if b.KeyPEM, err = keyPEM(key); err != nil {
		return nil, err
	}
	if b.CAKeyPEM, err = keyPEM(caKey); err != nil {
		return nil, err
	}
	return b, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func keyPEM(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

// Check verifies that a bundle's serving certificate parses, matches its
// key, is signed by its CA, covers every host and stays valid for at least
// margin after now. The error wraps ErrInvalid and says why.
func (b *Bundle) Check(hosts []string, now time.Time, margin time.Duration) error {
	pair, err := tls.X509KeyPair(b.CertPEM, b.KeyPEM)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if now.Before(leaf.NotBefore) {
		return fmt.Errorf("%w: not valid before %s", ErrInvalid, leaf.NotBefore.Format(time.RFC3339))
	}
	if now.Add(margin).After(leaf.NotAfter) {
		return fmt.Errorf("%w: expires at %s (renewal margin %s)", ErrInvalid, leaf.NotAfter.Format(time.RFC3339), margin)
	}
	for _, h := range hosts {
		if err := leaf.VerifyHostname(h); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	if len(b.CAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b.CAPEM) {
			return fmt.Errorf("%w: the CA bundle holds no certificate", ErrInvalid)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("%w: not signed by the CA: %v", ErrInvalid, err)
		}
	}
	b.NotBefore, b.NotAfter = leaf.NotBefore, leaf.NotAfter
	return nil
}

// Load reads a bundle from dir. Missing CA files are allowed (certificates
// provisioned by someone else may come without them).
func Load(dir string) (*Bundle, error) {
	b := &Bundle{}
	var err error
	if b.CertPEM, err = os.ReadFile(filepath.Join(dir, CertFile)); err != nil {
		return nil, err
	}
	if b.KeyPEM, err = os.ReadFile(filepath.Join(dir, KeyFile)); err != nil {
		return nil, err
	}
	for name, dst := range map[string]*[]byte{CAFile: &b.CAPEM, CAKeyFile: &b.CAKeyPEM} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		*dst = data
	}
	return b, nil
}

// Write stores a bundle in dir (created 0700 when missing); keys are
// written 0600. Each file is written to a temporary name and renamed, so a
// reader never sees half a file.
func (b *Bundle) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{CAFile, b.CAPEM, 0o644},
		{CAKeyFile, b.CAKeyPEM, 0o600},
		{KeyFile, b.KeyPEM, 0o600},
		{CertFile, b.CertPEM, 0o644},
	}
	for _, f := range files {
		if f.data == nil {
			continue
		}
		tmp := filepath.Join(dir, "."+f.name+".tmp")
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			return err
		}
	}
	return nil
}

// Ensure returns the usable bundle in dir, generating and writing a new one
// when there is none, or when the one there is invalid, expires within
// margin, or does not cover opts.Hosts. generated reports which happened.
// A directory holding a certificate but no CA key (provisioned elsewhere,
// for example by cert-manager) is never overwritten: an unusable one is an
// error instead.
func Ensure(dir string, opts Options, margin time.Duration) (b *Bundle, generated bool, err error) {
	existing, err := Load(dir)
	switch {
	case err == nil:
		checkErr := existing.Check(opts.Hosts, opts.Now, margin)
		if checkErr == nil {
			return existing, false, nil
		}
		if len(existing.CAKeyPEM) == 0 {
			return nil, false, fmt.Errorf("certs: %s: %w (not generated here, so not replaced)", dir, checkErr)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, false, fmt.Errorf("certs: %w", err)
	}
	b, err = Generate(opts)
	if err != nil {
		return nil, false, err
	}
	if err := b.Write(dir); err != nil {
		return nil, false, fmt.Errorf("certs: writing %s: %w", dir, err)
	}
	return b, true, nil
}

// DefaultHosts are the names a locally served webhook answers to:
// localhost, the loopback addresses and the machine's host name.
func DefaultHosts() []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil && h != "" && !slices.Contains(hosts, h) {
		hosts = append(hosts, h)
	}
	return hosts
}
