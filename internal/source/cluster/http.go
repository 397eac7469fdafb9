package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modwright/modwright/internal/engine"
)

// ErrHostNotAllowed is in the chain of the error of an HTTP request to a
// host HTTPClient.Hosts does not list.
var ErrHostNotAllowed = errors.New("the host is not allowed")

// HTTPClient is the engine's HTTPReader in the cluster (kinitiras' http
// references). Requests reach only the hosts the operator lists: a rule
// that could make the operator call any URL would let policy authors probe
// the cluster's network (SSRF), so the list is empty by default. Each
// request is bounded by Timeout and MaxBytes and follows at most 10
// redirects, each to an allowed host; a response (2xx or not) is reused
// for the request's MaxAge, or TTL when it gives none, and concurrent
// identical requests share one. Errors are not kept.
type HTTPClient struct {
	// Hosts are the allowed hosts, as host or host:port (a host alone
	// allows every port).
	Hosts []string
	// Timeout bounds one request; default 1 s (kinitiras').
	Timeout time.Duration
	// MaxBytes bounds a response; default 1 MiB.
	MaxBytes int64
	// TTL is how long a response is reused when the request does not say;
	// 0: not at all.
	TTL time.Duration
	// Client makes the requests; default a client of its own, whose
	// transport goes through no proxy (Proxy) and connects to no
	// loopback, link-local (the cloud metadata address among them),
	// unspecified or multicast address unless Hosts lists that address
	// itself: a listed name that resolves there is refused.
	Client *http.Client
	// Proxy is the proxy of the default client's requests; nil: none (the
	// environment's HTTP_PROXY is not read).
	Proxy func(*http.Request) (*url.URL, error)
	// Now is the clock; default time.Now.
	Now func() time.Time

	cache     responses[*engine.HTTPResponse]
	transport struct {
		once sync.Once
		t    *http.Transport
	}
	// withCA are the default transport's clones that trust a request's CA
	// bundle, by the bundle's SHA-256 (at most maxCATransports).
	withCA struct {
		sync.Mutex
		m map[[sha256.Size]byte]*http.Transport
	}
}

// maxCATransports bounds the transports kept for distinct CA bundles
// (each keeps its idle connections); beyond it, a bundle's transport is
// built per request and closed after it.
const maxCATransports = 32

// transportFor is the transport of a request trusting caBundle (PEM; the
// system's roots when empty); done releases it.
func (c *HTTPClient) transportFor(caBundle []byte) (t http.RoundTripper, done func(), err error) {
	base := http.RoundTripper(c.defaultTransport())
	if c.Client != nil && c.Client.Transport != nil {
		base = c.Client.Transport
	}
	if len(caBundle) == 0 {
		return base, func() {}, nil
	}
	bt, ok := base.(*http.Transport)
	if !ok {
		return nil, nil, errors.New("a CA bundle needs the client's own transport")
	}
	sum := sha256.Sum256(caBundle)
	c.withCA.Lock()
	defer c.withCA.Unlock()
	if t, ok := c.withCA.m[sum]; ok {
		return t, func() {}, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return nil, nil, errors.New("the CA bundle holds no PEM certificate")
	}
	nt := bt.Clone()
	nt.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if len(c.withCA.m) >= maxCATransports {
		return nt, nt.CloseIdleConnections, nil
	}
	if c.withCA.m == nil {
		c.withCA.m = map[[sha256.Size]byte]*http.Transport{}
	}
	c.withCA.m[sum] = nt
	return nt, func() {}, nil
}

// ErrAddressNotAllowed is in the chain of the error of a request whose
// host resolves to a loopback, link-local, unspecified or multicast
// address that HTTPClient.Hosts does not list.
var ErrAddressNotAllowed = errors.New("the address is not allowed")

// checkAddress refuses, at connection time (after resolution, so a name
// cannot be pointed there later), an address no request should reach
// unless the operator listed it.
func (c *HTTPClient) checkAddress(address string) error {
	internal, err := unlistedInternal(address, c.Hosts)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAddressNotAllowed, err)
	}
	if internal {
		return fmt.Errorf("%w: %s (loopback, link-local and metadata addresses are reached only when --kinitiras-http-hosts (or --kyverno-service-hosts) lists the address itself)", ErrAddressNotAllowed, address)
	}
	return nil
}

// unlistedInternal reports whether address (host:port, an IP resolved)
// is a loopback, link-local (the cloud metadata address among them),
// unspecified or multicast address that listed (hosts or host:port) does
// not name itself.
func unlistedInternal(address string, listed []string) (bool, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false, err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, fmt.Errorf("%s is not an IP address", address)
	}
	ip = ip.Unmap()
	if !ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast() && !ip.IsUnspecified() && !ip.IsMulticast() && !ip.IsInterfaceLocalMulticast() {
		return false, nil
	}
	return !slices.Contains(listed, ip.String()) && !slices.Contains(listed, address), nil
}

// defaultTransport is the default client's transport: no proxy but
// Proxy, and checkAddress on every connection.
func (c *HTTPClient) defaultTransport() *http.Transport {
	c.transport.once.Do(func() {
		d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error { return c.checkAddress(address) }}
		c.transport.t = &http.Transport{
			Proxy:               c.Proxy,
			DialContext:         d.DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        16,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 5 * time.Second,
		}
	})
	return c.transport.t
}

var _ engine.HTTPReader = (*HTTPClient)(nil)

func (c *HTTPClient) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// allowed reports whether u's host may be requested.
func (c *HTTPClient) allowed(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: only http and https URLs", u.Redacted())
	}
	if slices.Contains(c.Hosts, u.Host) || slices.Contains(c.Hosts, u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%w: %s (the operator's --kinitiras-http-hosts, or --kyverno-service-hosts, lists the hosts rules' HTTP calls may reach; none by default)", ErrHostNotAllowed, u.Host)
}

// Fetch makes the request.
func (c *HTTPClient) Fetch(ctx context.Context, r engine.HTTPRequest) (*engine.HTTPResponse, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, err
	}
	if err := c.allowed(u); err != nil {
		return nil, err
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var key strings.Builder
	key.WriteString(method + " " + r.URL + "\x00" + string(r.Body) + "\x00" + string(r.CABundle))
	for _, k := range keys {
		key.WriteString("\x00" + k + ":" + r.Header[k])
	}
	ttl := r.MaxAge
	if ttl == 0 {
		ttl = c.TTL
	}
	return c.cache.get(key.String(), ttl, c.now, func() (*engine.HTTPResponse, error) { return c.do(ctx, method, u, r) }, httpResponseSize)
}

// httpResponseSize is a response's body and headers, in bytes.
func httpResponseSize(r *engine.HTTPResponse) int {
	n := len(r.Body)
	for k, vs := range r.Header {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return n
}

func (c *HTTPClient) do(ctx context.Context, method string, u *url.URL, r engine.HTTPRequest) (*engine.HTTPResponse, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	limit := c.MaxBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	client := http.Client{}
	if c.Client != nil {
		client = *c.Client
	}
	t, done, err := c.transportFor(r.CABundle)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	defer done()
	client.Transport = t
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return c.allowed(next.URL)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the response: %w", method, u.Redacted(), err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s %s: %w: more than %d bytes", method, u.Redacted(), ErrResponseTooLarge, limit)
	}
	return &engine.HTTPResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}
