package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeWebhook answers reviews like a webhook that patches Deployments and
// admits everything else unchanged. Its behavior can be spoiled to check
// the generator's validation.
type fakeWebhook struct {
	reviews  atomic.Int64
	http1    atomic.Int64
	wrongUID bool
	deny     bool
}

func (f *fakeWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		f.http1.Add(1)
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.URL.Path != WebhookPath || r.URL.Query().Get("timeout") != "10s" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var rv struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID  string `json:"uid"`
			Kind struct {
				Kind string `json:"kind"`
			} `json:"kind"`
		} `json:"request"`
	}
	if err := json.Unmarshal(body, &rv); err != nil || rv.Request.UID == "" {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	f.reviews.Add(1)
	uid := rv.Request.UID
	if f.wrongUID {
		uid = "nope"
	}
	patch := ""
	if rv.Request.Kind.Kind == "Deployment" {
		patch = `,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscy94IiwidmFsdWUiOiJ5In1d"`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":%t%s}}`, rv.APIVersion, uid, !f.deny, patch)
}

func startFake(t *testing.T, f *fakeWebhook, http2 bool) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(f)
	srv.EnableHTTP2 = http2
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	client := NewClient(roots)
	t.Cleanup(client.CloseIdleConnections)
	return srv, client
}

func testItems(t *testing.T, mix string) []Item {
	t.Helper()
	w, err := ParseMix(mix)
	if err != nil {
		t.Fatal(err)
	}
	items, err := LoadMix(objectsDir, "", w)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func TestRunFlatOut(t *testing.T) {
	f := &fakeWebhook{}
	srv, client := startFake(t, f, true)
	res, err := Run(context.Background(), Config{
		URL:         srv.URL + WebhookPath + "?timeout=10s",
		Client:      client,
		Items:       testItems(t, ""),
		Concurrency: 3,
		Requests:    50,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 50 || res.Errors != 0 || res.Mode != "flat-out" {
		t.Errorf("result %+v\n%s", res, FormatErrors(res))
	}
	// 1 Deployment in 5 is patched.
	if res.Patched != 10 {
		t.Errorf("%d patched, want 10", res.Patched)
	}
	if res.Latency.Max <= 0 || res.Latency.P50 > res.Latency.P99 || res.Throughput <= 0 {
		t.Errorf("latency %+v throughput %v", res.Latency, res.Throughput)
	}
	// 50 measured plus the first review.
	if n := f.reviews.Load(); n != 51 {
		t.Errorf("server saw %d reviews, want 51", n)
	}
	if n := f.http1.Load(); n != 0 {
		t.Errorf("%d requests over HTTP/1", n)
	}
}

func TestRunFixedRate(t *testing.T) {
	f := &fakeWebhook{}
	srv, client := startFake(t, f, true)
	res, err := Run(context.Background(), Config{
		URL:      srv.URL + WebhookPath + "?timeout=10s",
		Client:   client,
		Items:    testItems(t, "deployment=2,pod=1"),
		Rate:     2000,
		Requests: 30,
		Warmup:   time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 30 || res.Errors != 0 || res.Mode != "rate" || res.Rate != 2000 || res.SendLag == nil {
		t.Errorf("result %+v\n%s", res, FormatErrors(res))
	}
	if res.Patched != 20 {
		t.Errorf("%d patched, want 20 (2 Deployments in 3)", res.Patched)
	}
}

func TestRunValidates(t *testing.T) {
	// The first review is checked strictly: an HTTP/1 server fails loudly.
	f := &fakeWebhook{}
	srv, client := startFake(t, f, false)
	cfg := Config{URL: srv.URL + WebhookPath + "?timeout=10s", Client: client, Items: testItems(t, "pod=1"), Requests: 3}
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "not-http2") {
		t.Errorf("HTTP/1 server: err = %v", err)
	}
	for name, spoil := range map[string]func(*fakeWebhook){
		"uid-mismatch": func(f *fakeWebhook) { f.wrongUID = true },
		"denied":       func(f *fakeWebhook) { f.deny = true },
	} {
		f := &fakeWebhook{}
		spoil(f)
		srv, client := startFake(t, f, true)
		cfg := Config{URL: srv.URL + WebhookPath + "?timeout=10s", Client: client, Items: testItems(t, ""), Requests: 3}
		if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
		// During the measurement, errors are counted by class.
		r := newRun(cfg)
		res, err := r.phase(context.Background(), 0, 4)
		if err != nil {
			t.Fatal(err)
		}
		if res.Errors != 4 || res.ErrorClasses[name] != 4 || res.ErrorSamples[name] == "" {
			t.Errorf("%s: errors %d %v", name, res.Errors, res.ErrorClasses)
		}
	}
	// An unreachable server.
	srv.Close()
	r := newRun(cfg)
	res, err := r.phase(context.Background(), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorClasses["transport"] != 2 {
		t.Errorf("closed server: %v", res.ErrorClasses)
	}
	if _, err := Run(context.Background(), Config{URL: "x", Client: client, Items: cfg.Items}); err == nil {
		t.Error("no duration nor requests accepted")
	}
}

func TestMix(t *testing.T) {
	w, err := ParseMix("deployment=3,namespace=0,pod")
	if err != nil {
		t.Fatal(err)
	}
	if w["deployment"] != 3 || w["pod"] != 1 || w["namespace"] != 0 || w["service"] != 0 {
		t.Errorf("ParseMix = %v", w)
	}
	for _, bad := range []string{"pods=1", "pod=-1", "pod=x"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
	items, err := LoadMix(objectsDir, QuietNamespace, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Review.Kind != "Deployment" || items[0].Review.Namespace != QuietNamespace || items[1].Review.Kind != "Pod" {
		t.Errorf("LoadMix: %d items", len(items))
	}
	// Smooth weighted round robin: 3:1 interleaved, not bunched.
	if got := fmt.Sprint(schedule(items)); got != "[0 0 1 0]" {
		t.Errorf("schedule = %s", got)
	}
	if got := fmt.Sprint(schedule(testItems(t, ""))); got != "[0 1 2 3 4]" {
		t.Errorf("equal schedule = %s", got)
	}
	if _, err := LoadMix(objectsDir, "", map[string]int{}); err == nil {
		t.Error("empty mix accepted")
	}
	// uids are fixed-width and distinct.
	r := &run{prefix: "01234567-89ab-4cde-8f01-"}
	a, b := r.uid(1), r.uid(0xabcdef)
	if len(a) != UIDLen || len(b) != UIDLen || a != "01234567-89ab-4cde-8f01-000000000001" || b != "01234567-89ab-4cde-8f01-000000abcdef" {
		t.Errorf("uids %q %q", a, b)
	}
}
