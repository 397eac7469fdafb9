package graphapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/graphapi"
)

func TestHandler(t *testing.T) {
	g := graph.Build([]map[string]any{
		{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web-1", "namespace": "shop", "uid": "u1", "labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "envFrom": []any{map[string]any{"secretRef": map[string]any{"name": "db"}}}}}}},
		{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "data", "namespace": "shop"}, "spec": map[string]any{"volumeName": "pv-1"}},
	}, nil)
	srv := httptest.NewServer(graphapi.Handler(g))
	defer srv.Close()
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"shop/Pod/web-1", `{"resource":{"kind":"Pod","name":"web-1","namespace":"shop","labels":{"app":"web"},"groupVersion":"v1","uid":"u1"},"incoming":[],"outgoing":[{"from":"shop/Pod/web-1","to":"shop/Secret/db","type":"USES_SECRET"}]}`, 200},
		{"shop/Secret/db/incoming", `[{"from":"shop/Pod/web-1","to":"shop/Secret/db","type":"USES_SECRET"}]`, 200},
		{"shop/Secret/db/outgoing", `[]`, 200},
		{"shop/Secret/db", `{"resource":{"kind":"Secret","name":"db","namespace":"shop"},"incoming":[{"from":"shop/Pod/web-1","to":"shop/Secret/db","type":"USES_SECRET"}],"outgoing":[]}`, 200},
		{"_/PersistentVolume/pv-1/incoming", `[{"from":"shop/PersistentVolumeClaim/data","to":"/PersistentVolume/pv-1","type":"ATTACHED_TO"}]`, 200},
		{"shop/Secret/ghost", `{"error":"resource not found: shop/Secret/ghost","code":"not_found"}`, 404},
		{"shop/Pod", `{"error":"URL must be /api/v1alpha1/resources/{namespace}/{kind}/{name}[/incoming|/outgoing]","code":"invalid_argument"}`, 400},
	} {
		resp, err := http.Get(srv.URL + graphapi.Prefix + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if d := cmp.Diff(c.want+"\n", string(body)); d != "" {
			t.Errorf("%s: -want +got:\n%s", c.path, d)
		}
	}
}
