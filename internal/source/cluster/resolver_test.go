package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/source/cluster"
)

var _ engine.ObjectReader = (*cluster.Resolver)(nil)

// getNS and getNode read a Namespace and a Node by reference, as the
// engine does.
func getNS(r engine.ObjectReader) func(context.Context, string) (map[string]any, error) {
	return func(ctx context.Context, name string) (map[string]any, error) {
		return r.Get(ctx, engine.ObjectRef{Kind: "Namespace", Name: name})
	}
}

func getNode(r engine.ObjectReader) func(context.Context, string) (map[string]any, error) {
	return func(ctx context.Context, name string) (map[string]any, error) {
		return r.Get(ctx, engine.ObjectRef{Kind: "Node", Name: name})
	}
}

func resolverObjects() []client.Object {
	return []client.Object{
		&corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"env": "prod"}, Annotations: map[string]string{"owner": "a"}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		},
		&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"topology.kubernetes.io/zone": "z1"}},
			Spec:       corev1.NodeSpec{Unschedulable: true},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"),
			}},
		},
		// A Namespace and a Node of the same name must not be mixed up.
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shared", Labels: map[string]string{"is": "namespace"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "shared", Labels: map[string]string{"is": "node"}}},
	}
}

// resolverClient returns a fake client holding resolverObjects, and a count
// of its Get calls.
func resolverClient(t *testing.T, getErr error) (client.WithWatch, *atomic.Int32) {
	t.Helper()
	var gets atomic.Int32
	cl := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(resolverObjects()...).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				gets.Add(1)
				if getErr != nil {
					return getErr
				}
				return c.Get(ctx, key, obj, opts...)
			},
		}).Build()
	return cl, &gets
}

// jsonOf returns obj as the API server would serve it, as a JSON tree
// decoded with numbers as json.Number (what value.Decode builds).
func jsonOf(t *testing.T, obj client.Object, kind string) map[string]any {
	t.Helper()
	obj = obj.DeepCopyObject().(client.Object)
	obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestResolver(t *testing.T) {
	ctx := t.Context()
	cl, _ := resolverClient(t, nil)
	r := &cluster.Resolver{Reader: cl}

	stored := func(obj client.Object) client.Object {
		t.Helper()
		if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}

	tests := []struct {
		name    string
		resolve func(context.Context, string) (map[string]any, error)
		arg     string
		want    map[string]any // nil: not found
	}{
		{"namespace", getNS(r), "team-a", jsonOf(t, stored(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}), "Namespace")},
		{"node", getNode(r), "node-1", jsonOf(t, stored(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}), "Node")},
		{"namespace sharing a node's name", getNS(r), "shared", jsonOf(t, stored(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}), "Namespace")},
		{"node sharing a namespace's name", getNode(r), "shared", jsonOf(t, stored(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}), "Node")},
		{"missing namespace", getNS(r), "nope", nil},
		{"missing node", getNode(r), "nope", nil},
		{"namespace named like a node", getNS(r), "node-1", nil},
		{"node named like a namespace", getNode(r), "team-a", nil},
		{"no namespace", getNS(r), "", nil},
		{"no node", getNode(r), "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Twice: the second answer comes from the resolver's tree cache.
			for range 2 {
				got, err := tt.resolve(ctx, tt.arg)
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if tt.want == nil {
					if got != nil {
						t.Fatalf("got %v, want nil for a missing object", got)
					}
					continue
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Fatalf("(-want +got):\n%s", diff)
				}
			}
		})
	}

	// Spot checks of the shape rules select from.
	ns, _ := getNS(r)(ctx, "team-a")
	node, _ := getNode(r)(ctx, "node-1")
	for _, c := range []struct {
		tree map[string]any
		path []string
		want any
	}{
		{ns, []string{"apiVersion"}, "v1"},
		{ns, []string{"kind"}, "Namespace"},
		{ns, []string{"metadata", "name"}, "team-a"},
		{ns, []string{"metadata", "labels", "env"}, "prod"},
		{ns, []string{"metadata", "annotations", "owner"}, "a"},
		{ns, []string{"status", "phase"}, "Active"},
		{node, []string{"kind"}, "Node"},
		{node, []string{"metadata", "labels", "topology.kubernetes.io/zone"}, "z1"},
		{node, []string{"spec", "unschedulable"}, true},
		{node, []string{"status", "capacity", "cpu"}, "4"},
	} {
		if got := lookup(c.tree, c.path...); got != c.want {
			t.Errorf("%v = %#v, want %#v", c.path, got, c.want)
		}
	}
}

// TestResolverKinds: the cluster reader serves Namespaces and Nodes; any
// other kind (or group) is an error wrapping engine.ErrKindNotServed, and
// a namespaced reference to either kind finds nothing; neither reads the
// cache.
func TestResolverKinds(t *testing.T) {
	cl, gets := resolverClient(t, nil)
	r := &cluster.Resolver{Reader: cl}
	for _, tc := range []struct {
		ref     engine.ObjectRef
		wantErr string // "": nil, nil
	}{
		{engine.ObjectRef{Kind: "Pod", Namespace: "team-a", Name: "p"}, "Pod team-a/p: the object reader does not serve this kind (the cluster reader caches Namespaces and Nodes only)"},
		{engine.ObjectRef{Kind: "ConfigMap", Name: "team-a"}, "ConfigMap team-a: the object reader does not serve this kind"},
		{engine.ObjectRef{Group: "apps", Kind: "Namespace", Name: "team-a"}, "Namespace.apps team-a: the object reader does not serve this kind"},
		{engine.ObjectRef{Kind: "Namespace", Namespace: "team-a", Name: "team-a"}, ""},
		{engine.ObjectRef{Kind: "Node", Namespace: "team-a", Name: "node-1"}, ""},
	} {
		m, err := r.Get(t.Context(), tc.ref)
		if m != nil {
			t.Errorf("Get(%v) = %v, want nil", tc.ref, m)
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Get(%v): %v, want nil, nil", tc.ref, err)
		case tc.wantErr != "" && (!errors.Is(err, engine.ErrKindNotServed) || !strings.HasPrefix(err.Error(), tc.wantErr)):
			t.Errorf("Get(%v): %v, want an error wrapping engine.ErrKindNotServed starting %q", tc.ref, err, tc.wantErr)
		}
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("%d reads of the cache, want none", n)
	}
}

func TestResolverEmptyNameReadsNothing(t *testing.T) {
	cl, gets := resolverClient(t, nil)
	r := &cluster.Resolver{Reader: cl}
	for _, f := range []func(context.Context, string) (map[string]any, error){getNS(r), getNode(r)} {
		if m, err := f(t.Context(), ""); m != nil || err != nil {
			t.Errorf("got %v, %v for an empty name, want nil, nil", m, err)
		}
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("an empty name read the cache %d times, want none", n)
	}
}

func TestResolverFollowsResourceVersion(t *testing.T) {
	ctx := t.Context()
	cl, _ := resolverClient(t, nil)
	r := &cluster.Resolver{Reader: cl}

	first, err := getNS(r)(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	again, err := getNS(r)(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(first).UnsafePointer() != reflect.ValueOf(again).UnsafePointer() {
		t.Error("the same resourceVersion built a new tree; want the shared one")
	}

	var ns corev1.Namespace
	if err := cl.Get(ctx, client.ObjectKey{Name: "team-a"}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["env"] = "staging"
	if err := cl.Update(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	updated, err := getNS(r)(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(updated, "metadata", "labels", "env"); got != "staging" {
		t.Errorf("after the update metadata.labels.env = %v, want staging", got)
	}
	if got := lookup(updated, "metadata", "resourceVersion"); got != ns.ResourceVersion {
		t.Errorf("metadata.resourceVersion = %v, want %s", got, ns.ResourceVersion)
	}
	if got := lookup(first, "metadata", "labels", "env"); got != "prod" {
		t.Errorf("the tree served before the update changed: metadata.labels.env = %v, want prod", got)
	}

	// Deleted: not found, even though a tree was built before.
	if err := cl.Delete(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	if m, err := getNS(r)(ctx, "team-a"); m != nil || err != nil {
		t.Errorf("after the deletion got %v, %v; want nil, nil", m, err)
	}
}

// TestResolverForgetsDeleted checks that the trees of deleted objects are
// dropped, both when a read finds the object gone and when the informer
// reports the deletion (directly or as a tombstone).
func TestResolverForgetsDeleted(t *testing.T) {
	ctx := t.Context()
	cl, _ := resolverClient(t, nil)
	r := &cluster.Resolver{Reader: cl}
	nsInf, nodeInf := &handlerInformer{}, &handlerInformer{}
	if err := r.Watch(nsInf, nodeInf); err != nil {
		t.Fatal(err)
	}
	get := func(obj client.Object) client.Object {
		t.Helper()
		if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	for _, f := range []func(context.Context, string) (map[string]any, error){getNS(r), getNode(r)} {
		for _, name := range []string{"team-a", "node-1", "shared"} {
			if _, err := f(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := r.Cached(); n != 4 {
		t.Fatalf("%d trees cached, want 4 (two namespaces, two nodes)", n)
	}

	// Deleted in the cache: the next read drops the tree.
	ns := get(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
	if err := cl.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if m, err := getNS(r)(ctx, "team-a"); m != nil || err != nil {
		t.Fatalf("Namespace(team-a) after its deletion = %v, %v", m, err)
	}
	if n := r.Cached(); n != 3 {
		t.Errorf("%d trees cached after reading a deleted namespace, want 3", n)
	}

	// Deletions reported by the informers, never read again; the node
	// named like a namespace goes, the namespace stays.
	nodeInf.Delete(get(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}))
	if n := r.Cached(); n != 2 {
		t.Errorf("%d trees cached after the node shared was deleted, want 2", n)
	}
	if m, err := getNS(r)(ctx, "shared"); lookup(m, "metadata", "labels", "is") != "namespace" || err != nil {
		t.Errorf("Namespace(shared) = %v, %v after the node of that name was deleted", m, err)
	}
	// A deletion learned from a relist comes as a tombstone.
	node1 := get(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	for _, h := range nodeInf.handlers {
		h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "node-1", Obj: node1})
	}
	nsInf.Delete(get(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}))
	if n := r.Cached(); n != 0 {
		t.Errorf("%d trees cached after every object was deleted, want 0", n)
	}
}

// handlerInformer is a FakeInformer that keeps its handlers, so that a
// test can send what FakeInformer cannot (a tombstone).
type handlerInformer struct {
	controllertest.FakeInformer
	handlers []toolscache.ResourceEventHandler
}

func (f *handlerInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.handlers = append(f.handlers, h)
	return f.FakeInformer.AddEventHandler(h)
}

func TestResolverReadError(t *testing.T) {
	injected := errors.New("injected read error")
	cl, _ := resolverClient(t, injected)
	r := &cluster.Resolver{Reader: cl}
	for name, f := range map[string]func(context.Context, string) (map[string]any, error){"Namespace": getNS(r), "Node": getNode(r)} {
		m, err := f(t.Context(), "team-a")
		if !errors.Is(err, injected) || m != nil {
			t.Errorf("%s with a failing cache = %v, %v; want nil and an error wrapping %v", name, m, err, injected)
		}
	}
}

func TestResolverConcurrent(t *testing.T) {
	cl, _ := resolverClient(t, nil)
	r := &cluster.Resolver{Reader: cl}
	var wg sync.WaitGroup
	errs := make(chan error, 8*50)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				var m map[string]any
				var err error
				var want string
				if (g+i)%2 == 0 {
					m, err = getNS(r)(t.Context(), "shared")
					want = "namespace"
				} else {
					m, err = getNode(r)(t.Context(), "shared")
					want = "node"
				}
				if got := lookup(m, "metadata", "labels", "is"); err != nil || got != want {
					errs <- fmt.Errorf("goroutine %d call %d: got %v, %v; want %s", g, i, got, err, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// lookup follows path through nested maps; nil when absent.
func lookup(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return v
}

// TestKindsProtected: the operator's Secrets, and Secrets across
// namespaces, are never read for a rule; other Secrets are.
func TestKindsProtected(t *testing.T) {
	cl := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "modwright-system", Name: "modwright-webhook-cert"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "token"}},
	).Build()
	k := &cluster.Kinds{Reader: cl, Protected: "modwright-system"}
	if _, err := k.GetKind(t.Context(), "v1", "Secret", "modwright-system", "modwright-webhook-cert"); !errors.Is(err, cluster.ErrForbidden) {
		t.Errorf("the operator's Secret: %v", err)
	}
	if _, err := k.ListKind(t.Context(), "v1", "Secret", "", "", 0); !errors.Is(err, cluster.ErrForbidden) {
		t.Errorf("Secrets across namespaces: %v", err)
	}
	if _, err := k.ListKind(t.Context(), "v1", "Secret", "modwright-system", "", 0); !errors.Is(err, cluster.ErrForbidden) {
		t.Errorf("the operator's Secrets: %v", err)
	}
	if s, err := k.GetKind(t.Context(), "v1", "Secret", "team-a", "token"); err != nil || s == nil {
		t.Errorf("a tenant's Secret: %v, %v", s, err)
	}
}

var (
	_ kyverno.ScopeReader      = (*cluster.Kinds)(nil)
	_ kyverno.KindResolver     = (*cluster.Kinds)(nil)
	_ kyverno.ResourceResolver = (*cluster.Kinds)(nil)
)

// TestKindsNamespaced: a kind's scope is the REST mapper's (a custom
// kind's as its CRD declares it); without a mapper, a built-in kind's.
func TestKindsNamespaced(t *testing.T) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Limits"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	for _, tc := range []struct {
		k                *cluster.Kinds
		apiVersion, kind string
		want             bool
		err              bool
	}{
		{&cluster.Kinds{Mapper: m}, "example.com/v1", "Limits", false, false},
		{&cluster.Kinds{Mapper: m}, "v1", "ConfigMap", true, false},
		{&cluster.Kinds{Mapper: m}, "example.com/v1", "Unknown", false, true},
		{&cluster.Kinds{}, "v1", "Namespace", false, false},
		{&cluster.Kinds{}, "v1", "ConfigMap", true, false},
	} {
		got, err := tc.k.Namespaced(tc.apiVersion, tc.kind)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s %s: %v, %v; want %v (error: %v)", tc.apiVersion, tc.kind, got, err, tc.want, tc.err)
		}
	}
}

// TestKindsResourceFor: a kind's resource is the REST mapper's (a custom
// kind's as its CRD names it, not a guess); without a mapper, an error.
func TestKindsResourceFor(t *testing.T) {
	m := meta.NewDefaultRESTMapper(nil)
	m.AddSpecific(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Limits"},
		schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "quotalimits"},
		schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "limits"}, meta.RESTScopeRoot)
	for _, tc := range []struct {
		k                *cluster.Kinds
		apiVersion, kind string
		want             string
	}{
		{&cluster.Kinds{Mapper: m}, "example.com/v1", "Limits", "quotalimits"},
		{&cluster.Kinds{Mapper: m}, "example.com/v1", "Unknown", ""},
		{&cluster.Kinds{}, "v1", "ConfigMap", ""},
	} {
		got, err := tc.k.ResourceFor(tc.apiVersion, tc.kind)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("%s %s: %q, %v; want %q", tc.apiVersion, tc.kind, got, err, tc.want)
		}
	}
}
