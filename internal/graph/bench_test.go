package graph_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/modwright/modwright/internal/graph"
)

// synthetic is issue 18's cluster: 10,000 Pods (each owned by a
// ReplicaSet, using a ConfigMap and a Secret, labeled for a Service),
// 2,000 ConfigMaps, 2,000 Secrets and 1,000 Services over 100 namespaces.
func synthetic() []map[string]any {
	var objs []map[string]any
	meta := func(ns, name string, labels map[string]any) map[string]any {
		m := map[string]any{"name": name, "namespace": ns}
		if labels != nil {
			m["labels"] = labels
		}
		return m
	}
	for i := range 10000 {
		ns := fmt.Sprintf("ns-%d", i%100)
		md := meta(ns, fmt.Sprintf("pod-%d", i), map[string]any{"app": fmt.Sprintf("app-%d", i%1000)})
		md["ownerReferences"] = []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": fmt.Sprintf("rs-%d", i%1000)}}
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": map[string]any{
			"serviceAccountName": "default",
			"volumes":            []any{map[string]any{"name": "c", "configMap": map[string]any{"name": fmt.Sprintf("cm-%d", i%2000)}}},
			"containers":         []any{map[string]any{"name": "app", "envFrom": []any{map[string]any{"secretRef": map[string]any{"name": fmt.Sprintf("secret-%d", i%2000)}}}}},
		}})
	}
	for i := range 2000 {
		ns := fmt.Sprintf("ns-%d", i%100)
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(ns, fmt.Sprintf("cm-%d", i), nil)},
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta(ns, fmt.Sprintf("secret-%d", i), nil)})
	}
	for i := range 1000 {
		ns := fmt.Sprintf("ns-%d", i%100)
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta(ns, fmt.Sprintf("svc-%d", i), nil),
			"spec": map[string]any{"selector": map[string]any{"app": fmt.Sprintf("app-%d", i)}}})
	}
	return objs
}

// BenchmarkGraph measures the lookup one admission makes (the edges into
// a Secret) and reports the graph's memory for the synthetic cluster
// (MiB, the objects themselves dropped).
func BenchmarkGraph(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g := graph.Build(synthetic(), nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	mib := float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
	ref := graph.Ref{Kind: "Secret", Namespace: "ns-7", Name: "secret-7"}
	if len(g.Incoming(ref)) == 0 {
		b.Fatal("no edges into the Secret")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = g.Incoming(ref)
	}
	b.ReportMetric(mib, "graph-MiB")
	b.ReportMetric(float64(len(g.Edges())), "edges")
	runtime.KeepAlive(g)
}

// BenchmarkUpsert measures the informer's update of a Pod in the
// synthetic cluster's graph whose edges did not change (a status update,
// the common case) and one whose labels changed (its SELECTS edges are
// matched again).
func BenchmarkUpsert(b *testing.B) {
	objs := synthetic()
	g := graph.Build(objs, nil)
	pod := objs[7]
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			g.Upsert(pod)
		}
	})
	b.Run("relabeled", func(b *testing.B) {
		other := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{
			"name": "pod-7", "namespace": "ns-7", "labels": map[string]any{"app": "app-8"}}, "spec": pod["spec"]}
		pods := [2]map[string]any{pod, other}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			g.Upsert(pods[i%2])
			i++
		}
	})
}
