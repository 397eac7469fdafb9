package cluster

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/engine"
)

func TestHTTPClient(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 2048)))
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		case "/away":
			http.Redirect(w, r, "http://elsewhere.example/", http.StatusFound)
		default:
			_, _ = w.Write([]byte(`{"token":"` + r.Header.Get("Authorization") + `"}`))
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	now := time.Unix(1000, 0)
	c := &HTTPClient{Hosts: []string{u.Hostname()}, MaxBytes: 1024, Timeout: 100 * time.Millisecond, TTL: time.Minute, Now: func() time.Time { return now }}
	ctx := context.Background()

	r, err := c.Fetch(ctx, engine.HTTPRequest{URL: srv.URL + "/t", Header: map[string]string{"Authorization": "a"}})
	if err != nil || string(r.Body) != `{"token":"a"}` || r.Status != 200 {
		t.Fatalf("fetch: %v %+v", err, r)
	}
	if _, err := c.Fetch(ctx, engine.HTTPRequest{URL: srv.URL + "/t", Header: map[string]string{"Authorization": "a"}}); err != nil || hits.Load() != 1 {
		t.Errorf("a repeated request within the TTL: %v, %d hits", err, hits.Load())
	}
	if r, _ := c.Fetch(ctx, engine.HTTPRequest{URL: srv.URL + "/t", Header: map[string]string{"Authorization": "b"}}); hits.Load() != 2 || string(r.Body) != `{"token":"b"}` {
		t.Errorf("another header is another request: %d hits", hits.Load())
	}
	now = now.Add(2 * time.Minute)
	if _, _ = c.Fetch(ctx, engine.HTTPRequest{URL: srv.URL + "/t", Header: map[string]string{"Authorization": "a"}}); hits.Load() != 3 {
		t.Errorf("after the TTL the request is made again: %d hits", hits.Load())
	}
	for _, tc := range []struct {
		url  string
		want error
		msg  string
	}{
		{"http://10.0.0.1/", ErrHostNotAllowed, ""},
		{"file:///etc/passwd", nil, "only http and https"},
		{srv.URL + "/big", ErrResponseTooLarge, ""},
		{srv.URL + "/slow", context.DeadlineExceeded, ""},
		{srv.URL + "/away", ErrHostNotAllowed, ""},
	} {
		_, err := c.Fetch(ctx, engine.HTTPRequest{URL: tc.url})
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) || tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v %s", tc.url, err, tc.want, tc.msg)
		}
	}
	if _, err := (&HTTPClient{}).Fetch(ctx, engine.HTTPRequest{URL: srv.URL}); !errors.Is(err, ErrHostNotAllowed) {
		t.Errorf("no hosts listed: %v", err)
	}
}

// TestHTTPClientAddresses: a listed name that resolves to a loopback (or
// link-local, metadata) address is refused at connection time; the
// address itself, listed, is reached.
func TestHTTPClientAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ctx := context.Background()
	byName := &HTTPClient{Hosts: []string{"localhost"}, Timeout: time.Second}
	if _, err := byName.Fetch(ctx, engine.HTTPRequest{URL: "http://localhost:" + u.Port() + "/"}); !errors.Is(err, ErrAddressNotAllowed) {
		t.Errorf("a listed name resolving to loopback: %v, want ErrAddressNotAllowed", err)
	}
	byAddress := &HTTPClient{Hosts: []string{u.Hostname()}, Timeout: time.Second}
	if _, err := byAddress.Fetch(ctx, engine.HTTPRequest{URL: srv.URL + "/"}); err != nil {
		t.Errorf("the listed loopback address: %v", err)
	}
	for _, a := range []string{"169.254.169.254:80", "[fe80::1]:80", "0.0.0.0:80", "[::1]:443", "224.0.0.1:80"} {
		if err := byName.checkAddress(a); !errors.Is(err, ErrAddressNotAllowed) {
			t.Errorf("checkAddress(%s) = %v, want ErrAddressNotAllowed", a, err)
		}
	}
	if err := byName.checkAddress("93.184.216.34:443"); err != nil {
		t.Errorf("a public address: %v", err)
	}
}

// TestHTTPClientCABundle: a request trusts its CA bundle (a server the
// system's roots do not know is reached with it, refused without it).
func TestHTTPClientCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	u, _ := url.Parse(srv.URL)
	c := &HTTPClient{Hosts: []string{u.Hostname()}, Timeout: 2 * time.Second}
	ctx := context.Background()
	if _, err := c.Fetch(ctx, engine.HTTPRequest{URL: srv.URL}); err == nil {
		t.Fatal("a server whose CA the request does not trust was reached")
	}
	r, err := c.Fetch(ctx, engine.HTTPRequest{URL: srv.URL, CABundle: ca})
	if err != nil || string(r.Body) != `{"ok":true}` {
		t.Fatalf("with its CA bundle: %v %+v", err, r)
	}
	if _, err := c.Fetch(ctx, engine.HTTPRequest{URL: srv.URL + "/x", CABundle: []byte("not pem")}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a bundle without certificates: %v", err)
	}
}
