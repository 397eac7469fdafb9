package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/value"
)

// Resolver is the engine's ObjectReader in the cluster: it reads
// Namespaces and Nodes (what syntheticRefs.namespace and syntheticRefs.node
// need) from the manager's informer caches, and no other kind: asking for
// one is an error wrapping engine.ErrKindNotServed (each kind served is an
// informer the operator must start and watch). Each object is turned into
// a JSON tree once per resourceVersion and shared, read-only, by every
// request. The tree of a deleted object is dropped when a read finds it
// gone or, after Watch, when its informer reports the deletion.
type Resolver struct {
	Reader client.Reader // the manager's cache
	// ConfigMaps serves ConfigMaps (Policies' configMap context entries);
	// nil: they are not served.
	ConfigMaps *ConfigMaps

	mu    sync.Mutex
	trees map[string]tree // "ns/NAME" or "node/NAME"
}

type tree struct {
	resourceVersion string
	obj             map[string]any
}

var _ engine.ObjectReader = (*Resolver)(nil)

// Get returns the object ref names, or nil when it does not exist. Only
// Namespaces and Nodes (core group, cluster-scoped) are served, and
// ConfigMaps when ConfigMaps is set.
func (r *Resolver) Get(ctx context.Context, ref engine.ObjectRef) (map[string]any, error) {
	if ref.Group == "" && ref.Kind == "ConfigMap" && r.ConfigMaps != nil {
		return r.ConfigMaps.Get(ctx, ref.Namespace, ref.Name)
	}
	if ref.Group != "" || (ref.Kind != "Namespace" && ref.Kind != "Node") {
		return nil, fmt.Errorf("%s: %w (the cluster reader caches Namespaces and Nodes only)", ref, engine.ErrKindNotServed)
	}
	if ref.Namespace != "" { // both kinds are cluster-scoped
		return nil, nil
	}
	if ref.Kind == "Namespace" {
		var ns corev1.Namespace
		return r.get(ctx, "ns/", ref.Name, &ns, "Namespace")
	}
	var n corev1.Node
	return r.get(ctx, "node/", ref.Name, &n, "Node")
}

func (r *Resolver) get(ctx context.Context, prefix, name string, obj client.Object, kind string) (map[string]any, error) {
	if name == "" {
		return nil, nil
	}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(prefix + name)
			return nil, nil
		}
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	k := prefix + name
	rv := obj.GetResourceVersion()
	r.mu.Lock()
	t, ok := r.trees[k]
	r.mu.Unlock()
	if ok && t.resourceVersion == rv {
		return t.obj, nil
	}
	// Objects from the cache carry no type meta; the API server's JSON does.
	obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	v, err := value.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	m, _ := v.(map[string]any)
	r.mu.Lock()
	if r.trees == nil {
		r.trees = map[string]tree{}
	}
	r.trees[k] = tree{resourceVersion: rv, obj: m}
	r.mu.Unlock()
	return m, nil
}

// Watch makes the resolver drop the trees of Namespaces and Nodes as their
// informers report them deleted, so that its memory follows the cluster's.
func (r *Resolver) Watch(namespaces, nodes cache.Informer) error {
	for _, w := range []struct {
		prefix string
		inf    cache.Informer
	}{{"ns/", namespaces}, {"node/", nodes}} {
		prefix := w.prefix
		_, err := w.inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if o, ok := obj.(interface{ GetName() string }); ok {
					r.forget(prefix + o.GetName())
				}
			},
		})
		if err != nil {
			return fmt.Errorf("watching deletions for syntheticRefs: %w", err)
		}
	}
	return nil
}

func (r *Resolver) forget(k string) {
	r.mu.Lock()
	delete(r.trees, k)
	r.mu.Unlock()
}
