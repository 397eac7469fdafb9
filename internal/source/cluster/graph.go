package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/lang/rego"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/pages"
)

// CoreResource is a kind the graph watches from the start.
type CoreResource struct {
	GVR  schema.GroupVersionResource
	Kind string
}

// CoreResources are the kinds the built-in extractors read
// (docs/graph.md): their edges, and the Pods SELECTS edges reach.
func CoreResources() []CoreResource {
	r := func(group, version, resource, kind string) CoreResource {
		return CoreResource{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, Kind: kind}
	}
	return []CoreResource{
		r("", "v1", "pods", "Pod"),
		r("", "v1", "services", "Service"),
		r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
		r("", "v1", "replicationcontrollers", "ReplicationController"),
		r("apps", "v1", "deployments", "Deployment"),
		r("apps", "v1", "statefulsets", "StatefulSet"),
		r("apps", "v1", "daemonsets", "DaemonSet"),
		r("apps", "v1", "replicasets", "ReplicaSet"),
		r("batch", "v1", "jobs", "Job"),
		r("batch", "v1", "cronjobs", "CronJob"),
		r("networking.k8s.io", "v1", "ingresses", "Ingress"),
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// GraphSource keeps the relationship graph of the cluster (docs/graph.md)
// and is the engine's GraphReader there. Informers of unstructured objects
// feed it: one per core kind from the start, and, for every
// CustomResourceDefinition whose kind a rule pack routes, one for the
// CRD's storage version, started when the CRD is established and stopped
// when it is deleted (its edges are kept: a CRD deleted by accident and
// created again loses nothing). Objects are slimmed on ingest to what the
// graph reads (graph.Slim), whole only for the kinds packs route.
//
// It is a manager Runnable every replica runs.
type GraphSource struct {
	Client dynamic.Interface
	// Pages lists the informers' initial objects; nil: pages.Dynamic over
	// Client. In the cluster pages.Raw, which decodes faster.
	Pages pages.Lister
	// Packs route custom resources (and core kinds) to Rego modules; nil:
	// built-in edges only.
	Packs   *packs.Router
	Core    []CoreResource // nil: CoreResources()
	Log     logr.Logger
	Metrics *metrics.Graph
	Resync  time.Duration

	once  sync.Once
	g     *graph.Graph
	cache *packs.Cache

	mu sync.Mutex
	// synced: each running informer's, by "core:<resource>", "crds" and
	// "crd:<name>".
	synced  map[string]cache.InformerSynced
	crds    map[string]*crdWatch // by CRD name
	started bool
}

// ListPageSize is how many objects one page of an informer's list holds.
const ListPageSize = 500

// IdentityListWatch lists and watches a resource for an informer that
// stores objects' identities only (*metav1.PartialObjectMetadata): the
// list is read page by page through list (ListPageSize objects, a
// consistent read; pages.Raw decodes them about three times as fast as
// client-go) and each object handed to take, whose identity is kept,
// before the next page is read, so that no more than one page of whole
// objects is held at once. client-go's reflector, when it lists (the API
// server does not stream the initial objects), gathers the whole list
// before its transform runs: 16,000 Pods of 3 KB are then about a
// gigabyte at once. An informer of it may still stream, as the reflector
// asks, through ri: its transform then sees each object as it comes.
func IdentityListWatch(list pages.Lister, ri dynamic.ResourceInterface, gvr schema.GroupVersionResource, take func(map[string]any) *metav1.PartialObjectMetadata) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			// From etcd, in pages: the watch cache's answer to
			// resourceVersion 0 is the whole list in one response.
			out := &metav1.PartialObjectMetadataList{}
			pager := &pages.Pager{Lister: list, GVR: gvr, Limit: ListPageSize}
			for {
				page, ok, err := pager.Next(ctx)
				if err != nil {
					return nil, err
				}
				if !ok {
					return out, nil
				}
				if out.ResourceVersion == "" {
					// Every page of a list is of its first page's version.
					out.ResourceVersion = page.ResourceVersion
				}
				for i, obj := range page.Items {
					out.Items = append(out.Items, *take(obj))
					page.Items[i] = nil // the collector may take it before the page ends
				}
			}
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, opts)
		},
	}
}

// crdWatch is the informer of one CRD's kind.
type crdWatch struct {
	gvr  schema.GroupVersionResource
	kind string
	stop context.CancelFunc
}

var (
	_ engine.GraphReader = (*GraphSource)(nil)
)

// Graph is the graph the source keeps (for the read endpoint).
func (s *GraphSource) Graph() *graph.Graph {
	s.init()
	return s.g
}

func (s *GraphSource) init() {
	s.once.Do(func() {
		var derive graph.Deriver
		if s.Packs != nil {
			s.cache = packs.NewCache(s.Packs.Derive, s.Packs.Hash(), 0)
			derive = func(obj map[string]any) []graph.Edge {
				edges, errs := s.cache.Derive(context.Background(), obj)
				for _, err := range errs {
					s.Metrics.EvalError(evalReason(err))
					s.Log.Error(err, "a rule pack's module failed; its edges of this object are skipped", "object", graph.RefOf(obj))
				}
				return edges
			}
		}
		s.g = graph.New(derive)
		s.crds = map[string]*crdWatch{}
		s.synced = map[string]cache.InformerSynced{}
	})
}

// CacheStats are the packs' derivation cache's hits and misses (0 without
// packs).
func (s *GraphSource) CacheStats() (hits, misses int64) {
	s.init()
	if s.cache == nil {
		return 0, 0
	}
	return s.cache.Stats()
}

func evalReason(err error) string {
	switch {
	case errors.Is(err, rego.ErrEvalTimeout):
		return "timeout"
	case errors.Is(err, rego.ErrEvalPanic):
		return "panic"
	case errors.Is(err, packs.ErrShape):
		return "shape"
	}
	return "error"
}

// NeedLeaderElection: every replica answers admission with its own graph.
func (*GraphSource) NeedLeaderElection() bool { return false }

// Start runs the informers until ctx ends.
func (s *GraphSource) Start(ctx context.Context) error {
	s.init()
	core := s.Core
	if core == nil {
		core = CoreResources()
	}
	for _, r := range core {
		s.run(ctx, "core:"+r.GVR.String(), r.GVR, r.Kind, nil)
	}
	if s.Packs != nil {
		s.watchCRDs(ctx)
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		s.Metrics.Size(s.g.Size())
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Synced reports whether every informer started so far has listed its
// objects (readiness waits for it: a graph that is still filling would
// let a DELETE of a Secret in use through).
func (s *GraphSource) Synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return false
	}
	for _, ok := range s.synced {
		if !ok() {
			return false
		}
	}
	return true
}

// run starts an informer of gvr feeding the graph, known as key; it
// stops with ctx. keep, when set, says whether a deletion is to be ignored
// (the object's edges kept).
//
// The graph keeps what it reads of each object (its identity, labels,
// owners and edges), so the informer's store keeps only each object's
// identity (*metav1.PartialObjectMetadata): each object reaches the graph
// once as it arrives, slimmed, in order: a listed one as its page is read
// (IdentityListWatch), a streamed or watched one in the informer's
// transform (an identity handed again on a resync or relist is left as
// it is). A deletion reaches the handler with that identity. The store
// then holds about 200 bytes an object instead of the slimmed object the
// graph holds anyway, and an initial list one page of whole objects.
func (s *GraphSource) run(ctx context.Context, key string, gvr schema.GroupVersionResource, kind string, keep func() bool) {
	whole := s.Packs != nil && len(s.Packs.Route(gvr.Group, kind)) > 0
	take := func(obj map[string]any) *metav1.PartialObjectMetadata {
		id := identityOf(obj)
		if whole {
			// A pack reads any field: keep all but managedFields.
			unstructured.RemoveNestedField(obj, "metadata", "managedFields")
		} else {
			obj = graph.Slim(obj)
		}
		s.g.Upsert(obj)
		return id
	}
	list := s.Pages
	if list == nil {
		list = pages.Dynamic{Client: s.Client}
	}
	inf := cache.NewSharedIndexInformer(IdentityListWatch(list, s.Client.Resource(gvr), gvr, take), &unstructured.Unstructured{}, s.Resync, cache.Indexers{})
	_ = inf.SetTransform(func(o any) (any, error) {
		if u, ok := o.(*unstructured.Unstructured); ok {
			return take(u.Object), nil
		}
		return o, nil // an identity
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// Adds and updates reached the graph as they came.
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if m, ok := o.(*metav1.PartialObjectMetadata); ok && (keep == nil || !keep()) {
				s.g.Delete(graph.Ref{Kind: m.Kind, Namespace: m.Namespace, Name: m.Name})
			}
		},
	})
	s.mu.Lock()
	s.synced[key] = inf.HasSynced
	s.Metrics.Informers(len(s.synced))
	s.mu.Unlock()
	go inf.Run(ctx.Done())
}

// identityOf is what an informer of the graph stores of an object.
func identityOf(obj map[string]any) *metav1.PartialObjectMetadata {
	u := &unstructured.Unstructured{Object: obj}
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion()}}
}

// watchCRDs starts and stops the informers of the custom resources packs
// route, as their CRDs come and go.
func (s *GraphSource) watchCRDs(ctx context.Context) {
	inf := dynamicinformer.NewFilteredDynamicInformer(s.Client, crdGVR, "", s.Resync, cache.Indexers{}, nil).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.crdChanged(ctx, o) },
		UpdateFunc: func(_, o any) { s.crdChanged(ctx, o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if u, ok := o.(*unstructured.Unstructured); ok {
				s.crdGone(u.GetName())
			}
		},
	})
	s.mu.Lock()
	s.synced["crds"] = inf.HasSynced
	s.mu.Unlock()
	go inf.Run(ctx.Done())
}

// crdChanged starts the informer of an established CRD's kind that a pack
// module names in its match (a catch-all module starts none), for its
// served storage version (another served version when that one is not),
// or restarts it when its resource changed.
func (s *GraphSource) crdChanged(ctx context.Context, o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	gvr, kind, ok := servedResource(u.Object)
	name := u.GetName()
	if u.GetDeletionTimestamp() != nil {
		s.crdGone(name)
		return
	}
	if !ok || !established(u.Object) || !s.Packs.Names(gvr.Group, kind) {
		return
	}
	s.mu.Lock()
	if w := s.crds[name]; w != nil {
		if w.gvr == gvr && w.kind == kind {
			s.mu.Unlock()
			return
		}
		w.stop()
	}
	wctx, stop := context.WithCancel(ctx)
	s.crds[name] = &crdWatch{gvr: gvr, kind: kind, stop: stop}
	s.mu.Unlock()
	s.Log.Info("discovered CRD, registered informer", "gvr", gvr.String(), "kind", kind)
	s.run(wctx, "crd:"+name, gvr, kind, func() bool { return s.crdGoing(ctx, name) })
}

// crdGoing reports whether a CRD is being deleted or is gone: the
// deletions of its objects then are the CRD's, and their edges are kept.
// It asks the API server (the CRD informer may not have seen the deletion
// yet); it runs on informer events, never on admission.
func (s *GraphSource) crdGoing(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	crd, err := s.Client.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && crd.GetDeletionTimestamp() != nil
}

// crdGone stops a deleted CRD's informer; the graph keeps its edges.
func (s *GraphSource) crdGone(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.crds[name]
	if w == nil {
		return
	}
	w.stop()
	delete(s.crds, name)
	delete(s.synced, "crd:"+name)
	s.Metrics.Informers(len(s.synced))
	s.Log.Info("deregistered CRD informer; its objects' edges are kept", "gvr", w.gvr.String(), "kind", w.kind)
}

// Watched are the kinds of the CRDs watched now, sorted (for tests and
// logs).
func (s *GraphSource) Watched() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := make([]string, 0, len(s.crds))
	for w := range maps.Values(s.crds) {
		kinds = append(kinds, w.kind)
	}
	slices.Sort(kinds)
	return kinds
}

// servedResource is the resource of a CRD's storage version, or of its
// first served version when the storage one is not served.
func servedResource(crd map[string]any) (schema.GroupVersionResource, string, bool) {
	group, _, _ := unstructured.NestedString(crd, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(crd, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
	version := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		served, _ := m["served"].(bool)
		storage, _ := m["storage"].(bool)
		name, _ := m["name"].(string)
		if served && (storage || version == "") {
			version = name
		}
	}
	if group == "" || plural == "" || kind == "" || version == "" {
		return schema.GroupVersionResource{}, "", false
	}
	return schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, kind, true
}

// established reports a CRD's Established condition.
func established(crd map[string]any) bool {
	conds, _, _ := unstructured.NestedSlice(crd, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// Edges are the object's edges for a rule: into it from the graph, and
// out of it, derived from the object as the request has it (and those the
// graph holds from it: SELECTS, and those another object derived).
func (s *GraphSource) Edges(ctx context.Context, ref engine.ObjectRef, obj map[string]any) (incoming, outgoing []any, err error) {
	s.init()
	if !s.Synced() {
		return nil, nil, fmt.Errorf("the relationship graph has not synced yet")
	}
	self := graph.Ref{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
	var own []graph.Edge
	if obj != nil {
		own = s.g.Derive(graph.Named(obj, self))
	}
	in, out := s.g.Of(self, own)
	for _, e := range in {
		incoming = append(incoming, e.Tree())
	}
	for _, e := range out {
		outgoing = append(outgoing, e.Tree())
	}
	return incoming, outgoing, nil
}
