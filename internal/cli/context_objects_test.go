package cli

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// TestContextObjectsAnswerAPI: API reads answered from the context
// objects (a Context document's and plain ones): an object, 404 for an
// absent one of a resource the context holds, lists by namespace and
// labels; paths of resources the context holds nothing of stay unanswered;
// a Context's images answer image reads.
func TestContextObjectsAnswerAPI(t *testing.T) {
	docs, err := source.ParseManifest("context.yaml", []byte(`
apiVersion: cli.kyverno.io/v1alpha1
kind: Context
metadata: {name: c}
spec:
  resources:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: team-a, labels: {app: web}}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: team-b}}
  images:
  - {image: "ghcr.io/a/b:v1", config: {created: "2026-01-01T00:00:00Z"}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: team-a}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := newStaticResolver(docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string // want: the names of the objects, or an error's text
	}{
		{"/api/v1/namespaces/team-a/configmaps/a", "a"},
		{"/api/v1/namespaces/team-a/configmaps/b", "404"},
		{"/api/v1/namespaces/team-a/configmaps", "a"},
		{"/api/v1/configmaps", "a,b"},
		{"/api/v1/configmaps?labelSelector=app%3Dweb", "a"},
		{"/api/v1/configmaps?labelSelector=app%3Ddb", ""},
		{"/apis/networking.k8s.io/v1/namespaces/team-a/networkpolicies", "deny"},
		{"/api/v1/namespaces/team-a/secrets/s", "no response"},
	} {
		b, err := r.Call(context.Background(), engine.APICall{Method: "GET", Path: tc.path})
		var got string
		switch {
		case apierrors.IsNotFound(err):
			got = "404"
		case err != nil:
			got = err.Error()
		default:
			v, _ := value.Decode(b)
			m, _ := v.(map[string]any)
			items, ok := m["items"].([]any)
			if !ok {
				items = []any{m}
			}
			var names []string
			for _, it := range items {
				md, _ := it.(map[string]any)["metadata"].(map[string]any)
				names = append(names, md["name"].(string))
			}
			got = strings.Join(names, ",")
		}
		if !strings.Contains(got, tc.want) || (tc.want == "" && got != "") {
			t.Errorf("%s: %q, want %q", tc.path, got, tc.want)
		}
	}
	if m, err := r.ImageData(context.Background(), "ghcr.io/a/b:v1"); err != nil || m["config"] == nil {
		t.Errorf("image data: %v, %v", m, err)
	}
	if _, err := r.ImageData(context.Background(), "ghcr.io/a/b:v2"); err == nil || !strings.Contains(err.Error(), "not found in the context") {
		t.Errorf("an image the context does not give: %v", err)
	}
}
