package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/test/load"
)

// benchObjects is where the load test's objects live (a 3.3 KB Deployment
// with a last-applied-configuration annotation, and others).
const benchObjects = "../../testdata/bench/objects"

// benchManaged is the load test's Deployment with the
// metadata.managedFields the API server recorded creating it with
// `kubectl apply` (kubectl-client-side-apply), as every review's object
// has them.
const benchManaged = "../../testdata/bench/managed/deployment.json"

func benchReview(b *testing.B, file, namespace string) []byte {
	b.Helper()
	if !filepath.IsAbs(file) && !strings.HasPrefix(file, "../") {
		file = filepath.Join(benchObjects, file)
	}
	obj, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	body, err := load.NewReview(obj, namespace)
	if err != nil {
		b.Fatal(err)
	}
	return body.Body("00000000-0000-0000-0000-000000000001")
}

// BenchmarkDecodeEncode is what any Go webhook pays per review with
// encoding/json (the floor server's work): decode the review with the
// object into a generic tree, encode an "allowed" response with a one-op
// patch.
func BenchmarkDecodeEncode(b *testing.B) {
	benchDecodeEncode(b, benchReview(b, "deployment.json", ""))
}

// BenchmarkDecodeEncodeManagedFields is BenchmarkDecodeEncode with the
// Deployment's managedFields.
func BenchmarkDecodeEncodeManagedFields(b *testing.B) {
	benchDecodeEncode(b, benchReview(b, benchManaged, ""))
}

func benchDecodeEncode(b *testing.B, body []byte) {
	type floorReview struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Request    struct {
			UID    string         `json:"uid"`
			Object map[string]any `json:"object"`
		} `json:"request"`
	}
	type floorResponse struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   struct {
			UID       string `json:"uid"`
			Allowed   bool   `json:"allowed"`
			PatchType string `json:"patchType"`
			Patch     []byte `json:"patch"`
		} `json:"response"`
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var rv floorReview
		if err := json.Unmarshal(body, &rv); err != nil {
			b.Fatal(err)
		}
		patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/metadata/annotations/floor", "value": "yes"}})
		if err != nil {
			b.Fatal(err)
		}
		var out floorResponse
		out.APIVersion, out.Kind = rv.APIVersion, rv.Kind
		out.Response.UID, out.Response.Allowed, out.Response.PatchType, out.Response.Patch = rv.Request.UID, true, "JSONPatch", patch
		if _, err := json.Marshal(&out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandler measures the dragnet handler without the network: body
// in, response out, with the load test's rule sets. The goroutine cases
// call it as net/http's HTTP/2 server does, each review on a new goroutine
// whose small stack grows by copying as it goes deeper.
func BenchmarkHandler(b *testing.B) {
	for _, bc := range []struct {
		name            string
		total, matching int
		namespace       string
		object          string
		goroutine       bool
	}{
		{"rules=0", 0, 0, "", "deployment.json", false},
		{"rules=100/matching=10", 100, 10, "", "deployment.json", false},
		{"rules=100/matching=10/goroutine", 100, 10, "", "deployment.json", true},
		{"rules=100/matching=10/managedFields", 100, 10, "", benchManaged, false},
		{"rules=100/matching=10/pod", 100, 10, "", "pod.json", false},
		{"rules=100/matching=10/service", 100, 10, "", "service.json", false},
		{"rules=100/matching=10/configmap", 100, 10, "", "configmap.json", false},
		{"rules=100/matching=10/namespace", 100, 10, "", "namespace.json", false},
		{"rules=1000/matching=10", 1000, 10, "", "deployment.json", false},
		{"rules=1000/none-apply", 1000, 10, "quiet", "deployment.json", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var rs []engine.Rule
			if bc.total > 0 {
				docs, err := source.ParseManifest("rules.yaml", load.RuleSet(bc.total, bc.matching))
				if err != nil {
					b.Fatal(err)
				}
				res := source.LoadRules(docs, testKinds())
				if len(res.Errors) > 0 {
					b.Fatal(res.Errors)
				}
				rs = res.Rules
			}
			st := &source.Store{}
			st.Publish(engine.NewSnapshot(rs))
			h := NewDragnet(Options{Evaluator: engine.New(engine.Options{NoTrace: true}), Snapshots: st, Log: logr.Discard()})
			body := benchReview(b, bc.object, bc.namespace)
			req := httptest.NewRequest(http.MethodPost, DragnetPath+"?timeout=10s", nil)
			req.Header.Set("Content-Type", "application/json")
			rec := &discardWriter{h: http.Header{}}
			serve := h.ServeHTTP
			if bc.goroutine {
				done := make(chan struct{})
				serve = func(w http.ResponseWriter, r *http.Request) {
					go func() {
						h.ServeHTTP(w, r)
						done <- struct{}{}
					}()
					<-done
				}
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req.Body = readCloser{bytes.NewReader(body)}
				req.ContentLength = int64(len(body))
				rec.code = 0
				serve(rec, req)
				if rec.code != 0 && rec.code != http.StatusOK {
					b.Fatalf("HTTP %d", rec.code)
				}
			}
		})
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// SetReadDeadline is what net/http's ResponseWriters do for
// http.ResponseController (a deadline on the connection, no allocation);
// without it the controller would allocate an ErrNotSupported error per
// review, which no server pays.
func (w *discardWriter) SetReadDeadline(time.Time) error { return nil }
