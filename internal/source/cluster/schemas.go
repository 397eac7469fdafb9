package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/engine"
)

// CRDSchemas is the engine's SchemaReader in the cluster: the schemas of
// the CustomResourceDefinitions the API server serves, kept by an
// informer (each served version's structural schema, crdschema.Typings),
// so that a Policy's scoped CEL validation of a custom resource sees self
// as the CRD's own rules at the same place do, as `apply --crd` does
// offline. Reads are lock-free; a CRD's typings are rebuilt when it
// changes. A CRD whose schema cannot be read is logged and its kinds stay
// dynamically typed.
//
// It is a manager Runnable every replica runs.
type CRDSchemas struct {
	Client dynamic.Interface
	Log    logr.Logger
	Resync time.Duration

	typings sync.Map // crdschema.TypingKey -> *crdschema.Typing

	mu     sync.Mutex
	byCRD  map[string][]string // the keys of each CRD's kinds, by CRD name
	synced cache.InformerSynced
}

var _ engine.SchemaReader = (*CRDSchemas)(nil)

// NeedLeaderElection: every replica types values with its own copy.
func (*CRDSchemas) NeedLeaderElection() bool { return false }

// Start runs the informer until ctx is done.
func (s *CRDSchemas) Start(ctx context.Context) error {
	inf := dynamicinformer.NewFilteredDynamicInformer(s.Client, crdGVR, "", s.Resync, cache.Indexers{}, nil).Informer()
	// The informer keeps what the typings are built from: not the
	// managed fields nor the annotations (a last-applied copy doubles a
	// CRD), nor the status.
	_ = inf.SetTransform(func(o any) (any, error) {
		if u, ok := o.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
			u.SetAnnotations(nil)
			delete(u.Object, "status")
		}
		return o, nil
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.changed,
		UpdateFunc: func(_, o any) { s.changed(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if u, ok := o.(*unstructured.Unstructured); ok {
				s.set(u.GetName(), nil)
			}
		},
	})
	s.mu.Lock()
	s.synced = inf.HasSynced
	s.mu.Unlock()
	inf.Run(ctx.Done())
	return nil
}

// Synced reports whether the informer has listed the CRDs (readiness
// waits for it: values are typed the same way from the first request).
func (s *CRDSchemas) Synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced != nil && s.synced()
}

func (s *CRDSchemas) changed(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	ts, err := crdschema.Typings(u.Object)
	if err != nil {
		s.Log.Error(err, "a CRD's schema cannot be read: its kinds' values stay dynamically typed", "crd", u.GetName())
		ts = nil
	}
	s.set(u.GetName(), ts)
}

// set replaces the typings of a CRD's kinds (nil: it is gone).
func (s *CRDSchemas) set(name string, ts map[string]*crdschema.Typing) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byCRD == nil {
		s.byCRD = map[string][]string{}
	}
	for _, k := range s.byCRD[name] {
		if _, still := ts[k]; !still {
			s.typings.Delete(k)
		}
	}
	keys := make([]string, 0, len(ts))
	for k, t := range ts {
		s.typings.Store(k, t)
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		delete(s.byCRD, name)
		return
	}
	s.byCRD[name] = keys
}

// Types reports whether a CRD of the cluster serves apiVersion and kind
// with a schema.
func (s *CRDSchemas) Types(apiVersion, kind string) bool {
	_, ok := s.typings.Load(crdschema.TypingKey(apiVersion, kind))
	return ok
}

// TypedValue is value at path in an object of apiVersion and kind typed
// by its CRD's schema (crdschema.Typing.Self); false when no CRD of the
// kind is known.
func (s *CRDSchemas) TypedValue(apiVersion, kind string, path []any, value any) (any, bool) {
	t, ok := s.typings.Load(crdschema.TypingKey(apiVersion, kind))
	if !ok {
		return nil, false
	}
	return t.(*crdschema.Typing).Self(path, value)
}
