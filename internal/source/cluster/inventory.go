package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// DefaultMaxInventory bounds the objects the inventory holds.
const DefaultMaxInventory = 200_000

// Inventory is the engine's InventoryReader in the cluster (Gatekeeper's
// data.inventory): the objects of the kinds the configuration objects of
// the registry's Syncing kinds ask for (Gatekeeper's Config sync.syncOnly
// and SyncSets), read from informers of the manager's cache, started as
// the configuration names a kind (waiting for its CRD) and left alone
// when it no longer does. The version changes with every event, and the
// objects are listed again only when a rule reads them after a change.
// The operator's Secrets are never held. Excluded says which namespaces
// the configuration exempts from a process. It runs on every replica.
type Inventory struct {
	Cache cache.Cache
	Kinds *kinds.Registry
	Log   logr.Logger
	// Protected is the operator's namespace: its Secrets are never held.
	Protected string
	// MaxObjects bounds the objects held (zero: DefaultMaxInventory): a
	// larger inventory is an error for the rules that read it.
	MaxObjects int

	mu       sync.Mutex
	ctx      context.Context // Start's
	version  uint64
	configs  map[string]syncWant // by config object
	watches  map[schema.GroupVersionKind]*kindWatch
	built    uint64
	objects  []map[string]any
	excluded []func(process, namespace string) bool
}

// syncWant is what one configuration object asks for.
type syncWant struct {
	kinds    []kinds.SyncedKind
	excluded func(process, namespace string) bool
}

var (
	_ engine.InventoryReader         = (*Inventory)(nil)
	_ manager.Runnable               = (*Inventory)(nil)
	_ manager.LeaderElectionRunnable = (*Inventory)(nil)
)

// NeedLeaderElection is false: every replica reviews with its own.
func (i *Inventory) NeedLeaderElection() bool { return false }

// Start watches the configuration objects until ctx ends (each kind once
// its CRD is installed); it never blocks readiness.
func (i *Inventory) Start(ctx context.Context) error {
	i.mu.Lock()
	i.ctx = ctx
	i.configs = map[string]syncWant{}
	i.watches = map[schema.GroupVersionKind]*kindWatch{}
	i.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range i.Kinds.Kinds() {
		sk, ok := k.(kinds.Syncing)
		if !ok {
			continue
		}
		for _, sc := range sk.SyncConfigs() {
			wg.Go(func() { i.watchConfig(ctx, sk, sc) })
		}
	}
	<-ctx.Done()
	wg.Wait()
	i.mu.Lock()
	for _, w := range i.watches {
		w.stop()
	}
	ws := i.watches
	i.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
	return nil
}

// watchConfig follows the configuration objects of one kind.
func (i *Inventory) watchConfig(ctx context.Context, sk kinds.Syncing, sc kinds.SyncConfig) {
	gvk := schema.GroupVersionKind{Group: sc.Group, Version: sc.Version, Kind: sc.Kind}
	inf, err := waitInformer(ctx, i.Cache, i.Log, gvk, nil)
	if err != nil {
		if ctx.Err() == nil {
			i.Log.Error(err, "the inventory's configuration cannot be watched", "kind", gvk.String())
		}
		return
	}
	set := func(obj any, gone bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj, gone = d.Obj, true
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || (sc.Name != "" && u.GetName() != sc.Name) {
			return
		}
		key := gvk.String() + " " + u.GetNamespace() + "/" + u.GetName()
		i.mu.Lock()
		if gone {
			delete(i.configs, key)
		} else {
			ks, ex := sk.Synced(u.Object)
			i.configs[key] = syncWant{kinds: ks, excluded: ex}
		}
		i.reconcile()
		i.mu.Unlock()
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, false) },
		UpdateFunc: func(_, obj any) { set(obj, false) },
		DeleteFunc: func(obj any) { set(obj, true) },
	})
	if err != nil {
		i.Log.Error(err, "the inventory's configuration cannot be watched", "kind", gvk.String())
		return
	}
	<-ctx.Done()
	_ = inf.RemoveEventHandler(reg)
}

// reconcile watches the kinds the configuration asks for and stops
// watching the others. i.mu is held.
func (i *Inventory) reconcile() {
	want := map[schema.GroupVersionKind]bool{}
	i.excluded = i.excluded[:0]
	for _, c := range i.configs {
		for _, k := range c.kinds {
			want[schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}] = true
		}
		if c.excluded != nil {
			i.excluded = append(i.excluded, c.excluded)
		}
	}
	for gvk := range want {
		if i.watches[gvk] == nil {
			i.Log.Info("syncing a kind into the inventory", "kind", gvk.String())
			i.watches[gvk] = i.watch(gvk)
		}
	}
	for gvk, w := range i.watches {
		if !want[gvk] {
			i.Log.Info("no longer syncing a kind into the inventory", "kind", gvk.String())
			w.stop()
			delete(i.watches, gvk)
		}
	}
	i.version++
}

// watch follows one synced kind: every event changes the version.
func (i *Inventory) watch(gvk schema.GroupVersionKind) *kindWatch {
	ctx, cancel := context.WithCancel(i.ctx)
	w := &kindWatch{synced: make(chan struct{}), absent: make(chan struct{}), done: make(chan struct{})}
	w.stop = func() { w.once.Do(cancel) }
	go func() {
		defer close(w.done)
		inf, err := waitInformer(ctx, i.Cache, i.Log, gvk, func() { close(w.absent) })
		if err != nil {
			return
		}
		bump := func(any) {
			i.mu.Lock()
			i.version++
			i.mu.Unlock()
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: bump, UpdateFunc: func(_, o any) { bump(o) }, DeleteFunc: bump,
		})
		if err != nil {
			i.Log.Error(err, "a kind cannot be synced into the inventory", "kind", gvk.String())
			return
		}
		if toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			close(w.synced)
			bump(nil)
		}
		<-ctx.Done()
		// The informer stays: other readers of the manager's cache may
		// share it.
		_ = inf.RemoveEventHandler(reg)
	}()
	return w
}

// Excluded reports whether the configuration exempts namespace from a
// process (Gatekeeper's Config match: "webhook", "audit",
// "mutation-webhook", "sync").
func (i *Inventory) Excluded(process, namespace string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return namespace != "" && slices.ContainsFunc(i.excluded, func(f func(string, string) bool) bool { return f(process, namespace) })
}

// Inventory returns the synced objects (of the kinds whose informers
// have synced), listed again when they changed since the last call.
func (i *Inventory) Inventory(ctx context.Context) (uint64, []map[string]any, error) {
	i.mu.Lock()
	if i.objects != nil && i.built == i.version {
		defer i.mu.Unlock()
		return i.built, i.objects, nil
	}
	version := i.version
	var gvks []schema.GroupVersionKind
	for gvk, w := range i.watches {
		select {
		case <-w.synced:
			gvks = append(gvks, gvk)
		default:
		}
	}
	excluded := slices.Clone(i.excluded)
	i.mu.Unlock()
	slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	limit := i.MaxObjects
	if limit <= 0 {
		limit = DefaultMaxInventory
	}
	objs := []map[string]any{}
	for _, gvk := range gvks {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := i.Cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return 0, nil, fmt.Errorf("listing %s for the inventory: %w", gvk.Kind, err)
		}
		for j := range list.Items {
			u := &list.Items[j]
			ns := u.GetNamespace()
			if gvk.Group == "" && gvk.Kind == "Secret" && ns == i.Protected {
				continue
			}
			if slices.ContainsFunc(excluded, func(f func(string, string) bool) bool { return ns != "" && f("sync", ns) }) {
				continue
			}
			if len(objs) == limit {
				return 0, nil, fmt.Errorf("the inventory holds more than %d objects", limit)
			}
			objs = append(objs, u.Object)
		}
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.version == version {
		i.built, i.objects = version, objs
	}
	return version, objs, nil
}
