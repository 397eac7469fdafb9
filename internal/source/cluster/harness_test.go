package cluster_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/source/cluster"
)

// publishedAt is the RuleSource's clock in these tests.
var publishedAt = time.Unix(1_700_000_000, 0)

// barrierNS holds the marker rules of harness.barrier; they are filtered out
// of what OnChange reported.
const barrierNS = "zz-barrier"

// clusterRulesNS is the cluster-rules namespace the harness's ModRule kind
// is configured with (not KubeMod's default, so that the tests see the
// registry's configuration reach the compiled rules).
const clusterRulesNS = "rules-system"

// modRuleGVK is what the RuleSource watches and reads ModRules as.
var modRuleGVK = v1beta1.GroupVersion.WithKind(v1beta1.Kind)

type harnessOptions struct {
	unsynced    bool               // the ModRule informer has not synced when Start runs
	noMetrics   bool               // RuleSource.Metrics is nil
	funcs       *interceptor.Funcs // wraps the fake client for the RuleSource's reads only
	informerErr func() error       // see testCache.informerErr
	retryDelay  time.Duration      // RuleSource.RetryDelay; zero: an hour (no timed retry within a test)
}

// harness runs one RuleSource over a testCache. The test changes ModRules
// with add, update and remove, which store the object in the fake client and
// then fire the matching informer event, as an informer would. Rules are
// stored and served as unstructured objects, as the RuleSource's informer
// holds them: the fake client's scheme does not know the ModRule Go type,
// so what a test stores (an unknown field, say) is what the source reads.
type harness struct {
	t      *testing.T
	ctx    context.Context
	client client.WithWatch
	cache  *testCache
	inf    *controllertest.FakeInformer
	store  *source.Store
	reg    *prometheus.Registry
	src    *cluster.RuleSource

	cancel     context.CancelFunc
	done       chan error
	startFails bool // the test expects Start to fail and checks its error
	stopOnce   sync.Once
	stopErr    error

	mu       sync.Mutex
	changes  [][]string // OnChange calls, barrier keys left out
	barriers int
	logs     []string // what the RuleSource logged
}

func newHarness(t *testing.T, opts harnessOptions) *harness {
	t.Helper()
	cl := fake.NewClientBuilder().WithScheme(newRuleScheme(t)).Build()
	var reader client.Reader = cl // what the RuleSource reads
	if opts.funcs != nil {
		reader = interceptor.NewClient(cl, *opts.funcs)
	}
	c, inf := newTestCache(newScheme(t), reader, !opts.unsynced)
	c.informerErr = opts.informerErr
	h := &harness{
		t:      t,
		ctx:    t.Context(),
		client: cl,
		cache:  c,
		inf:    inf,
		store:  &source.Store{},
		done:   make(chan error, 1),
	}
	h.src = &cluster.RuleSource{
		Cache:      c,
		Store:      h.store,
		Kinds:      kinds.NewRegistry(modrule.NewKind(clusterRulesNS)),
		Log:        h.logger(),
		Now:        func() time.Time { return publishedAt },
		OnChange:   h.onChange,
		RetryDelay: cmp.Or(opts.retryDelay, time.Hour),
	}
	if !opts.noMetrics {
		h.reg = prometheus.NewRegistry()
		h.src.Metrics = metrics.New(h.reg)
	}
	return h
}

// start runs Start in a goroutine. The test's cleanup cancels its context
// and checks that Start returned and removed its event handler.
func (h *harness) start() {
	t := h.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.src.Start(ctx) }()
	t.Cleanup(func() {
		err := h.stop()
		if err != nil && !errors.Is(err, context.Canceled) && !h.startFails {
			t.Errorf("Start returned %v after its context was canceled", err)
		}
		if live := h.cache.liveHandlers(); len(live) != 0 {
			t.Errorf("Start returned with %d event handlers still registered", len(live))
		}
	})
}

// stop cancels Start's context and returns what Start returned.
func (h *harness) stop() error {
	h.cancel()
	return h.result()
}

// result waits for Start to return and returns its result.
func (h *harness) result() error {
	h.stopOnce.Do(func() {
		select {
		case h.stopErr = <-h.done:
		case <-time.After(waitFor):
			h.stopErr = errors.New("Start did not return within the deadline")
			h.t.Error(h.stopErr)
		}
	})
	return h.stopErr
}

// startAndWaitRegistered starts the source and waits for its event handler.
func (h *harness) startAndWaitRegistered() {
	h.t.Helper()
	h.start()
	receive(h.t, "the RuleSource to register its ModRule event handler", h.cache.registered)
}

// startAndWaitSynced starts the source and waits for its first snapshot.
func (h *harness) startAndWaitSynced() *engine.Snapshot {
	h.t.Helper()
	h.startAndWaitRegistered()
	eventually(h.t, "Synced()", h.src.Synced)
	return h.store.Current()
}

// logger logs to the test and records each line for loggedWith.
func (h *harness) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		h.mu.Lock()
		h.logs = append(h.logs, args)
		h.mu.Unlock()
		h.t.Log(prefix, args)
	}, funcr.Options{Verbosity: 1})
}

// loggedWith returns the log lines that contain every one of parts.
func (h *harness) loggedWith(parts ...string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found []string
	for _, l := range h.logs {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			found = append(found, l)
		}
	}
	return found
}

func (h *harness) onChange(ids []cluster.RuleID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var kept []string
	for _, id := range ids {
		if id.Kind != v1beta1.Kind {
			h.t.Errorf("OnChange reported %v, of a kind the source does not watch", id)
		}
		if !strings.HasPrefix(id.Key, barrierNS+"/") {
			kept = append(kept, id.Key)
		}
	}
	if len(kept) > 0 {
		h.changes = append(h.changes, kept)
	}
}

// changed returns every key OnChange reported since the last resetChanges,
// sorted, without duplicates.
func (h *harness) changed() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []string
	for _, c := range h.changes {
		all = append(all, c...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

func (h *harness) resetChanges() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes = nil
}

// waitChanged waits until OnChange has reported every key.
func (h *harness) waitChanged(keys ...string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("OnChange to report %q", keys), func() bool {
		got := h.changed()
		for _, k := range keys {
			if !slices.Contains(got, k) {
				return false
			}
		}
		return true
	})
}

// add stores mr and fires an Add event.
func (h *harness) add(mr *v1beta1.ModRule) {
	h.t.Helper()
	h.addRaw(toUnstructured(h.t, mr))
}

// addRaw stores u as it is and fires an Add event.
func (h *harness) addRaw(u *unstructured.Unstructured) {
	h.t.Helper()
	if err := h.client.Create(h.ctx, u); err != nil {
		h.t.Fatalf("creating %s/%s: %v", u.GetNamespace(), u.GetName(), err)
	}
	h.inf.Add(u.DeepCopy())
}

// getRaw reads the stored ModRule ns/name as the RuleSource does.
func (h *harness) getRaw(ns, name string) *unstructured.Unstructured {
	h.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(modRuleGVK)
	if err := h.client.Get(h.ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		h.t.Fatalf("reading %s/%s: %v", ns, name, err)
	}
	return u
}

// get reads the stored ModRule ns/name into its Go type.
func (h *harness) get(ns, name string) *v1beta1.ModRule {
	h.t.Helper()
	var mr v1beta1.ModRule
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(h.getRaw(ns, name).Object, &mr); err != nil {
		h.t.Fatalf("converting %s/%s: %v", ns, name, err)
	}
	return &mr
}

// update reads ModRule ns/name, changes it with mod, stores it and fires an
// Update event. It returns the stored object.
func (h *harness) update(ns, name string, mod func(*v1beta1.ModRule)) *v1beta1.ModRule {
	h.t.Helper()
	old := h.getRaw(ns, name)
	mr := h.get(ns, name)
	mod(mr)
	u := toUnstructured(h.t, mr)
	if err := h.client.Update(h.ctx, u); err != nil {
		h.t.Fatalf("updating %s/%s: %v", ns, name, err)
	}
	h.inf.Update(old, u.DeepCopy())
	return mr
}

// remove deletes ModRule ns/name and fires a Delete event.
func (h *harness) remove(ns, name string) {
	h.t.Helper()
	u := h.getRaw(ns, name)
	if err := h.client.Delete(h.ctx, u); err != nil {
		h.t.Fatalf("deleting %s/%s: %v", ns, name, err)
	}
	h.inf.Delete(u)
}

// barrier returns once every event fired before it has been processed: it
// adds a marker rule, waits for it to be published, removes it and waits
// for it to be gone. The source reads events in order, so a later event
// published means the earlier ones were handled.
func (h *harness) barrier() {
	h.t.Helper()
	h.mu.Lock()
	h.barriers++
	name := fmt.Sprintf("b%d", h.barriers)
	h.mu.Unlock()
	k := barrierNS + "/" + name
	h.add(modRule(barrierNS, name, types.UID("barrier-"+name), 1, "Barrier"))
	eventually(h.t, "the barrier rule "+k+" to be published", func() bool { return ruleByKey(h.store.Current(), k) != nil })
	h.remove(barrierNS, name)
	eventually(h.t, "the barrier rule "+k+" to be removed", func() bool {
		s := h.store.Current()
		return s != nil && ruleByKey(s, k) == nil
	})
}

// waitKeys waits until the published snapshot holds exactly keys (sorted).
func (h *harness) waitKeys(keys ...string) *engine.Snapshot {
	h.t.Helper()
	if keys == nil {
		keys = []string{}
	}
	var last []string
	deadline := time.Now().Add(waitFor)
	for {
		snap := h.store.Current()
		if snap != nil {
			last = snapshotKeys(snap)
			if slices.Equal(last, keys) {
				return snap
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %v waiting for a snapshot of %q; the last one holds %q", waitFor, keys, last)
		}
		time.Sleep(pollEvery)
	}
}

// metric returns the value of the gauge or counter name with the given
// label pairs, and whether it exists.
func (h *harness) metric(name string, labels ...string) (float64, bool) {
	h.t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsEqual(m.GetLabel(), labels) {
				switch {
				case m.Gauge != nil:
					return m.GetGauge().GetValue(), true
				case m.Counter != nil:
					return m.GetCounter().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

func labelsEqual(got []*dto.LabelPair, want []string) bool {
	if len(got)*2 != len(want) {
		return false
	}
	for i, l := range got {
		if l.GetName() != want[2*i] || l.GetValue() != want[2*i+1] {
			return false
		}
	}
	return true
}

// snapshotKeys returns the keys of s's rules; nil when s is nil (nothing
// published).
func snapshotKeys(s *engine.Snapshot) []string {
	if s == nil {
		return nil
	}
	return ruleKeys(s.Rules())
}

// ruleKeys returns the rules' keys (never nil).
func ruleKeys(rs []engine.Rule) []string {
	keys := []string{}
	for _, r := range rs {
		keys = append(keys, r.Info().Key)
	}
	return keys
}

func ruleByKey(s *engine.Snapshot, key string) engine.Rule {
	if s == nil {
		return nil
	}
	for _, r := range s.Rules() {
		if r.Info().Key == key {
			return r
		}
	}
	return nil
}

// generation returns the generation a ModRule was compiled from, -1 for
// no rule.
func generation(r engine.Rule) int64 {
	mr, ok := r.(*modrule.Rule)
	if !ok {
		return -1
	}
	return mr.Source.Generation
}

// uidOf returns the uid a ModRule was compiled from.
func uidOf(r engine.Rule) types.UID {
	mr, ok := r.(*modrule.Rule)
	if !ok {
		return ""
	}
	return mr.Source.UID
}

// id names a ModRule for the RuleSource.
func id(key string) cluster.RuleID {
	return cluster.RuleID{Kind: v1beta1.Kind, Key: key, Group: v1beta1.Group}
}

// toUnstructured converts a ModRule fixture into the object the API server
// stores.
func toUnstructured(t *testing.T, mr *v1beta1.ModRule) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mr)
	if err != nil {
		t.Fatalf("converting %s: %v", mr.NamespacedName(), err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(modRuleGVK)
	return u
}

func ptr[T any](v T) *T { return &v }

// modRule returns a valid Patch rule that matches objects of kind.
func modRule(ns, name string, uid types.UID, generation int64, kind string) *v1beta1.ModRule {
	return &v1beta1.ModRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, Generation: generation},
		Spec: v1beta1.ModRuleSpec{
			Type:  v1beta1.ModRuleTypePatch,
			Match: []v1beta1.MatchItem{{Select: "$.kind", MatchValue: ptr(kind)}},
			Patch: []v1beta1.PatchOperation{{Operation: v1beta1.PatchOperationTypeAdd, Path: "/metadata/labels/touched", Value: ptr("yes")}},
		},
	}
}

// brokenSelect is a select expression that does not parse.
const brokenSelect = "$.spec[?(@.x == )]"

// brokenRule returns a rule whose only criterion does not compile.
func brokenRule(ns, name string, uid types.UID, generation int64) *v1beta1.ModRule {
	mr := modRule(ns, name, uid, generation, "Pod")
	mr.Spec.Match[0].Select = brokenSelect
	return mr
}
