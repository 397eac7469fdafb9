package generator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	return m
}

func object(apiVersion, kind, ns, name, uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace(ns)
	u.SetName(name)
	if uid != "" {
		u.SetUID(types.UID(uid))
	}
	return u
}

func newFake(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", namespaces: "NamespaceList", GenerateRequests: "GenerateRequestList"}, objs...)
}

func generated(name string, sync bool) engine.Generated {
	return engine.Generated{Kind: "ClusterPolicy", Rule: "p", Name: "r", Synchronize: sync,
		Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "team"},
			"data": map[string]any{"k": "v"}}}
}

// run starts g and waits until f holds (or fails the test).
func run(t *testing.T, g *Generator, f func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Start(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatal("not done in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCreateOnceStored: a decision's object is created once its trigger
// is stored, marked with the trigger (and its uid) and the rule; nothing
// for a dry run, a refusal or the mutating phase alone.
func TestCreateOnceStored(t *testing.T) {
	c := newFake(object("v1", "Namespace", "", "team", "u-1"))
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard(), TriggerDelay: time.Millisecond})
	req := engine.Request{Operation: rules.Create, Name: "team", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Phases: engine.Validate}
	g.Decided(req, &engine.Decision{Generated: []engine.Generated{generated("made", false)}})
	dry := req
	dry.DryRun = true
	g.Decided(dry, &engine.Decision{Generated: []engine.Generated{generated("dry", false)}})
	g.Decided(req, &engine.Decision{Generated: []engine.Generated{generated("refused", false)}, Rejections: []engine.Rejection{{Rule: "x"}}})
	mut := req
	mut.Phases = engine.Mutate
	g.Decided(mut, &engine.Decision{Generated: []engine.Generated{generated("mutating", false)}})
	if len(g.tasks) != 1 {
		t.Fatalf("%d tasks queued, want 1", len(g.tasks))
	}
	cms := c.Resource(configMaps).Namespace("team")
	run(t, g, func() bool { _, err := cms.Get(context.Background(), "made", metav1.GetOptions{}); return err == nil })
	got, _ := cms.Get(context.Background(), "made", metav1.GetOptions{})
	var trig trigger
	if err := json.Unmarshal([]byte(got.GetAnnotations()[AnnotationTrigger]), &trig); err != nil {
		t.Fatal(err)
	}
	want := trigger{APIVersion: "v1", Kind: "Namespace", Name: "team", UID: "u-1"}
	if diff := cmp.Diff(want, trig); diff != "" || got.GetLabels()[LabelGenerated] != "true" || got.GetAnnotations()[AnnotationRule] != "ClusterPolicy p rule r" {
		t.Errorf("trigger (-want +got):\n%s\nlabels %v annotations %v", diff, got.GetLabels(), got.GetAnnotations())
	}
}

// TestTriggerNotStored: no object for a trigger the API server did not
// store; the task is given up after its retries.
func TestTriggerNotStored(t *testing.T) {
	c := newFake()
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard(), TriggerDelay: time.Millisecond, Retries: 2})
	req := engine.Request{Operation: rules.Create, Name: "gone", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}}
	g.Decided(req, &engine.Decision{Generated: []engine.Generated{generated("orphan", false)}})
	run(t, g, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.tasks) == 0 })
	if _, err := c.Resource(configMaps).Namespace("team").Get(context.Background(), "orphan", metav1.GetOptions{}); err == nil {
		t.Error("an object was generated for a trigger that was never stored")
	}
}

// TestDeleteWithTrigger: a DELETE's synchronized objects are deleted when
// they were generated for that trigger (by uid), and only then.
func TestDeleteWithTrigger(t *testing.T) {
	mark := func(u *unstructured.Unstructured, uid string) *unstructured.Unstructured {
		tj, _ := json.Marshal(trigger{APIVersion: "v1", Kind: "Namespace", Name: "team", UID: uid})
		u.SetAnnotations(map[string]string{AnnotationTrigger: string(tj)})
		return u
	}
	c := newFake(mark(object("v1", "ConfigMap", "team", "mine", ""), "u-1"), mark(object("v1", "ConfigMap", "team", "other", ""), "u-0"),
		object("v1", "ConfigMap", "team", "unmarked", ""))
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard()})
	old := object("v1", "Namespace", "", "team", "u-1")
	req := engine.Request{Operation: rules.Delete, Name: "team", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}, OldObject: old.Object}
	g.Decided(req, &engine.Decision{Generated: []engine.Generated{generated("mine", true), generated("other", true), generated("unmarked", true), generated("unsynced", false)}})
	if len(g.tasks) != 3 {
		t.Fatalf("%d tasks, want 3 (not the unsynchronized object)", len(g.tasks))
	}
	run(t, g, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.tasks) == 0 })
	cms := c.Resource(configMaps).Namespace("team")
	for name, want := range map[string]bool{"mine": false, "other": true, "unmarked": true} {
		_, err := cms.Get(context.Background(), name, metav1.GetOptions{})
		if (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
}

// TestQueueBound: a full queue drops new tasks; a task for an object
// already queued replaces it.
func TestQueueBound(t *testing.T) {
	g := NewGenerator(Options{Client: newFake(), Mapper: mapper(), Log: logr.Discard(), QueueSize: 2})
	req := engine.Request{Operation: rules.Create, Name: "team", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}}
	for _, n := range []string{"a", "b", "c", "a"} {
		g.Decided(req, &engine.Decision{Generated: []engine.Generated{generated(n, false)}})
	}
	var keys []string
	for k := range g.tasks {
		keys = append(keys, k)
	}
	if len(keys) != 2 || g.tasks["create v1/ConfigMap team/c"] != nil {
		t.Errorf("tasks %v: want a and b", keys)
	}
}

// TestSameContent: a change of status or of the metadata the API server
// keeps is not a change of what a rule makes.
func TestSameContent(t *testing.T) {
	a := map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "1", "labels": map[string]any{"a": "b"}}, "spec": map[string]any{"n": int64(1)}}
	b := map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "2", "labels": map[string]any{"a": "b"}}, "spec": map[string]any{"n": int64(1)}, "status": map[string]any{"used": "3"}}
	if !sameContent(a, b) {
		t.Error("status and resourceVersion changes count as content")
	}
	b["spec"] = map[string]any{"n": int64(2)}
	if sameContent(a, b) {
		t.Error("a spec change does not count")
	}
}

// TestPatchExisting: an existing object a rule changed is patched once
// its trigger is stored; a patch whose resourceVersion test fails (the
// object changed since the rule read it) never overwrites it.
func TestPatchExisting(t *testing.T) {
	target := object("v1", "ConfigMap", "team", "settings", "")
	target.SetResourceVersion("7")
	stale := object("v1", "ConfigMap", "team", "stale", "")
	stale.SetResourceVersion("9")
	c := newFake(object("v1", "Namespace", "", "team", "u-1"), target, stale)
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard(), TriggerDelay: time.Millisecond, Retries: 2})
	req := engine.Request{Operation: rules.Update, Name: "team", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Phases: engine.Validate}
	change := func(name, rv string) engine.Generated {
		return engine.Generated{Kind: "ClusterPolicy", Rule: "p", Name: "r",
			Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "team"}},
			Patch: []patch.Operation{{Op: patch.Test, Path: patch.Pointer{"metadata", "resourceVersion"}, Value: rv},
				{Op: patch.Add, Path: patch.Pointer{"metadata", "annotations"}, Value: map[string]any{"stamped": "yes"}}}}
	}
	g.Decided(req, &engine.Decision{Generated: []engine.Generated{change("settings", "7"), change("stale", "8")}})
	run(t, g, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.tasks) == 0 })
	cms := c.Resource(configMaps).Namespace("team")
	got, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil || got.GetAnnotations()["stamped"] != "yes" {
		t.Errorf("settings: %v %v", err, got)
	}
	got, err = cms.Get(context.Background(), "stale", metav1.GetOptions{})
	if err != nil || got.GetAnnotations()["stamped"] != "" {
		t.Errorf("a stale change was applied: %v %v", err, got.GetAnnotations())
	}
}
