package cluster

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// RuleSource publishes a snapshot of the cluster's ModRules into Store. It is
// a manager.Runnable that runs on every replica (no leader election): each
// replica serves from its own full snapshot.
//
// Events only mark rules dirty; one loop re-reads the dirty rules from the
// cache, compiles those whose uid or generation changed, and publishes a new
// snapshot. Bursts (the initial list, a kubectl apply of many rules) coalesce
// into few rebuilds.
type RuleSource struct {
	Cache    cache.Cache
	Store    *source.Store
	Snapshot rules.SnapshotOptions
	Log      logr.Logger
	Metrics  *metrics.Metrics // nil: none
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnChange, if set, is called after each publish with the keys
	// (namespace/name) whose compiled form changed or was removed.
	OnChange func(keys []string)
	// RetryDelay is the first wait before re-reading rules whose cache read
	// failed, doubled on each further failure up to 30 s; zero means 1 s.
	// (A later event for any rule retries sooner.)
	RetryDelay time.Duration

	// parsed holds the select expressions and regular expressions of the
	// compiled rules, shared among them and kept from one rebuild to the
	// next (bounded: rules.CacheLimit).
	parsed rules.Cache

	mu       sync.Mutex
	compiled map[string]*entry // by namespace/name
	dirty    map[string]struct{}
	wake     chan struct{}
	synced   bool
}

type entry struct {
	uid        types.UID
	generation int64
	rule       *rules.Rule
}

var (
	_ manager.Runnable               = (*RuleSource)(nil)
	_ manager.LeaderElectionRunnable = (*RuleSource)(nil)
)

// NeedLeaderElection is false: every replica keeps its own snapshot.
func (s *RuleSource) NeedLeaderElection() bool { return false }

func (s *RuleSource) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *RuleSource) init() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.compiled == nil {
		s.compiled = map[string]*entry{}
		s.dirty = map[string]struct{}{}
		s.wake = make(chan struct{}, 1)
	}
}

// Start watches ModRules until ctx ends. The first snapshot (possibly empty)
// is published once the cache has synced.
func (s *RuleSource) Start(ctx context.Context) error {
	s.init()
	inf, err := s.informer(ctx)
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    s.enqueue,
		UpdateFunc: func(_, obj any) { s.enqueue(obj) },
		DeleteFunc: s.enqueue,
	})
	if err != nil {
		return fmt.Errorf("ModRule informer: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return ctx.Err()
	}
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
	s.Log.Info("ModRule cache synced")
	first := s.RetryDelay
	if first <= 0 {
		first = time.Second
	}
	var retry <-chan time.Time // nil: nothing to retry
	delay := first
	for {
		if err := s.rebuild(ctx); err != nil && ctx.Err() == nil {
			// Cache reads do not fail once synced; if one does, the
			// unread rules stay dirty (their previous compiled form keeps
			// serving) and are read again after a backoff or on the
			// next event, whichever comes first.
			s.Log.Error(err, "reading ModRules from the cache failed; their previous form keeps serving", "retryIn", delay.String())
			s.Metrics.SnapshotFailed()
			retry = time.After(delay)
			delay = min(2*delay, 30*time.Second)
		} else {
			retry, delay = nil, first
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-retry:
		}
	}
}

// informer returns the ModRule informer, waiting for the CRD while it is not
// installed (an operator applied before its CRD, as GitOps tools may do,
// stays not ready instead of failing).
func (s *RuleSource) informer(ctx context.Context) (cache.Informer, error) {
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		inf, err := s.Cache.GetInformer(ctx, &v1beta1.ModRule{}, cache.BlockUntilSynced(false))
		if err == nil {
			return inf, nil
		}
		if !meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("ModRule informer: %w", err)
		}
		s.Log.Info("the ModRule CRD (modrules.api.kubemod.io) is not installed; waiting for it", "retryIn", wait.String())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (s *RuleSource) enqueue(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	s.mu.Lock()
	s.dirty[key(o.GetNamespace(), o.GetName())] = struct{}{}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func key(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func splitKey(k string) types.NamespacedName {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return types.NamespacedName{Namespace: k[:i], Name: k[i+1:]}
		}
	}
	return types.NamespacedName{Name: k}
}

// rebuild compiles the dirty rules that changed and publishes a snapshot.
func (s *RuleSource) rebuild(ctx context.Context) error {
	s.mu.Lock()
	dirty := make([]string, 0, len(s.dirty))
	for k := range s.dirty {
		dirty = append(dirty, k)
	}
	clear(s.dirty)
	first := s.Store.Current() == nil
	s.mu.Unlock()
	if len(dirty) == 0 && !first {
		return nil
	}
	start := s.now()

	// Read the dirty rules and find the ones to compile.
	var toCompile []*v1beta1.ModRule
	var removed []string
	var readErr error
	for _, k := range dirty {
		var mr v1beta1.ModRule
		err := s.Cache.Get(ctx, splitKey(k), &mr)
		switch {
		case apierrors.IsNotFound(err):
			removed = append(removed, k)
		case err != nil:
			readErr = errors.Join(readErr, fmt.Errorf("reading ModRule %s: %w", k, err))
			s.mu.Lock()
			s.dirty[k] = struct{}{}
			s.mu.Unlock()
		default:
			s.mu.Lock()
			e := s.compiled[k]
			s.mu.Unlock()
			if e == nil || e.uid != mr.UID || e.generation != mr.Generation {
				toCompile = append(toCompile, &mr)
			}
		}
	}
	compiled := compileAll(toCompile, &s.parsed)
	compileTook := s.now().Sub(start)

	s.mu.Lock()
	var changed []string
	for _, k := range removed {
		if _, ok := s.compiled[k]; ok {
			delete(s.compiled, k)
			changed = append(changed, k)
		}
	}
	for i, mr := range toCompile {
		k := key(mr.Namespace, mr.Name)
		s.compiled[k] = &entry{uid: mr.UID, generation: mr.Generation, rule: compiled[i]}
		changed = append(changed, k)
	}
	if len(changed) == 0 && !first {
		// Nothing to publish: the dirty rules were unreadable, unchanged
		// (a status or label update), or gone before they were compiled.
		s.mu.Unlock()
		return readErr
	}
	all := make([]*rules.Rule, 0, len(s.compiled))
	for _, e := range s.compiled {
		all = append(all, e.rule)
	}
	s.mu.Unlock()

	for _, r := range compiled {
		if r.Err != nil {
			s.Log.Error(r.Err, "ModRule does not compile; it is kept, reported in its status, and never applied", "rule", r.Key)
		}
	}
	indexStart := s.now()
	snap := rules.NewSnapshot(all, s.Snapshot)
	published := s.now()
	// The metrics describe the snapshot before it serves.
	s.Metrics.SnapshotBuild(0, compileTook, published.Sub(indexStart))
	var broken []string
	for _, r := range snap.Broken() {
		broken = append(broken, r.Key)
	}
	s.Metrics.SnapshotPublished(published, len(all)-len(broken), 0, broken)
	s.Store.Publish(snap)
	s.Log.V(1).Info("published rule snapshot", "rules", len(all), "broken", len(broken),
		"compiled", len(toCompile), "removed", len(removed), "took", published.Sub(start).String())
	if s.OnChange != nil && len(changed) > 0 {
		slices.Sort(changed)
		s.OnChange(changed)
	}
	return readErr
}

// compileAll compiles rules on every CPU, keeping their order; the workers
// share cache.
func compileAll(mrs []*v1beta1.ModRule, cache *rules.Cache) []*rules.Rule {
	out := make([]*rules.Rule, len(mrs))
	workers := min(runtime.GOMAXPROCS(0), len(mrs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i], _ = rules.CompileWith(mrs[i], cache) // the error is in out[i].Err
			}
		})
	}
	for i := range mrs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// Compiled returns the compiled form of the rule key (namespace/name) at
// the given generation, if this source has compiled that generation.
func (s *RuleSource) Compiled(key string, uid types.UID, generation int64) (*rules.Rule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.compiled[key]
	if e == nil || e.uid != uid || e.generation != generation {
		return nil, false
	}
	return e.rule, true
}

// Synced reports whether the ModRule cache has synced and a snapshot has
// been published (for readiness).
func (s *RuleSource) Synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced && s.Store.Current() != nil
}
