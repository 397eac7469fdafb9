package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source/cluster"
)

func TestConfigMaps(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "settings", ResourceVersion: "1"}, Data: map[string]string{"team": "blue"}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "other"}, Data: map[string]string{"x": "y"}}
	cs := k8sfake.NewClientset(cm, other)
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	cms := &cluster.ConfigMaps{Client: cs, Idle: time.Minute, Max: 2, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}
	r := &cluster.Resolver{ConfigMaps: cms}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get := func(ns, name string) map[string]any {
		t.Helper()
		obj, err := r.Get(ctx, engine.ObjectRef{Kind: "ConfigMap", Namespace: ns, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	obj := get("a", "settings")
	if d := cmp.Diff(map[string]any{"team": "blue"}, obj["data"]); d != "" || obj["kind"] != "ConfigMap" || obj["apiVersion"] != "v1" {
		t.Fatalf("ConfigMap tree %v (-want +got data:\n%s)", obj, d)
	}
	if again := get("a", "settings"); fmt.Sprintf("%p", again) != fmt.Sprintf("%p", obj) {
		t.Error("the tree is rebuilt for the same resourceVersion")
	}
	// An update reaches the next read through the watch.
	cm2 := cm.DeepCopy()
	cm2.ResourceVersion, cm2.Data["team"] = "2", "green"
	if _, err := cs.CoreV1().ConfigMaps("a").Update(ctx, cm2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update", func() bool { return get("a", "settings")["data"].(map[string]any)["team"] == "green" })
	if got := get("a", "missing"); got != nil {
		t.Errorf("a missing ConfigMap: %v", got)
	}
	if n := cms.Watched(); n != 2 {
		t.Errorf("%d watched, want 2 (settings, missing)", n)
	}
	if _, err := r.Get(ctx, engine.ObjectRef{Kind: "ConfigMap", Namespace: "a", Name: "third"}); !errors.Is(err, cluster.ErrTooManyConfigMaps) {
		t.Errorf("a third ConfigMap beyond Max 2: %v", err)
	}
	// Unread for Idle: no longer watched.
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	cms.Sweep()
	if n := cms.Watched(); n != 0 {
		t.Errorf("%d watched after the sweep, want 0", n)
	}
	if got := get("a", "other"); got["data"].(map[string]any)["x"] != "y" {
		t.Errorf("other after the sweep: %v", got)
	}
}

func TestAPIClient(t *testing.T) {
	var requests atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/api/v1/namespaces/a/pods":
			fmt.Fprint(w, `{"items": [{"metadata": {"name": "p"}}]}`)
		case "/slow":
			<-release
			fmt.Fprint(w, `{}`)
		case "/big":
			fmt.Fprint(w, `{"x": "`+strings.Repeat("a", 2000)+`"}`)
		case "/post":
			b := make([]byte, 100)
			n, _ := r.Body.Read(b)
			fmt.Fprintf(w, `{"method": %q, "body": %s}`, r.Method, b[:n])
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "the server could not find the requested resource", "reason": "NotFound", "code": 404}`)
		}
	}))
	defer srv.Close()
	defer close(release)
	rc, err := rest.UnversionedRESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{NegotiatedSerializer: clientgoscheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	c := &cluster.APIClient{REST: rc, Timeout: 200 * time.Millisecond, MaxBytes: 1000, TTL: 10 * time.Second, Now: func() time.Time { return now }}
	ctx := context.Background()
	body, err := c.Call(ctx, engine.APICall{Method: "GET", Path: "/api/v1/namespaces/a/pods"})
	if err != nil || !strings.Contains(string(body), `"p"`) {
		t.Fatalf("GET: %s, %v", body, err)
	}
	if _, err := c.Call(ctx, engine.APICall{Method: "GET", Path: "/api/v1/namespaces/a/pods"}); err != nil || requests.Load() != 1 {
		t.Errorf("a repeated read within the TTL made a request (%d requests, %v)", requests.Load(), err)
	}
	now = now.Add(11 * time.Second)
	if _, err := c.Call(ctx, engine.APICall{Method: "GET", Path: "/api/v1/namespaces/a/pods"}); err != nil || requests.Load() != 2 {
		t.Errorf("after the TTL: %d requests, %v", requests.Load(), err)
	}
	if _, err := c.Call(ctx, engine.APICall{Method: "POST", Path: "/post", Data: []byte(`{"a":1}`)}); !errors.Is(err, cluster.ErrMethodNotAllowed) {
		t.Errorf("POST without AllowPOST: %v, want ErrMethodNotAllowed", err)
	}
	c.AllowPOST = true
	body, err = c.Call(ctx, engine.APICall{Method: "POST", Path: "/post", Data: []byte(`{"a":1}`)})
	if err != nil || string(body) != `{"method": "POST", "body": {"a":1}}` {
		t.Errorf("POST: %s, %v", body, err)
	}
	if _, err := c.Call(ctx, engine.APICall{Method: "GET", Path: "/nope"}); err == nil || !strings.Contains(err.Error(), "could not find the requested resource") {
		t.Errorf("a 404: %v", err)
	}
	if _, err := c.Call(ctx, engine.APICall{Method: "GET", Path: "/big"}); !errors.Is(err, cluster.ErrResponseTooLarge) {
		t.Errorf("a response over MaxBytes: %v", err)
	}
	if _, err := c.Call(ctx, engine.APICall{Method: "GET", Path: "/slow"}); err == nil || !strings.Contains(err.Error(), "deadline") && !strings.Contains(err.Error(), "Timeout") && !strings.Contains(err.Error(), "timeout") {
		t.Errorf("a read over the timeout: %v", err)
	}
	if _, err := c.Call(ctx, engine.APICall{Method: "DELETE", Path: "/x"}); err == nil {
		t.Error("DELETE is not refused")
	}
}

func TestRoles(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rb := func(ns, name, kind, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, RoleRef: rbacv1.RoleRef{Kind: kind, Name: role}, Subjects: subjects}
	}
	user := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: "User", Name: n} }
	group := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: "Group", Name: n} }
	sa := func(ns, n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: "ServiceAccount", Namespace: ns, Name: n}
	}
	objs := []client.Object{
		rb("a", "r1", "Role", "dev", user("alice")),
		rb("b", "r2", "Role", "ops", group("devs")),
		rb("a", "r3", "ClusterRole", "edit", user("alice")),
		rb("b", "r4", "ClusterRole", "admin", user("alice")), // another namespace: not a cluster role of a request in a
		rb("a", "r5", "Role", "dev", group("devs")),          // the same role twice
		rb("ci", "r6", "Role", "deployer", sa("", "bot")),    // the binding's namespace
		rb("a", "r7", "Role", "other", user("bob")),
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{group("devs")}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "c2"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "ci"}, Subjects: []rbacv1.Subject{sa("ci", "bot")}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&rbacv1.RoleBinding{}, cluster.SubjectIndex, cluster.SubjectKeys).
		WithIndex(&rbacv1.ClusterRoleBinding{}, cluster.SubjectIndex, cluster.SubjectKeys).Build()
	r := &cluster.Roles{Reader: c}
	for _, tc := range []struct {
		user                engine.UserInfo
		ns                  string
		roles, clusterRoles []string
	}{
		{engine.UserInfo{Username: "alice", Groups: []string{"devs"}}, "a", []string{"a:dev", "b:ops"}, []string{"edit", "view"}},
		{engine.UserInfo{Username: "alice"}, "b", []string{"a:dev"}, []string{"admin"}},
		{engine.UserInfo{Username: "system:serviceaccount:ci:bot"}, "ci", []string{"ci:deployer"}, []string{"ci"}},
		{engine.UserInfo{Username: "carol"}, "a", nil, nil},
	} {
		roles, crs, err := r.Roles(context.Background(), tc.user, tc.ns)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.roles, roles); d != "" {
			t.Errorf("%s in %s: roles (-want +got):\n%s", tc.user.Username, tc.ns, d)
		}
		if d := cmp.Diff(tc.clusterRoles, crs); d != "" {
			t.Errorf("%s in %s: cluster roles (-want +got):\n%s", tc.user.Username, tc.ns, d)
		}
	}
}

// BenchmarkAPIClient measures a repeated apiCall within the TTL: served
// from the cache, it makes no request (checked), whatever b.N.
func BenchmarkAPIClient(b *testing.B) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, `{"metadata": {"annotations": {"example.com/max-replicas": "3"}}}`)
	}))
	defer srv.Close()
	rc, err := rest.UnversionedRESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{NegotiatedSerializer: clientgoscheme.Codecs.WithoutConversion()}})
	if err != nil {
		b.Fatal(err)
	}
	c := &cluster.APIClient{REST: rc, TTL: time.Hour}
	call := engine.APICall{Method: "GET", Path: "/api/v1/namespaces/shop"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Call(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
	if n := requests.Load(); n != 1 {
		b.Fatalf("%d requests for %d calls, want 1", n, b.N)
	}
}

// fakeAuthorizer allows what allow says and records what it was asked.
type fakeAuthorizer struct {
	allow func(engine.AuthzAttributes) bool
	asked []engine.AuthzAttributes
}

func (f *fakeAuthorizer) Authorize(_ context.Context, a engine.AuthzAttributes) (bool, string, error) {
	f.asked = append(f.asked, a)
	if f.allow(a) {
		return true, "", nil
	}
	return false, "no RBAC rule allows it", nil
}

// TestAPIClientRuleReader: a namespaced rule's call is made only when its
// namespace's rule reader may (a SubjectAccessReview as
// system:serviceaccount:NS:modwright-rules, the verb and resource as the
// API server reads the path); the operator's Secrets are never read, for
// any rule.
func TestAPIClientRuleReader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"path": "`+r.URL.Path+`"}`)
	}))
	defer srv.Close()
	rc, err := rest.UnversionedRESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{NegotiatedSerializer: clientgoscheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	authz := &fakeAuthorizer{allow: func(a engine.AuthzAttributes) bool {
		return a.User.Username == "system:serviceaccount:team-a:modwright-rules" && a.Resource == "configmaps" && a.Namespace == "team-a"
	}}
	c := &cluster.APIClient{REST: rc, TTL: time.Hour, Authorizer: authz, Protected: "modwright-system"}
	ctx := context.Background()
	for _, tc := range []struct {
		call    engine.APICall
		allowed bool
	}{
		{engine.APICall{Path: "/api/v1/namespaces/team-a/configmaps/settings", Owner: "team-a"}, true},
		{engine.APICall{Path: "/api/v1/namespaces/team-a/configmaps?labelSelector=a%3Db", Owner: "team-a"}, true},
		{engine.APICall{Path: "/api/v1/namespaces/team-a/secrets/token", Owner: "team-a"}, false},
		{engine.APICall{Path: "/apis/apps/v1/namespaces/team-a/deployments", Owner: "team-a"}, false},
		// A cluster-scoped rule reads as the operator...
		{engine.APICall{Path: "/api/v1/namespaces/team-a/secrets/token"}, true},
		// ... but never the operator's Secrets, nor Secrets across namespaces.
		{engine.APICall{Path: "/api/v1/namespaces/modwright-system/secrets/modwright-webhook-cert"}, false},
		{engine.APICall{Path: "/api/v1/secrets"}, false},
		{engine.APICall{Path: "/api/v1/namespaces/modwright-system/secrets"}, false},
	} {
		body, err := c.Call(ctx, tc.call)
		if tc.allowed && err != nil {
			t.Errorf("%+v: %v", tc.call, err)
		}
		if !tc.allowed && (!errors.Is(err, cluster.ErrForbidden) || body != nil) {
			t.Errorf("%+v: %s, %v; want ErrForbidden", tc.call, body, err)
		}
	}
	want := engine.AuthzAttributes{User: engine.UserInfo{Username: "system:serviceaccount:team-a:modwright-rules",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"}},
		Verb: "list", ResourceRequest: true, Version: "v1", Resource: "configmaps", Namespace: "team-a", Path: "/api/v1/namespaces/team-a/configmaps"}
	if len(authz.asked) != 4 || !cmp.Equal(authz.asked[1], want) {
		t.Errorf("asked %d times; the second: %s", len(authz.asked), cmp.Diff(want, authz.asked[1]))
	}
	_, err = c.Call(ctx, engine.APICall{Path: "/api/v1/namespaces/team-a/secrets/token", Owner: "team-a"})
	if err == nil || !strings.Contains(err.Error(), "a rule in team-a reads as system:serviceaccount:team-a:modwright-rules, which may not get secrets in team-a") {
		t.Errorf("the error names who may not do what: %v", err)
	}
}
