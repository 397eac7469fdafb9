package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/modwright/modwright/internal/value"
)

// ErrTooManyConfigMaps is in the chain of the error of a ConfigMap read
// beyond ConfigMaps.Max watched ConfigMaps.
var ErrTooManyConfigMaps = errors.New("too many ConfigMaps watched")

// ConfigMaps serves the ConfigMaps policies read (their configMap context
// entries): it watches exactly those, each with its own informer
// field-selected on the ConfigMap's name in its namespace, started by the
// first read (which waits for it to sync, within the request's context)
// and stopped once nobody has read it for Idle. An update reaches the
// informer, hence the next read, as fast as the API server's watch. Each
// ConfigMap is turned into a JSON tree once per resourceVersion, shared
// read-only by every request.
type ConfigMaps struct {
	Client kubernetes.Interface
	// Idle is how long an unread ConfigMap stays watched; default 10
	// minutes.
	Idle time.Duration
	// Max bounds the ConfigMaps watched at once; default 1,000.
	Max int
	// Now is the clock; default time.Now.
	Now func() time.Time

	mu      sync.Mutex
	watches map[string]*cmWatch // "namespace/name"
}

type cmWatch struct {
	inf  toolscache.SharedIndexInformer
	stop chan struct{}

	mu       sync.Mutex
	lastRead time.Time
	rv       string
	tree     map[string]any
}

func (c *ConfigMaps) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Get returns the ConfigMap namespace/name as a JSON tree, or nil when it
// does not exist.
func (c *ConfigMaps) Get(ctx context.Context, namespace, name string) (map[string]any, error) {
	if namespace == "" || name == "" {
		return nil, nil
	}
	w, err := c.watch(namespace, name)
	if err != nil {
		return nil, err
	}
	if !w.inf.HasSynced() && !toolscache.WaitForCacheSync(ctx.Done(), w.inf.HasSynced) {
		return nil, fmt.Errorf("ConfigMap %s/%s: the watch did not sync: %w", namespace, name, context.Cause(ctx))
	}
	obj, ok, err := w.inf.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, err
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s: the informer holds a %T", namespace, name, obj)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastRead = c.now()
	if w.tree != nil && w.rv == cm.ResourceVersion {
		return w.tree, nil
	}
	cp := cm.DeepCopy()
	cp.APIVersion, cp.Kind = "v1", "ConfigMap"
	cp.ManagedFields = nil
	data, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	v, err := value.Decode(data)
	if err != nil {
		return nil, err
	}
	w.tree, w.rv = v.(map[string]any), cm.ResourceVersion
	return w.tree, nil
}

// watch returns the watch of namespace/name, starting it.
func (c *ConfigMaps) watch(namespace, name string) (*cmWatch, error) {
	key := namespace + "/" + name
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.watches[key]; w != nil {
		return w, nil
	}
	max := c.Max
	if max <= 0 {
		max = 1000
	}
	if len(c.watches) >= max {
		return nil, fmt.Errorf("ConfigMap %s: %w (%d): policies read more distinct ConfigMaps than the operator watches", key, ErrTooManyConfigMaps, max)
	}
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return c.Client.CoreV1().ConfigMaps(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return c.Client.CoreV1().ConfigMaps(namespace).Watch(ctx, o)
		},
	}
	w := &cmWatch{
		// The client says whether it can stream the initial list (a
		// fake cannot).
		inf:      toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, c.Client), &corev1.ConfigMap{}, 0, toolscache.Indexers{}),
		stop:     make(chan struct{}),
		lastRead: c.now(),
	}
	go w.inf.Run(w.stop)
	if c.watches == nil {
		c.watches = map[string]*cmWatch{}
	}
	c.watches[key] = w
	return w, nil
}

// Watched returns the number of ConfigMaps watched.
func (c *ConfigMaps) Watched() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches)
}

// Sweep stops the watches nobody read for Idle.
func (c *ConfigMaps) Sweep() {
	idle := c.Idle
	if idle <= 0 {
		idle = 10 * time.Minute
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, w := range c.watches {
		w.mu.Lock()
		last := w.lastRead
		w.mu.Unlock()
		if now.Sub(last) >= idle {
			close(w.stop)
			delete(c.watches, k)
		}
	}
}

// Run sweeps every minute until ctx ends, then stops every watch (a
// manager.Runnable).
func (c *ConfigMaps) Run(ctx context.Context) error {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.mu.Lock()
			for k, w := range c.watches {
				close(w.stop)
				delete(c.watches, k)
			}
			c.mu.Unlock()
			return nil
		case <-t.C:
			c.Sweep()
		}
	}
}
