package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
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
			if diff := cmp.Diff(tc.want, runner.Attributes(newAdmission(tc.obj, "dflt").request(tc.op))); diff != "" {
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
	r, ignored, err := newStaticResolver(docs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"context.yaml:14: an object without kind or metadata.name; ignored as context"}; !cmp.Equal(want, ignored) {
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

func TestContextData(t *testing.T) {
	ctx := context.Background()
	docs, err := source.ParseManifest("context.yaml", []byte(`
apiVersion: cli.modwright.io/v1alpha1
kind: APICallResponse
urlPath: /api/v1/namespaces/a/pods
response: {items: [{metadata: {name: p}}]}
---
apiVersion: cli.modwright.io/v1alpha1
kind: APICallResponse
urlPath: /apis/x/v1/check
method: POST
data: {name: web, count: 1}
response: {allowed: true}
---
apiVersion: cli.kyverno.io/v1alpha1
kind: UserInfo
userInfo: {username: alice, groups: [devs], extra: {scopes: [a]}}
roles: [a:dev]
clusterRoles: [view]
`))
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := newStaticResolver(docs)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.objects) != 0 {
		t.Errorf("context data served as objects: %v", r.objects)
	}
	body, err := r.Call(ctx, engine.APICall{Method: "GET", Path: "/api/v1/namespaces/a/pods"})
	if err != nil || string(body) != `{"items":[{"metadata":{"name":"p"}}]}` {
		t.Errorf("GET: %s, %v", body, err)
	}
	// The POST body is compared as JSON: key order and spacing do not matter.
	if body, err := r.Call(ctx, engine.APICall{Method: "POST", Path: "/apis/x/v1/check", Data: []byte(`{"count": 1.0, "name":"web"}`)}); err != nil || string(body) != `{"allowed":true}` {
		t.Errorf("POST: %s, %v", body, err)
	}
	for _, miss := range []engine.APICall{{Method: "GET", Path: "/nope"}, {Method: "POST", Path: "/apis/x/v1/check", Data: []byte(`{"name":"db"}`)}, {Method: "POST", Path: "/api/v1/namespaces/a/pods"}} {
		if _, err := r.Call(ctx, miss); !errors.Is(err, engine.ErrNoAPIResponse) || !strings.Contains(err.Error(), "record one in a --context file") {
			t.Errorf("%v: %v", miss, err)
		}
	}
	if u := userOf(r); u.Username != "alice" || !cmp.Equal(u.Groups, []string{"devs"}) || !cmp.Equal(u.Extra, map[string][]string{"scopes": {"a"}}) {
		t.Errorf("user %+v", u)
	}
	roles, crs, _ := r.Roles(ctx, engine.UserInfo{}, "a")
	if !cmp.Equal(roles, []string{"a:dev"}) || !cmp.Equal(crs, []string{"view"}) {
		t.Errorf("roles %v %v", roles, crs)
	}

	for _, bad := range []struct{ doc, want string }{
		{"apiVersion: cli.modwright.io/v1alpha1\nkind: APICallResponse\nresponse: 1", "urlPath is required"},
		{"apiVersion: cli.modwright.io/v1alpha1\nkind: APICallResponse\nurlPath: /x", "response is required"},
		{"apiVersion: cli.modwright.io/v1alpha1\nkind: APICallResponse\nurlPath: /x\nmethod: PUT\nresponse: 1", `method "PUT"`},
		{"apiVersion: cli.modwright.io/v1alpha1\nkind: UserInfo\nroles: [a]", "userInfo (username, groups) is required"},
		{"apiVersion: cli.modwright.io/v1alpha1\nkind: UserInfo\nuserInfo: {username: a, groups: [1]}", "groups[0] must be a string"},
		{"apiVersion: cli.modwright.io/v1alpha1\nkind: UserInfo\nuserInfo: {username: a}\n---\napiVersion: cli.modwright.io/v1alpha1\nkind: UserInfo\nuserInfo: {username: b}", "a second UserInfo"},
	} {
		docs, err := source.ParseManifest("bad.yaml", []byte(bad.doc))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := newStaticResolver(docs); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("%q: error %v, want one naming the file and saying %q", bad.doc, err, bad.want)
		}
	}
}

// TestStaticResourceFor: offline, a kind's resource is a built-in kind's,
// or the plural of a kind the context holds objects of; another kind is
// an error naming what to give.
func TestStaticResourceFor(t *testing.T) {
	docs, err := source.ParseManifest("ctx.yaml", []byte(`
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: a}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := newStaticResolver(docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ apiVersion, kind, want string }{
		{"v1", "Endpoints", "endpoints"},
		{"networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"},
		{"example.com/v1", "Widget", "widgets"},
		{"example.com/v1", "Gadget", ""},
	} {
		got, err := r.ResourceFor(tc.apiVersion, tc.kind)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("%s %s: %q, %v; want %q", tc.apiVersion, tc.kind, got, err, tc.want)
		}
	}
}
