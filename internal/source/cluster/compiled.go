package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/internal/kinds"
)

// CompiledSet keeps the objects of one kind that are not rules but that
// rules read (Kyverno's PolicyExceptions), in some namespaces only, each
// compiled once by Compile when it changes; Items is the current set, an
// immutable slice replaced whole. An object that does not compile is left
// out and logged (its error names its fields).
type CompiledSet struct {
	GVK schema.GroupVersionKind
	// Namespaces are where objects are trusted; an object elsewhere is
	// ignored (as Kyverno's --exceptionNamespace).
	Namespaces []string
	Compile    func(m *kinds.Manifest) (any, error)
	Cache      cache.Cache
	Log        logr.Logger

	mu    sync.Mutex
	items map[string]any // namespace/name -> compiled
	cur   atomic.Pointer[[]any]
}

var _ manager.Runnable = (*CompiledSet)(nil)

// Items returns the compiled objects (nil before the first sync).
func (s *CompiledSet) Items() []any {
	if p := s.cur.Load(); p != nil {
		return *p
	}
	return nil
}

// Start watches the kind (waiting for its CRD) until ctx ends.
func (s *CompiledSet) Start(ctx context.Context) error {
	s.items = map[string]any{}
	var inf cache.Informer
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(s.GVK)
		var err error
		if inf, err = s.Cache.GetInformer(ctx, u, cache.BlockUntilSynced(false)); err == nil {
			break
		}
		if !meta.IsNoMatchError(err) {
			return fmt.Errorf("%s informer: %w", s.GVK.Kind, err)
		}
		s.Log.Info("a CRD is not installed; waiting for it", "kind", s.GVK.String(), "retryIn", wait.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.update(obj, false) },
		UpdateFunc: func(_, obj any) { s.update(obj, false) },
		DeleteFunc: func(obj any) { s.update(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("%s informer: %w", s.GVK.Kind, err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	<-ctx.Done()
	return nil
}

func (s *CompiledSet) update(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !slices.Contains(s.Namespaces, u.GetNamespace()) && !slices.Contains(s.Namespaces, "*") {
		return
	}
	k := key(u.GetNamespace(), u.GetName())
	var compiled any
	if !deleted {
		m, err := Manifest(u)
		if err == nil {
			m.Origin = s.GVK.Kind + " " + k
			compiled, err = s.Compile(m)
		}
		if err != nil {
			s.Log.Error(err, "object does not compile; it is left out", "kind", s.GVK.Kind, "object", k)
			deleted = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleted {
		delete(s.items, k)
	} else {
		s.items[k] = compiled
	}
	keys := make([]string, 0, len(s.items))
	for k := range s.items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = s.items[k]
	}
	s.cur.Store(&out)
}
