package cluster_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/modwright/modwright/api/v1beta1"
)

// waitFor and pollEvery bound every wait of these tests: conditions are
// polled, never slept on.
const (
	waitFor   = 5 * time.Second
	pollEvery = 2 * time.Millisecond
)

// eventually polls cond until it holds, failing the test after waitFor.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitFor, what)
		}
		time.Sleep(pollEvery)
	}
}

// receive waits for a value on ch, failing the test after waitFor.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("timed out after %v waiting for %s", waitFor, what)
		panic("unreachable")
	}
}

// newRuleScheme is the scheme of the client the RuleSource reads rules
// from: the built-in types, not ModRule's Go type, so that ModRules are
// stored and read back as unstructured objects, unknown fields included.
func newRuleScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// testCache is a cache.Cache for the tests: informers are
// informertest.FakeInformers (their FakeInformer's Add, Update and Delete
// fire the registered event handlers), reads go to a fake client, so what a
// RuleSource reads back is what the test stored before firing an event.
//
// GetInformer wraps the FakeInformer to record the event handlers that are
// added and removed: the test waits for the registration (which orders the
// handler's registration before the events it fires, for the race
// detector) and can fire events FakeInformer cannot (tombstones).
type testCache struct {
	*informertest.FakeInformers
	Reader client.Reader

	// informerErr, if set, is called by every GetInformer; a non-nil
	// result is returned as GetInformer's error.
	informerErr func() error

	registered chan toolscache.ResourceEventHandler // one per AddEventHandler

	mu       sync.Mutex
	handlers map[int]toolscache.ResourceEventHandler // registered, not removed, by id
	nextID   int
	removed  int
}

var _ cache.Cache = (*testCache)(nil)

// newTestCache returns a testCache whose ModRule informer exists already
// (so that the FakeInformers map is never written concurrently), synced or
// not.
func newTestCache(scheme *runtime.Scheme, reader client.Reader, synced bool) (*testCache, *controllertest.FakeInformer) {
	var opts []controllertest.InformerOption
	if synced {
		opts = append(opts, controllertest.Synced)
	}
	inf := controllertest.NewFakeInformer(opts...)
	c := &testCache{
		FakeInformers: &informertest.FakeInformers{
			Scheme: scheme,
			InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
				v1beta1.GroupVersion.WithKind(v1beta1.Kind): inf,
			},
		},
		Reader:     reader,
		registered: make(chan toolscache.ResourceEventHandler, 16),
	}
	return c, inf
}

func (c *testCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if c.informerErr != nil {
		if err := c.informerErr(); err != nil {
			return nil, err
		}
	}
	inf, err := c.FakeInformers.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &recordingInformer{FakeInformer: inf.(*controllertest.FakeInformer), c: c}, nil
}

func (c *testCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *testCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Reader.List(ctx, list, opts...)
}

// liveHandlers returns the handlers registered and not removed.
func (c *testCache) liveHandlers() []toolscache.ResourceEventHandler {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Values(c.handlers))
}

// removedHandlers returns how many handlers were removed.
func (c *testCache) removedHandlers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.removed
}

type recordingInformer struct {
	*controllertest.FakeInformer
	c *testCache
}

type recordedRegistration struct {
	toolscache.ResourceEventHandlerRegistration
	id int
}

func (i *recordingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.FakeInformer.AddEventHandler(h)
	if err != nil {
		return nil, err
	}
	i.c.mu.Lock()
	id := i.c.nextID
	i.c.nextID++
	if i.c.handlers == nil {
		i.c.handlers = map[int]toolscache.ResourceEventHandler{}
	}
	i.c.handlers[id] = h
	i.c.mu.Unlock()
	i.c.registered <- h
	return recordedRegistration{reg, id}, nil
}

func (i *recordingInformer) RemoveEventHandler(reg toolscache.ResourceEventHandlerRegistration) error {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	if r, ok := reg.(recordedRegistration); ok {
		if _, live := i.c.handlers[r.id]; live {
			delete(i.c.handlers, r.id)
			i.c.removed++
		}
	}
	return i.FakeInformer.RemoveEventHandler(reg)
}
