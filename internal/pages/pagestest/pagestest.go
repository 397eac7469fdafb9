// Package pagestest serves lists as the API server does, for tests of
// what lists through internal/pages.
package pagestest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Server serves PodLists of namespace a in pages of two (items without
// apiVersion and kind, as the API server writes a built-in kind's list;
// the first page good (labelled team: x) and bad, the second worse, each
// with spec.priority 7), a 4 KB DeploymentList in one page, Forbidden for
// any other path, and records each request's path and query. It stops
// when the test ends.
func Server(t testing.TB, requests *[]string) *httptest.Server {
	t.Helper()
	pod := func(name string, labels map[string]any) map[string]any {
		md := map[string]any{"name": name, "namespace": "a"}
		if labels != nil {
			md["labels"] = labels
		}
		return map[string]any{"metadata": md, "spec": map[string]any{"priority": 7}}
	}
	pages := map[string]map[string]any{
		"": {"apiVersion": "v1", "kind": "PodList", "metadata": map[string]any{"resourceVersion": "42", "continue": "next"},
			"items": []any{pod("good", map[string]any{"team": "x"}), pod("bad", nil)}},
		"next": {"apiVersion": "v1", "kind": "PodList", "metadata": map[string]any{"resourceVersion": "42"},
			"items": []any{pod("worse", nil)}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*requests = append(*requests, r.URL.Path+"?"+r.URL.RawQuery)
		switch r.URL.Path {
		case "/api/v1/namespaces/a/pods":
			_ = json.NewEncoder(w).Encode(pages[r.URL.Query().Get("continue")])
		case "/apis/apps/v1/deployments":
			_, _ = w.Write([]byte(`{"apiVersion":"apps/v1","kind":"DeploymentList","metadata":{},"items":[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"padding":"` + strings.Repeat("x", 4096) + `"}]}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden","reason":"Forbidden","code":403}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
