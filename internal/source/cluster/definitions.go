package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/kinds"
)

// defState is a Stored definer's definitions (Gatekeeper's
// ConstraintTemplates) as the source last compiled them, and the watches
// of the rule kinds they define.
type defState struct {
	gvk   schema.GroupVersionKind // the definitions'
	dirty bool
	// generation counts the compilations of the definitions: a rule
	// compiled against an older one compiles again.
	generation uint64
	manifests  []*kinds.Manifest
	errs       []error // by manifests' index
	watches    map[string]*kindWatch
}

// kindWatch is the informer of one defined rule kind: started when a
// definition defines it (once its CRD is installed), stopped when none
// does.
type kindWatch struct {
	stop   context.CancelFunc
	synced chan struct{} // closed when its informer synced
	absent chan struct{} // closed when its CRD was found missing
	done   chan struct{} // closed when the watch has ended
	once   sync.Once
}

// Definitions is what a Stored definer's definitions compiled to.
type Definitions struct {
	// Kind is the definer given them (a kinds.Defining when it is one).
	Kind kinds.Kind
	// GVK is what the definitions are stored as.
	GVK schema.GroupVersionKind
	// Manifests are the definitions, by name; Errs why each does not
	// compile (nil when it does), by Manifests' index.
	Manifests []*kinds.Manifest
	Errs      []error
}

// Definitions returns the definitions of each Stored definer as last
// compiled (none before Start has read them).
func (s *RuleSource) Definitions() []Definitions {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Definitions, 0, len(s.defs))
	for i := range s.current {
		d := s.defs[i]
		if d == nil || d.manifests == nil {
			continue
		}
		out = append(out, Definitions{Kind: s.current[i], GVK: d.gvk, Manifests: d.manifests, Errs: d.errs})
	}
	return out
}

// watchDefinitions starts the informer of a Stored definer's definitions
// and waits for it to sync; a definition created, deleted or given a new
// generation marks them dirty. It returns how to remove the handler.
func (s *RuleSource) watchDefinitions(ctx context.Context, i int, st kinds.Stored) (func(), error) {
	g, v, k := st.DefinitionKind()
	gvk := schema.GroupVersionKind{Group: g, Version: v, Kind: k}
	s.mu.Lock()
	s.defs[i] = &defState{gvk: gvk, dirty: true, watches: map[string]*kindWatch{}}
	s.mu.Unlock()
	inf, err := s.informer(ctx, gvk, nil)
	if err != nil {
		return nil, err
	}
	changed := func() {
		s.mu.Lock()
		s.defs[i].dirty = true
		s.mu.Unlock()
		s.poke()
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { changed() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if ok1 && ok2 && o.GetUID() == n.GetUID() && o.GetGeneration() == n.GetGeneration() {
				return // a status, label or annotation change
			}
			changed()
		},
		DeleteFunc: func(any) { changed() },
	})
	if err != nil {
		return nil, fmt.Errorf("%s informer: %w", k, err)
	}
	remove := func() { _ = inf.RemoveEventHandler(reg) }
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		remove()
		return nil, ctx.Err()
	}
	s.Log.Info("definitions cache synced", "kind", k)
	return remove, nil
}

// poke wakes the rebuild loop without blocking.
func (s *RuleSource) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// refreshDefinitions compiles the dirty definitions again (all of a
// definer's at once: one definition may refer to another), marks the
// rules of their kinds dirty, and watches the kinds they define. first:
// it waits for the informers of the defined kinds whose CRDs are
// installed, so that their rules are in the first snapshot.
func (s *RuleSource) refreshDefinitions(ctx context.Context, first bool) error {
	s.mu.Lock()
	var todo []int
	for i, d := range s.defs {
		if d.dirty {
			d.dirty = false
			todo = append(todo, i)
		}
	}
	s.mu.Unlock()
	slices.Sort(todo)
	var started []*kindWatch
	for _, i := range todo {
		s.mu.Lock()
		d := s.defs[i]
		s.mu.Unlock()
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(d.gvk.GroupVersion().WithKind(d.gvk.Kind + "List"))
		if err := s.Cache.List(ctx, list); err != nil {
			s.mu.Lock()
			d.dirty = true
			s.mu.Unlock()
			return fmt.Errorf("listing %s: %w", d.gvk.Kind, err)
		}
		ms := make([]*kinds.Manifest, 0, len(list.Items))
		for j := range list.Items {
			m, err := Manifest(&list.Items[j])
			if err != nil {
				s.Log.Error(err, "definition cannot be read; it is left out", "kind", d.gvk.Kind, "name", list.Items[j].GetName())
				continue
			}
			m.Origin = d.gvk.Kind + " " + m.Key()
			ms = append(ms, m)
		}
		slices.SortFunc(ms, func(a, b *kinds.Manifest) int { return strings.Compare(a.Key(), b.Key()) })
		base := s.Kinds.Kinds()[i].(kinds.Definer)
		nk, errs := base.WithDefinitions(ms)
		for j, err := range errs {
			if err != nil {
				s.Log.Error(err, "definition does not compile; the rules of its kind are kept, broken, and never applied", "kind", d.gvk.Kind, "name", ms[j].Key())
			}
		}
		var defined []kinds.Definition
		if dk, ok := nk.(kinds.Defining); ok {
			defined = dk.Defined()
		}
		s.mu.Lock()
		s.current[i] = nk
		d.generation++
		d.manifests, d.errs = ms, errs
		group := nk.Group()
		for id := range s.compiled {
			if id.Group == group {
				s.dirty[id] = struct{}{}
			}
		}
		want := map[string]bool{}
		for _, def := range defined {
			want[def.Kind] = true
			if d.watches[def.Kind] == nil {
				w := s.watch(ctx, schema.GroupVersionKind{Group: group, Version: nk.Versions()[0], Kind: def.Kind})
				d.watches[def.Kind] = w
				started = append(started, w)
			}
		}
		for kind, w := range d.watches {
			if !want[kind] {
				// Its rules go with it (read as removed by rebuild).
				w.stop()
				delete(d.watches, kind)
			}
		}
		s.mu.Unlock()
		if s.OnDefinitions != nil {
			s.OnDefinitions()
		}
	}
	if first {
		for _, w := range started {
			select {
			case <-w.synced:
			case <-w.absent:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// watch starts the informer of a defined rule kind in the background: it
// waits for the kind's CRD (the operator's leader installs it), then marks
// the kind's rules dirty on every event until stopped.
func (s *RuleSource) watch(ctx context.Context, gvk schema.GroupVersionKind) *kindWatch {
	wctx, cancel := context.WithCancel(ctx)
	w := &kindWatch{synced: make(chan struct{}), absent: make(chan struct{}), done: make(chan struct{})}
	w.stop = func() { w.once.Do(cancel) }
	go func() {
		defer close(w.done)
		inf, err := s.informer(wctx, gvk, func() { close(w.absent) })
		if err != nil {
			if wctx.Err() == nil {
				s.Log.Error(err, "a defined rule kind cannot be watched", "kind", gvk.String())
			}
			return
		}
		group, kind := gvk.Group, gvk.Kind
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.enqueue(group, kind, obj) },
			UpdateFunc: func(_, obj any) { s.enqueue(group, kind, obj) },
			DeleteFunc: func(obj any) { s.enqueue(group, kind, obj) },
		})
		if err != nil {
			s.Log.Error(err, "a defined rule kind cannot be watched", "kind", gvk.String())
			return
		}
		if toolscache.WaitForCacheSync(wctx.Done(), reg.HasSynced) {
			close(w.synced)
			s.Log.Info("rule cache synced", "kind", kind)
			s.poke() // the rules listed while it synced are read now
		}
		<-wctx.Done()
		_ = inf.RemoveEventHandler(reg)
		if ctx.Err() == nil {
			// No definition defines the kind any more: its informer goes.
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			_ = s.Cache.RemoveInformer(context.Background(), u)
			s.poke()
		}
	}()
	return w
}

// stopWatches stops the watches of the defined kinds and waits for them.
func (s *RuleSource) stopWatches() {
	s.mu.Lock()
	var ws []*kindWatch
	for _, d := range s.defs {
		for _, w := range d.watches {
			w.stop()
			ws = append(ws, w)
		}
	}
	s.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}

// Whether a rule's kind is watched.
type watchState int

const (
	watched watchState = iota
	syncing            // a definition defines it; its informer has not synced
	gone               // no definition defines it
)

// ruleGVK is what a rule of kind k is read as, and whether its kind is
// watched (a defined kind is while a definition defines it).
func (s *RuleSource) ruleGVK(k kinds.Kind, id RuleID) (schema.GroupVersionKind, watchState) {
	if _, owner := k.(kinds.GroupOwner); !owner {
		return GVK(k), watched
	}
	gvk := schema.GroupVersionKind{Group: k.Group(), Version: k.Versions()[0], Kind: id.Kind}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.defs {
		if w := d.watches[id.Kind]; w != nil {
			select {
			case <-w.synced:
				return gvk, watched
			default:
				return gvk, syncing
			}
		}
	}
	return gvk, gone
}

// defsGeneration is the generation of the definitions the kinds of group
// compile against (0 for a kind without definitions). s.mu is held.
func (s *RuleSource) defsGeneration(group string) uint64 {
	for i, d := range s.defs {
		if s.current[i].Group() == group {
			return d.generation
		}
	}
	return 0
}
