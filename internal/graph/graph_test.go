package graph_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/graph"
)

// randomObject is one of a few Pods, Services and Deployments of two
// namespaces, with random labels, selectors, owners and references, so
// that updates change edges of every sort.
func randomObject(r *rand.Rand) map[string]any {
	ns := fmt.Sprintf("ns-%d", r.IntN(2))
	app := func() string { return fmt.Sprintf("app-%d", r.IntN(3)) }
	md := map[string]any{"name": fmt.Sprintf("o-%d", r.IntN(4)), "namespace": ns}
	switch r.IntN(3) {
	case 0:
		md["labels"] = map[string]any{"app": app()}
		if r.IntN(2) == 0 {
			md["ownerReferences"] = []any{map[string]any{"kind": "ReplicaSet", "name": fmt.Sprintf("rs-%d", r.IntN(2))}}
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": map[string]any{
			"serviceAccountName": fmt.Sprintf("sa-%d", r.IntN(2)),
			"containers":         []any{map[string]any{"name": "c", "envFrom": []any{map[string]any{"secretRef": map[string]any{"name": fmt.Sprintf("s-%d", r.IntN(3))}}}}},
		}}
	case 1:
		spec := map[string]any{}
		if r.IntN(4) > 0 {
			spec["selector"] = map[string]any{"app": app()}
		}
		return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": md, "spec": spec}
	}
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md, "spec": map[string]any{
		"selector": map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{app(), app()}}}},
		"template": map[string]any{"spec": map[string]any{"volumes": []any{map[string]any{"name": "v", "configMap": map[string]any{"name": fmt.Sprintf("cm-%d", r.IntN(2))}}}}},
	}}
}

// TestIncremental: after any sequence of upserts and deletes, the graph
// is the one built from the objects that remain.
func TestIncremental(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		g := graph.New(nil)
		live := map[graph.Ref]map[string]any{}
		for range 60 {
			o := randomObject(r)
			ref := graph.RefOf(o)
			if r.IntN(5) == 0 {
				g.Delete(ref)
				delete(live, ref)
				continue
			}
			g.Upsert(o)
			live[ref] = o
		}
		var objs []map[string]any
		for _, o := range live {
			objs = append(objs, o)
		}
		want := graph.Build(objs, nil)
		slim := make([]map[string]any, len(objs))
		for i, o := range objs {
			slim[i] = graph.Slim(o)
		}
		if d := cmp.Diff(want.Edges(), graph.Build(slim, nil).Edges()); d != "" {
			t.Fatalf("seed %d: -whole +slim:\n%s", seed, d)
		}
		if d := cmp.Diff(want.Edges(), g.Edges()); d != "" {
			t.Fatalf("seed %d: -built +incremental:\n%s", seed, d)
		}
		if g.Len() != len(live) {
			t.Fatalf("seed %d: %d objects, want %d", seed, g.Len(), len(live))
		}
		for ref := range live {
			if d := cmp.Diff(want.Incoming(ref), g.Incoming(ref)); d != "" {
				t.Fatalf("seed %d: incoming %v: -built +incremental:\n%s", seed, ref, d)
			}
		}
	}
}

// TestSharedEdge: an edge two objects derive stays until both are gone.
func TestSharedEdge(t *testing.T) {
	shared := graph.Edge{Type: "LINKS", From: graph.Ref{Kind: "A", Name: "a"}, To: graph.Ref{Kind: "B", Name: "b"}}
	g := graph.New(func(map[string]any) []graph.Edge { return []graph.Edge{shared} })
	x := map[string]any{"apiVersion": "v1", "kind": "X", "metadata": map[string]any{"name": "x"}}
	y := map[string]any{"apiVersion": "v1", "kind": "Y", "metadata": map[string]any{"name": "y"}}
	g.Upsert(x)
	g.Upsert(y)
	g.Delete(graph.RefOf(x))
	if got := g.Incoming(shared.To); len(got) != 1 {
		t.Fatalf("after one deriver is deleted: %v", got)
	}
	g.Delete(graph.RefOf(y))
	if got := g.Edges(); len(got) != 0 {
		t.Fatalf("after both are deleted: %v", got)
	}
}

// TestObject: the graph keeps an object's identity, labels and owners.
func TestObject(t *testing.T) {
	g := graph.New(nil)
	g.Upsert(obj(t, `
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  uid: u1
  resourceVersion: "7"
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-rs, uid: u0}]
`))
	got, ok := g.Object(graph.Ref{Kind: "Pod", Namespace: "shop", Name: "web-1"})
	want := graph.Resource{Kind: "Pod", Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"}, GroupVersion: "v1",
		UID: "u1", ResourceVersion: "7", OwnerReferences: []graph.OwnerRef{{Kind: "ReplicaSet", Name: "web-rs", UID: "u0"}}}
	if !ok {
		t.Fatal("the Pod is not there")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	if _, ok := g.Object(graph.Ref{Kind: "ReplicaSet", Namespace: "shop", Name: "web-rs"}); ok {
		t.Error("an edge's end is not an object")
	}
}

// TestSlim: what the graph does not read is dropped.
func TestSlim(t *testing.T) {
	got := graph.Slim(obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  annotations: {note: big}
  managedFields: [{manager: kubectl}]
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      containers:
      - name: app
        image: nginx
        env:
        - {name: MODE, value: fast}
        - {name: KEY, valueFrom: {secretKeyRef: {name: keys, key: k}}}
status: {replicas: 3}
`))
	want := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    spec:
      serviceAccountName: web
      containers:
      - env: [{valueFrom: {secretKeyRef: {name: keys, key: k}}}]
`)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}
