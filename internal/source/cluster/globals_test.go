package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/modwright/modwright/internal/engine"
)

// fakeAPI answers apiCall entries' calls with body, counting them.
type fakeAPI struct {
	body  string
	fail  atomic.Bool
	calls atomic.Int32
}

func (f *fakeAPI) Call(_ context.Context, c engine.APICall) ([]byte, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return nil, errors.New("the API server is away")
	}
	return []byte(f.body), nil
}

func gctxEntry(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kyverno.io/v2", "kind": "GlobalContextEntry",
		"metadata": map[string]any{"name": name, "generation": int64(1)}, "spec": spec}}
}

func configMap(ns, name, team string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"team": team}}}
}

// TestGlobals keeps GlobalContextEntries from a (fake) API server: a
// kubernetesResource entry follows its objects and their projections, an
// apiCall entry holds its call's answer, a broken or refused entry holds
// its error, and an entry deleted is gone.
func TestGlobals(t *testing.T) {
	gctxGVR := schema.GroupVersionResource{Group: "kyverno.io", Version: "v2", Resource: "globalcontextentries"}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		gctxGVR: "GlobalContextEntryList", cmGVR: "ConfigMapList",
	},
		gctxEntry("teams", map[string]any{
			"kubernetesResource": map[string]any{"version": "v1", "resource": "configmaps", "namespace": "platform"},
			"projections":        []any{map[string]any{"name": "names", "jmesPath": "[].data.team | sort(@)"}},
		}),
		gctxEntry("limits", map[string]any{
			"apiCall":     map[string]any{"urlPath": "/api/v1/namespaces/platform/configmaps/limits", "refreshInterval": "1h"},
			"projections": []any{map[string]any{"name": "max", "jmesPath": "data.max"}},
		}),
		gctxEntry("secrets", map[string]any{"kubernetesResource": map[string]any{"version": "v1", "resource": "secrets"}}),
		gctxEntry("both", map[string]any{"kubernetesResource": map[string]any{"version": "v1", "resource": "configmaps"},
			"apiCall": map[string]any{"urlPath": "/api/v1/namespaces"}}),
		configMap("platform", "a", "payments"),
		configMap("platform", "b", "search"),
		configMap("elsewhere", "c", "hidden"),
	)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "kyverno.io", Version: "v2", Kind: "GlobalContextEntry"}, meta.RESTScopeRoot)
	api := &fakeAPI{body: `{"data": {"max": "10"}}`}
	g := &Globals{Client: client, Mapper: mapper, API: api, Log: logr.Discard(), MaxObjects: 3}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	read := func(name, projection string) (any, error) {
		return g.GlobalContext(ctx, name, projection)
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
		}
	}
	eventually("the entries are listed", g.Synced)
	eventually("the entries are kept", func() bool {
		_, err1 := read("teams", "names")
		_, err2 := read("limits", "max")
		return err1 == nil && err2 == nil
	})
	if v, _ := read("teams", "names"); !cmp.Equal(v, []any{"payments", "search"}) {
		t.Errorf("teams.names = %v", v)
	}
	if v, _ := read("teams", ""); len(v.([]any)) != 2 {
		t.Errorf("teams holds %v, want the 2 ConfigMaps of its namespace", v)
	}
	if v, _ := read("limits", "max"); v != "10" {
		t.Errorf("limits.max = %v", v)
	}
	if _, err := read("teams", "other"); err == nil || !strings.Contains(err.Error(), `no data for projection "other"`) {
		t.Errorf("a projection the entry has not: %v", err)
	}
	if _, err := read("absent", ""); !errors.Is(err, engine.ErrNoGlobalContextEntry) {
		t.Errorf("an entry not there: %v", err)
	}
	if _, err := read("secrets", ""); err == nil || !strings.Contains(err.Error(), "Secrets are not kept across namespaces") {
		t.Errorf("Secrets of every namespace: %v", err)
	}
	if _, err := read("both", ""); err == nil || !strings.Contains(err.Error(), "exactly one of kubernetesResource and apiCall") {
		t.Errorf("both sources: %v", err)
	}

	// The objects change: the data follows (within its staleness bound).
	if _, err := client.Resource(cmGVR).Namespace("platform").Create(ctx, configMap("platform", "c", "billing"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("a new object is seen", func() bool {
		v, _ := read("teams", "names")
		return cmp.Equal(v, []any{"billing", "payments", "search"})
	})
	// Past MaxObjects the entry holds an error, not a part of them.
	if _, err := client.Resource(cmGVR).Namespace("platform").Create(ctx, configMap("platform", "d", "ops"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the bound is enforced", func() bool {
		_, err := read("teams", "")
		return err != nil && strings.Contains(err.Error(), "holds 4 objects, more than the bound 3")
	})

	// Back within the bound: the data again.
	if err := client.Resource(cmGVR).Namespace("platform").Delete(ctx, "d", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the data back within the bound", func() bool {
		v, _ := read("teams", "names")
		return cmp.Equal(v, []any{"billing", "payments", "search"})
	})
	if _, err := client.Resource(cmGVR).Namespace("platform").Create(ctx, configMap("platform", "d", "ops"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("past the bound again", func() bool {
		_, err := read("teams", "")
		return err != nil
	})

	// The leader writes each entry's Ready condition (and an apiCall's
	// lastRefreshTime), once.
	st := &GlobalsStatus{Globals: g, Client: client, Log: logr.Discard(), written: map[string]GlobalState{}}
	st.sync(ctx)
	ready := func(name string) (status, reason, message string, refreshed bool) {
		t.Helper()
		u, err := client.Resource(gctxGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		if len(conds) != 1 {
			t.Fatalf("%s: conditions %v", name, conds)
		}
		c := conds[0].(map[string]any)
		_, refreshed, _ = unstructured.NestedString(u.Object, "status", "lastRefreshTime")
		return c["status"].(string), c["reason"].(string), fmt.Sprint(c["message"]), refreshed
	}
	if s, r, _, refreshed := ready("limits"); s != "True" || r != "Succeeded" || !refreshed {
		t.Errorf("limits: Ready %s %s, lastRefreshTime set %v", s, r, refreshed)
	}
	if s, r, m, _ := ready("secrets"); s != "False" || r != "Failed" || !strings.Contains(m, "Secrets are not kept") {
		t.Errorf("secrets: Ready %s %s %q", s, r, m)
	}
	before := len(client.Actions())
	st.sync(ctx)
	if after := len(client.Actions()); after != before {
		t.Errorf("%d calls to write states that did not change", after-before)
	}

	// Deleted: gone.
	if err := client.Resource(gctxGVR).Delete(ctx, "limits", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("a deleted entry is gone", func() bool {
		_, err := read("limits", "")
		return errors.Is(err, engine.ErrNoGlobalContextEntry)
	})
}

// TestGlobalsCallFails: an apiCall entry whose call keeps failing (after
// its retries) holds the error, and its data again once a call succeeds.
func TestGlobalsCallFails(t *testing.T) {
	gctxGVR := schema.GroupVersionResource{Group: "kyverno.io", Version: "v2", Resource: "globalcontextentries"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gctxGVR: "GlobalContextEntryList"},
		gctxEntry("limits", map[string]any{"apiCall": map[string]any{"urlPath": "/api/v1/x", "refreshInterval": "1s", "retryLimit": int64(2)}}))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "kyverno.io", Version: "v2", Kind: "GlobalContextEntry"}, meta.RESTScopeRoot)
	api := &fakeAPI{body: `{"ok": true}`}
	api.fail.Store(true)
	g := &Globals{Client: client, Mapper: mapper, API: api, Log: logr.Discard(), retry: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Start(ctx) }()
	defer func() { cancel(); <-done }()
	wait := func(what string, ok func(any, error) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			v, err := g.GlobalContext(ctx, "limits", "")
			if ok(v, err) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: got %v, %v", what, v, err)
			}
		}
	}
	wait("the call's error", func(_ any, err error) bool {
		return err != nil && strings.Contains(err.Error(), "the API server is away")
	})
	if n := api.calls.Load(); n < 2 {
		t.Errorf("%d calls: the retries were not made", n)
	}
	api.fail.Store(false)
	wait("the answer once the call succeeds", func(v any, err error) bool {
		return err == nil && cmp.Equal(v, map[string]any{"ok": true})
	})
}

// TestGlobalsNotServed: without GlobalContextEntries served (a Kyverno
// CRD set that has none), readiness waits for nothing.
func TestGlobalsNotServed(t *testing.T) {
	g := &Globals{Client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Mapper: meta.NewDefaultRESTMapper(nil), Log: logr.Discard()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Start(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); !g.Synced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not ready without GlobalContextEntries served")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
}
