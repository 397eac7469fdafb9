package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// TestAdmissionRequest: offline, the engine request carries what the
// object and the flags tell (operation, name, namespace, kind with group
// and version) and leaves the rest empty (resource, user, uid, options).
func TestAdmissionRequest(t *testing.T) {
	deploy := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "team-a"}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a"}}
	bare := map[string]any{"kind": "Widget", "metadata": map[string]any{"generateName": "w-"}}
	for _, tc := range []struct {
		name string
		obj  map[string]any
		op   rules.Operation
		want engine.Request
	}{
		{"namespaced", deploy, rules.Create, engine.Request{Operation: rules.Create, Name: "web", Namespace: "team-a",
			Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: deploy}},
		{"default namespace", pod, rules.Update, engine.Request{Operation: rules.Update, Name: "p", Namespace: "dflt",
			Kind: engine.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: pod}},
		{"cluster-scoped", ns, rules.Create, engine.Request{Operation: rules.Create, Name: "team-a",
			Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Object: ns}},
		{"delete", deploy, rules.Delete, engine.Request{Operation: rules.Delete, Name: "web", Namespace: "team-a",
			Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, OldObject: deploy}},
		{"no apiVersion, no name", bare, rules.Create, engine.Request{Operation: rules.Create, Namespace: "dflt",
			Kind: engine.GroupVersionKind{Kind: "Widget"}, Object: bare}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, newAdmission(tc.obj, "dflt").request(tc.op)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestStaticResolver: --context objects of any kind are read by reference;
// the reference must match group, kind, namespace and name.
func TestStaticResolver(t *testing.T) {
	docs, err := source.ParseManifest("context.yaml", []byte(`
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {env: prod}}
---
apiVersion: v1
kind: Node
metadata: {name: team-a, namespace: ignored, labels: {is: node}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: team-a}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, ignored := newStaticResolver(docs)
	if want := []string{"context.yaml, document 4: an object without kind or metadata.name; ignored as context"}; !cmp.Equal(want, ignored) {
		t.Errorf("warnings %q, want %q", ignored, want)
	}
	for _, tc := range []struct {
		ref  engine.ObjectRef
		want int // index in docs, -1: not found
	}{
		{engine.ObjectRef{Kind: "Namespace", Name: "team-a"}, 0},
		{engine.ObjectRef{Kind: "Node", Name: "team-a"}, 1}, // cluster-scoped: its metadata.namespace does not count
		{engine.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "web"}, 2},
		{engine.ObjectRef{Kind: "Deployment", Namespace: "team-a", Name: "web"}, -1},
		{engine.ObjectRef{Group: "apps", Kind: "Deployment", Name: "web"}, -1},
		{engine.ObjectRef{Kind: "Namespace", Name: "team-b"}, -1},
		{engine.ObjectRef{Kind: "ConfigMap", Namespace: "team-a"}, -1},
	} {
		got, err := r.Get(t.Context(), tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if tc.want >= 0 {
			want = docs[tc.want].Object
		}
		if !cmp.Equal(want, got) {
			t.Errorf("Get(%v) = %v, want %v", tc.ref, got, want)
		}
	}
}
