package cluster_test

import (
	"context"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/gatekeeper"
	"github.com/modwright/modwright/internal/source/cluster"
)

// TestInventory: the inventory holds the kinds Gatekeeper's Config and
// SyncSets name, minus the namespaces the Config keeps out of the sync
// and the operator's Secrets; its version changes with every event and
// the objects are listed again only then; a kind no configuration names
// is dropped.
func TestInventory(t *testing.T) {
	cl := fake.NewClientBuilder().WithScheme(newRuleScheme(t)).Build()
	c, _ := newTestCache(newScheme(t), cl, true)
	gvks := map[string]schema.GroupVersionKind{
		"config":  {Group: "config.gatekeeper.sh", Version: "v1alpha1", Kind: "Config"},
		"syncset": {Group: "syncset.gatekeeper.sh", Version: "v1alpha1", Kind: "SyncSet"},
		"ingress": {Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		"secret":  {Version: "v1", Kind: "Secret"},
	}
	infs := map[string]*controllertest.FakeInformer{}
	for name, gvk := range gvks {
		// Made before Start: FakeInformers' map is not safe for
		// concurrent writes.
		infs[name] = controllertest.NewFakeInformer(controllertest.Synced)
		c.InformersByGVK[gvk] = infs[name]
	}
	inv := &cluster.Inventory{Cache: c, Kinds: kinds.NewRegistry(gatekeeper.NewKind()), Log: logr.Discard(), Protected: "modwright-system"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		receive(t, "Start to return", done)
		if live := c.liveHandlers(); len(live) != 0 {
			t.Errorf("%d event handlers left registered", len(live))
		}
	})
	receive(t, "a configuration handler", c.registered)
	receive(t, "the other configuration handler", c.registered)

	obj := func(gvk schema.GroupVersionKind, ns, name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	add := func(inf string, u *unstructured.Unstructured) {
		t.Helper()
		if inf != "config" && inf != "syncset" {
			if err := cl.Create(context.Background(), u.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
		infs[inf].Add(u)
	}
	held := func() (uint64, []string) {
		t.Helper()
		v, objs, err := inv.Inventory(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range objs {
			u := unstructured.Unstructured{Object: o}
			out = append(out, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
		}
		slices.Sort(out)
		return v, out
	}
	config := obj(gvks["config"], "gatekeeper-system", "config", map[string]any{
		"sync":  map[string]any{"syncOnly": []any{map[string]any{"group": "networking.k8s.io", "version": "v1", "kind": "Ingress"}}},
		"match": []any{map[string]any{"excludedNamespaces": []any{"excluded-*"}, "processes": []any{"sync"}}},
	})
	add("config", config)
	receive(t, "the Ingress handler", c.registered)
	// Not named config: not Gatekeeper's Config.
	add("config", obj(gvks["config"], "gatekeeper-system", "other", map[string]any{
		"sync": map[string]any{"syncOnly": []any{map[string]any{"version": "v1", "kind": "Pod"}}}}))

	add("ingress", obj(gvks["ingress"], "team-a", "shop", nil))
	add("ingress", obj(gvks["ingress"], "excluded-c", "blog", nil))
	var v1 uint64
	eventually(t, "the Ingress to be held", func() bool {
		var got []string
		v1, got = held()
		return slices.Equal(got, []string{"Ingress team-a/shop"})
	})
	if v, got := held(); v != v1 || len(got) != 1 {
		t.Errorf("without events: version %d (was %d), %q", v, v1, got)
	}
	add("ingress", obj(gvks["ingress"], "team-b", "cart", nil))
	if v, got := held(); v == v1 || !slices.Equal(got, []string{"Ingress team-a/shop", "Ingress team-b/cart"}) {
		t.Errorf("after an Ingress was added: version %d (was %d), %q", v, v1, got)
	}

	// A SyncSet adds Secrets, the operator's left out.
	add("syncset", obj(gvks["syncset"], "", "secrets", map[string]any{"gvks": []any{map[string]any{"group": "", "version": "v1", "kind": "Secret"}}}))
	receive(t, "the Secret handler", c.registered)
	add("secret", obj(gvks["secret"], "modwright-system", "serving-cert", nil))
	add("secret", obj(gvks["secret"], "team-a", "token", nil))
	eventually(t, "the Secrets to be held", func() bool {
		_, got := held()
		return slices.Equal(got, []string{"Ingress team-a/shop", "Ingress team-b/cart", "Secret team-a/token"})
	})

	// The Config gone, Ingresses are no longer held.
	infs["config"].Delete(config)
	eventually(t, "the Ingresses to be dropped", func() bool {
		_, got := held()
		return slices.Equal(got, []string{"Secret team-a/token"})
	})
}
