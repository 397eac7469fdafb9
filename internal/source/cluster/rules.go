package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// RuleSource publishes a snapshot of the cluster's rules, of every kind of
// its registry, into Store. It is a manager.Runnable that runs on every
// replica (no leader election): each replica serves from its own full
// snapshot.
//
// It watches each kind through one informer of unstructured objects (the
// kind's group, first version and name), so that it holds no kind's Go
// types: a rule's manifest is its JSON, compiled by the kind
// (kinds.Kind.Compile). Events only mark rules dirty; one loop re-reads the
// dirty rules from the cache, compiles those whose uid or generation
// changed, and publishes a new snapshot. Bursts (the initial list, a
// kubectl apply of many rules) coalesce into few rebuilds.
type RuleSource struct {
	Cache cache.Cache
	Store *source.Store
	// Kinds are the kinds watched; their adapters keep the parsed
	// expressions from one rebuild to the next.
	Kinds   *kinds.Registry
	Log     logr.Logger
	Metrics *metrics.Metrics // nil: none
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnChange, if set, is called after each publish with the rules
	// whose compiled form changed or was removed.
	OnChange func(changed []RuleID)
	// RetryDelay is the first wait before re-reading rules whose cache read
	// failed, doubled on each further failure up to 30 s; zero means 1 s.
	// (A later event for any rule retries sooner.)
	RetryDelay time.Duration

	// OnDefinitions, if set, is called after the definitions of a Stored
	// definer (Gatekeeper's ConstraintTemplates) were compiled again; read
	// them with Definitions.
	OnDefinitions func()

	mu       sync.Mutex
	compiled map[RuleID]*entry
	dirty    map[RuleID]struct{}
	wake     chan struct{}
	synced   bool
	// current are the registry's kinds, each Stored definer given its
	// definitions; defs their state, by index in current.
	current []kinds.Kind
	defs    map[int]*defState
}

// RuleID names one rule: its kind (by group and name: Kyverno's
// ClusterPolicy is not modwright's former one) and namespace/name.
type RuleID struct {
	Kind  string
	Key   string // namespace/name
	Group string
}

type entry struct {
	uid        types.UID
	generation int64
	rule       engine.Rule // nil: the manifest could not be decoded
	err        error       // why it could not be decoded or compiled
	defs       uint64      // the generation of its kind's definitions it compiled against
}

// GVK is the group, version and kind a kind is watched as.
func GVK(k kinds.Kind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group(), Version: k.Versions()[0], Kind: k.Name()}
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
		s.compiled = map[RuleID]*entry{}
		s.dirty = map[RuleID]struct{}{}
		s.wake = make(chan struct{}, 1)
		s.current = slices.Clone(s.Kinds.Kinds())
		s.defs = map[int]*defState{}
	}
}

// Start watches the rules of every kind until ctx ends. The first snapshot
// (possibly empty) is published once every kind's cache has synced.
func (s *RuleSource) Start(ctx context.Context) error {
	s.init()
	defer s.stopWatches()
	for i, k := range s.Kinds.Kinds() {
		if st, ok := k.(kinds.Stored); ok {
			remove, err := s.watchDefinitions(ctx, i, st)
			if err != nil {
				return err
			}
			defer remove()
		}
		if _, owner := k.(kinds.GroupOwner); owner {
			// Its kinds are the ones its definitions define.
			continue
		}
		inf, err := s.informer(ctx, GVK(k), nil)
		if err != nil {
			return err
		}
		name, group := k.Name(), k.Group()
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.enqueue(group, name, obj) },
			UpdateFunc: func(_, obj any) { s.enqueue(group, name, obj) },
			DeleteFunc: func(obj any) { s.enqueue(group, name, obj) },
		})
		if err != nil {
			return fmt.Errorf("%s informer: %w", name, err)
		}
		defer func() { _ = inf.RemoveEventHandler(reg) }()
		if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			return ctx.Err()
		}
		s.Log.Info("rule cache synced", "kind", name)
	}
	// The definitions, and the rules of the kinds they define whose CRDs
	// are installed, are in the first snapshot.
	if err := s.refreshDefinitions(ctx, true); err != nil {
		return err
	}
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
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
			s.Log.Error(err, "reading rules from the cache failed; their previous form keeps serving", "retryIn", delay.String())
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

// informer returns a kind's informer, waiting for its CRD while it is not
// installed (an operator applied before its CRD, as GitOps tools may do,
// stays not ready instead of failing).
// missing, if set, is called the first time the CRD is found missing.
func (s *RuleSource) informer(ctx context.Context, gvk schema.GroupVersionKind, missing func()) (cache.Informer, error) {
	return waitInformer(ctx, s.Cache, s.Log, gvk, missing)
}

// waitInformer returns the informer of gvk from c, waiting for its CRD
// while it is not installed; missing, if set, is called the first time
// the CRD is found missing.
func waitInformer(ctx context.Context, c cache.Cache, log logr.Logger, gvk schema.GroupVersionKind, missing func()) (cache.Informer, error) {
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		inf, err := c.GetInformer(ctx, u, cache.BlockUntilSynced(false))
		if err == nil {
			return inf, nil
		}
		if !meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("%s informer: %w", gvk.Kind, err)
		}
		if missing != nil {
			missing()
			missing = nil
		}
		log.Info("a kind's CRD is not installed; waiting for it", "kind", gvk.String(), "retryIn", wait.String())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (s *RuleSource) enqueue(group, kind string, obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	s.mu.Lock()
	s.dirty[RuleID{Kind: kind, Key: key(o.GetNamespace(), o.GetName()), Group: group}] = struct{}{}
	s.mu.Unlock()
	s.poke()
}

func key(ns, name string) string { return rules.Key(ns, name) }

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
	// Definitions first: the rules of the kinds they define compile
	// against them (a change marks those rules dirty).
	if err := s.refreshDefinitions(ctx, false); err != nil {
		return err
	}
	s.mu.Lock()
	dirty := make([]RuleID, 0, len(s.dirty))
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

	toCompile, removed, readErr := s.read(ctx, dirty)
	compiled := make([]*entry, len(toCompile))
	source.ForEach(len(toCompile), func(i int) {
		p := toCompile[i]
		compiled[i] = s.compile(p.id, p.obj)
	})
	compileTook := s.now().Sub(start)

	s.mu.Lock()
	var changed []RuleID
	for _, id := range removed {
		if _, ok := s.compiled[id]; ok {
			delete(s.compiled, id)
			changed = append(changed, id)
		}
	}
	for i, p := range toCompile {
		s.compiled[p.id] = compiled[i]
		changed = append(changed, p.id)
	}
	if len(changed) == 0 && !first {
		// Nothing to publish: the dirty rules were unreadable, unchanged
		// (a status or label update), or gone before they were compiled.
		s.mu.Unlock()
		return readErr
	}
	all := make([]engine.Rule, 0, len(s.compiled))
	undecodable := 0
	for _, e := range s.compiled {
		if e.rule == nil {
			undecodable++
			continue
		}
		all = append(all, e.rule)
	}
	s.mu.Unlock()

	for i, e := range compiled {
		id := toCompile[i].id
		switch {
		case e.rule == nil:
			s.Log.Error(e.err, "rule cannot be decoded; it is not served, and counted as broken", "kind", id.Kind, "rule", id.Key)
		case e.err != nil:
			s.Log.Error(e.err, "rule does not compile; it is kept, reported in its status, and never applied", "kind", id.Kind, "rule", id.Key)
		}
	}
	indexStart := s.now()
	snap := engine.NewSnapshot(all)
	published := s.now()
	// The metrics describe the snapshot before it serves.
	s.Metrics.SnapshotBuild(0, compileTook, published.Sub(indexStart))
	var broken []metrics.RuleRef
	for _, r := range snap.Broken() {
		broken = append(broken, metrics.RuleRef{Kind: r.Info().Kind, Rule: r.Info().Key})
	}
	s.Metrics.SnapshotPublished(published, len(all)-len(broken), undecodable, broken)
	for _, o := range s.Kinds.Observers() {
		o.Published(snap)
	}
	s.Store.Publish(snap)
	s.Log.V(1).Info("published rule snapshot", "rules", len(all), "broken", len(broken),
		"compiled", len(toCompile), "removed", len(removed), "took", published.Sub(start).String())
	if s.OnChange != nil && len(changed) > 0 {
		slices.SortFunc(changed, func(a, b RuleID) int {
			if a.Kind != b.Kind {
				return strings.Compare(a.Kind, b.Kind)
			}
			return strings.Compare(a.Key, b.Key)
		})
		s.OnChange(changed)
	}
	return readErr
}

// pending is a rule to compile.
type pending struct {
	id  RuleID
	obj *unstructured.Unstructured
}

// read reads the dirty rules from the cache: the ones to compile (new, or
// of a new uid, generation or definitions), the ones removed, and why
// some could not be read (those stay dirty).
func (s *RuleSource) read(ctx context.Context, dirty []RuleID) (toCompile []pending, removed []RuleID, readErr error) {
	for _, id := range dirty {
		k := s.kind(id)
		if k == nil {
			continue
		}
		gvk, state := s.ruleGVK(k, id)
		switch state {
		case gone: // a kind no definition defines any more
			removed = append(removed, id)
			continue
		case syncing: // read once its informer has synced
			s.mu.Lock()
			s.dirty[id] = struct{}{}
			s.mu.Unlock()
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := s.Cache.Get(ctx, splitKey(id.Key), u)
		switch {
		case apierrors.IsNotFound(err):
			removed = append(removed, id)
		case err != nil:
			readErr = errors.Join(readErr, fmt.Errorf("reading %s %s: %w", id.Kind, id.Key, err))
			s.mu.Lock()
			s.dirty[id] = struct{}{}
			s.mu.Unlock()
		default:
			s.mu.Lock()
			e := s.compiled[id]
			defs := s.defsGeneration(id.Group)
			s.mu.Unlock()
			if e == nil || e.uid != u.GetUID() || e.generation != u.GetGeneration() || e.defs != defs {
				toCompile = append(toCompile, pending{id, u})
			}
		}
	}
	return toCompile, removed, readErr
}

// kind is the kind of a rule: by group and name, or by group for a
// GroupOwner (with its current definitions).
func (s *RuleSource) kind(id RuleID) kinds.Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.current {
		if k.Group() != id.Group {
			continue
		}
		if _, owner := k.(kinds.GroupOwner); owner || k.Name() == id.Kind {
			return k
		}
	}
	return nil
}

// compile compiles one rule from its unstructured object (its JSON is the
// manifest the kind decodes strictly).
func (s *RuleSource) compile(id RuleID, u *unstructured.Unstructured) *entry {
	e := &entry{uid: u.GetUID(), generation: u.GetGeneration()}
	m, err := Manifest(u)
	if err != nil {
		e.err = fmt.Errorf("%s %s: %w", id.Kind, id.Key, err)
		return e
	}
	m.Origin = id.Kind + " " + id.Key
	s.mu.Lock()
	e.defs = s.defsGeneration(id.Group)
	s.mu.Unlock()
	k := s.kind(id)
	e.rule, e.err = k.Compile(m)
	if e.rule != nil {
		e.rule.Info().Group = k.Group()
	}
	return e
}

// Manifest is the manifest of a stored rule: its JSON text and tree.
func Manifest(u *unstructured.Unstructured) (*kinds.Manifest, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	tree, err := value.Decode(data)
	if err != nil {
		return nil, err
	}
	obj, _ := tree.(map[string]any)
	return &kinds.Manifest{Object: obj, JSON: data}, nil
}

// Compiled is a rule as a RuleSource compiled it.
type Compiled struct {
	// Rule is nil when the manifest could not be decoded.
	Rule engine.Rule
	// Err is why it could not be decoded or compiled.
	Err error
}

// Compiled returns the compiled form of a rule at the given generation, if
// this source has compiled that generation.
func (s *RuleSource) Compiled(id RuleID, uid types.UID, generation int64) (Compiled, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.compiled[id]
	if e == nil || e.uid != uid || e.generation != generation {
		return Compiled{}, false
	}
	return Compiled{e.rule, e.err}, true
}

// Synced reports whether every kind's cache has synced and a snapshot has
// been published (for readiness).
func (s *RuleSource) Synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced && s.Store.Current() != nil
}
