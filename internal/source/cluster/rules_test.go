package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source/cluster"
)

func TestRuleSourceNeedsNoLeaderElection(t *testing.T) {
	if (&cluster.RuleSource{}).NeedLeaderElection() {
		t.Error("NeedLeaderElection() = true; every replica must keep its own snapshot")
	}
}

func TestRuleSourceFirstSnapshotAfterSync(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		h := newHarness(t, harnessOptions{unsynced: true})
		if h.src.Synced() {
			t.Fatal("Synced() = true before Start")
		}
		h.startAndWaitRegistered()
		if h.src.Synced() {
			t.Error("Synced() = true before the informer synced")
		}
		if s := h.store.Current(); s != nil {
			t.Errorf("a snapshot of %d rules was published before the informer synced", s.Len())
		}

		h.inf.Synced()
		eventually(t, "Synced()", h.src.Synced)
		snap := h.store.Current()
		if snap == nil {
			t.Fatal("Synced() = true but no snapshot is published")
		}
		if snap.Len() != 0 {
			t.Errorf("the first snapshot holds %q, want no rules", snapshotKeys(snap))
		}
		for _, m := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"modwright_rules", []string{"state", "ready"}, 0},
			{"modwright_rules", []string{"state", "broken"}, 0},
			{"modwright_snapshot_builds_total", []string{"result", "published"}, 1},
			{"modwright_snapshot_published_timestamp_seconds", nil, float64(publishedAt.Unix())},
		} {
			if got, ok := h.metric(m.name, m.labels...); !ok || got != m.want {
				t.Errorf("%s%q = %v (present: %v), want %v", m.name, m.labels, got, ok, m.want)
			}
		}
		h.barrier()
		if got := h.changed(); len(got) != 0 {
			t.Errorf("OnChange reported %q for an empty cluster", got)
		}
	})

	t.Run("rules listed before the sync are all in the first snapshot", func(t *testing.T) {
		h := newHarness(t, harnessOptions{unsynced: true})
		h.startAndWaitRegistered()
		want := []string{"team-a/r1", "team-a/r2", "team-b/r1"}
		for i, k := range want {
			ns, name, _ := cutKey(k)
			h.add(modRule(ns, name, types.UID(fmt.Sprint("uid-", i)), 1, "Pod"))
		}
		if h.src.Synced() || h.store.Current() != nil {
			t.Error("a snapshot was published before the informer synced")
		}

		h.inf.Synced()
		eventually(t, "Synced()", h.src.Synced)
		if got := snapshotKeys(h.store.Current()); !slices.Equal(got, want) {
			t.Errorf("the first snapshot holds %q, want %q", got, want)
		}
		h.waitChanged(want...)
	})

	t.Run("not synced while the first snapshot is being built", func(t *testing.T) {
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		var blocked atomic.Bool
		blocked.Store(true)
		h := newHarness(t, harnessOptions{unsynced: true, funcs: &interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if blocked.Load() {
					select {
					case entered <- struct{}{}:
					default:
					}
					<-release
				}
				return c.Get(ctx, key, obj, opts...)
			},
		}})
		h.startAndWaitRegistered()
		h.add(modRule("team-a", "r", "uid", 1, "Pod"))
		h.inf.Synced()
		receive(t, "the first rebuild to read the rule", entered)
		if h.src.Synced() {
			t.Error("Synced() = true while the first snapshot is still being built")
		}
		blocked.Store(false)
		close(release)
		eventually(t, "Synced()", h.src.Synced)
		if got := snapshotKeys(h.store.Current()); !slices.Equal(got, []string{"team-a/r"}) {
			t.Errorf("the first snapshot holds %q, want [team-a/r]", got)
		}
	})

	t.Run("canceled before the sync", func(t *testing.T) {
		h := newHarness(t, harnessOptions{unsynced: true})
		h.startAndWaitRegistered()
		h.add(modRule("team-a", "r", "uid", 1, "Pod"))
		if err := h.stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Start() = %v, want nil or context.Canceled", err)
		}
		if h.src.Synced() || h.store.Current() != nil {
			t.Error("a snapshot was published although the informer never synced")
		}
	})
}

func TestRuleSourceAddAndUpdate(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.startAndWaitSynced()
	const k = "team-a/r"

	h.add(modRule("team-a", "r", "uid-1", 1, "Pod"))
	snap := h.waitKeys(k)
	h.waitChanged(k)
	c1, ok := h.src.Compiled(id(k), "uid-1", 1)
	if !ok {
		t.Fatalf("Compiled(%q, uid-1, 1) found nothing after the rule was published", k)
	}
	if c1.Err != nil || c1.Rule == nil {
		t.Fatalf("valid rule compiled to %v with error %v", c1.Rule, c1.Err)
	}
	r1 := c1.Rule
	if got := ruleByKey(snap, k); got != r1 {
		t.Error("the snapshot's rule is not the one Compiled returns")
	}
	if got := ruleKeys(snap.Candidates("team-a", rules.Create, "Pod", nil)); !slices.Equal(got, []string{k}) {
		t.Errorf("Candidates(team-a, CREATE, Pod) = %q, want the new rule", got)
	}
	if got := snap.Candidates("team-a", rules.Create, "Deployment", nil); len(got) != 0 {
		t.Errorf("Candidates(team-a, CREATE, Deployment) = %q, want none", ruleKeys(got))
	}
	for _, c := range []struct {
		id  cluster.RuleID
		uid types.UID
		gen int64
	}{
		{id(k), "uid-1", 2}, {id(k), "uid-1", 0}, {id(k), "uid-2", 1},
		{id("team-a/other"), "uid-1", 1},                     // unknown key
		{cluster.RuleID{Kind: "Policy", Key: k}, "uid-1", 1}, // another kind
	} {
		if r, ok := h.src.Compiled(c.id, c.uid, c.gen); ok || r.Rule != nil || r.Err != nil {
			t.Errorf("Compiled(%v, %s, %d) = %+v, %v; want nothing", c.id, c.uid, c.gen, r, ok)
		}
	}

	// Changes that keep the generation do not recompile, nor publish.
	published := func() float64 { v, _ := h.metric("modwright_snapshot_builds_total", "result", "published"); return v }
	for _, c := range []struct {
		name string
		mod  func(*v1beta1.ModRule)
	}{
		{"label", func(mr *v1beta1.ModRule) { mr.Labels = map[string]string{"team": "a"} }},
		{"status", func(mr *v1beta1.ModRule) { mr.Status.ObservedGeneration = 1 }},
		{"annotation", func(mr *v1beta1.ModRule) { mr.Annotations = map[string]string{"note": "x"} }},
	} {
		h.resetChanges()
		before := published()
		h.update("team-a", "r", c.mod)
		h.barrier()
		if n := published() - before; n != 2 {
			t.Errorf("after a %s change: %v snapshots published, want 2 (the barrier rule's add and delete)", c.name, n)
		}
		if got, ok := h.src.Compiled(id(k), "uid-1", 1); !ok || got.Rule != r1 {
			t.Errorf("after a %s change: Compiled(%q, uid-1, 1) = %p, %v; want the same rule %p", c.name, k, got.Rule, ok, r1)
		}
		if got := ruleByKey(h.store.Current(), k); got != r1 {
			t.Errorf("after a %s change: the snapshot holds %p, want the same rule %p", c.name, got, r1)
		}
		if got := h.changed(); len(got) != 0 {
			t.Errorf("after a %s change: OnChange reported %q, want nothing", c.name, got)
		}
	}

	// A new generation recompiles.
	h.resetChanges()
	h.update("team-a", "r", func(mr *v1beta1.ModRule) {
		mr.Generation = 2
		mr.Spec.Match[0].MatchValue = ptr("Deployment")
	})
	eventually(t, "generation 2 to be compiled", func() bool { _, ok := h.src.Compiled(id(k), "uid-1", 2); return ok })
	c2, _ := h.src.Compiled(id(k), "uid-1", 2)
	r2 := c2.Rule
	if r2 == r1 {
		t.Fatal("a new generation returned the old compiled rule")
	}
	if c2.Err != nil || generation(r2) != 2 {
		t.Errorf("generation 2 compiled to generation %d, error %v", generation(r2), c2.Err)
	}
	if r, ok := h.src.Compiled(id(k), "uid-1", 1); ok {
		t.Errorf("Compiled(%q, uid-1, 1) = %p after generation 2 was compiled; want nothing", k, r.Rule)
	}
	eventually(t, "generation 2 to be published", func() bool { return ruleByKey(h.store.Current(), k) == r2 })
	h.waitChanged(k)
	snap = h.store.Current()
	if got := snap.Candidates("team-a", rules.Create, "Deployment", nil); !slices.Equal(got, []engine.Rule{r2}) {
		t.Errorf("Candidates(team-a, CREATE, Deployment) = %q, want the new generation", ruleKeys(got))
	}
	if got := snap.Candidates("team-a", rules.Create, "Pod", nil); len(got) != 0 {
		t.Errorf("Candidates(team-a, CREATE, Pod) = %q, want none: the old generation must be gone", ruleKeys(got))
	}

	// A new uid at the same generation (the rule was deleted and created
	// again while the watch was down; the relist reports an update)
	// recompiles too.
	h.resetChanges()
	old := h.getRaw("team-a", "r")
	if err := h.client.Delete(h.ctx, old); err != nil {
		t.Fatal(err)
	}
	recreated := toUnstructured(t, modRule("team-a", "r", "uid-2", 2, "StatefulSet"))
	if err := h.client.Create(h.ctx, recreated); err != nil {
		t.Fatal(err)
	}
	h.inf.Update(old, recreated.DeepCopy())
	eventually(t, "the new uid to be compiled", func() bool { _, ok := h.src.Compiled(id(k), "uid-2", 2); return ok })
	c3, _ := h.src.Compiled(id(k), "uid-2", 2)
	r3 := c3.Rule
	if r3 == r2 || uidOf(r3) != "uid-2" {
		t.Errorf("the new uid compiled to %p (uid %s); want a new rule from uid-2", r3, uidOf(r3))
	}
	if _, ok := h.src.Compiled(id(k), "uid-1", 2); ok {
		t.Error("Compiled still returns the rule of the old uid")
	}
	eventually(t, "the new uid to be published", func() bool { return ruleByKey(h.store.Current(), k) == r3 })
	h.waitChanged(k)
	if got := h.store.Current().Candidates("team-a", rules.Create, "StatefulSet", nil); !slices.Equal(got, []engine.Rule{r3}) {
		t.Errorf("Candidates(team-a, CREATE, StatefulSet) = %q, want the recreated rule", ruleKeys(got))
	}
}

// TestRuleSourceKindConfiguration checks that rules compile with the
// registry's kinds as configured: a ModRule in the kind's cluster-rules
// namespace applies to cluster-scoped objects, one in KubeMod's default
// namespace (not configured here) to that namespace's objects only.
func TestRuleSourceKindConfiguration(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.startAndWaitSynced()
	clusterRule, kubemod, local := clusterRulesNS+"/c", "kubemod-system/k", "team-a/l"
	h.add(modRule(clusterRulesNS, "c", "uid-c", 1, "Namespace"))
	h.add(modRule("kubemod-system", "k", "uid-k", 1, "Namespace"))
	h.add(modRule("team-a", "l", "uid-l", 1, "Namespace"))
	snap := h.waitKeys(kubemod, clusterRule, local)
	for _, c := range []struct {
		ns   string
		want []string
	}{
		{"", []string{clusterRule}},
		{"team-a", []string{local}},
		{"kubemod-system", []string{kubemod}},
		{clusterRulesNS, []string{}},
	} {
		if got := ruleKeys(snap.Candidates(c.ns, rules.Create, "Namespace", nil)); !slices.Equal(got, c.want) {
			t.Errorf("Candidates(%q, CREATE, Namespace) = %q, want %q", c.ns, got, c.want)
		}
	}
}

// TestRuleSourceUndecodable checks that a stored rule its kind cannot decode
// (an unknown field: the API server prunes those, the fake cache does not)
// is reported, in the log, the metrics and Compiled, and never served,
// while the other rules are; fixed in a new generation, it is served.
func TestRuleSourceUndecodable(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.startAndWaitSynced()
	const good, bad = "team-a/good", "team-a/bad"
	h.add(modRule("team-a", "good", "uid-good", 1, "Pod"))
	u := toUnstructured(t, modRule("team-a", "bad", "uid-bad", 1, "Pod"))
	if err := unstructured.SetNestedField(u.Object, "surprise", "spec", "unknownField"); err != nil {
		t.Fatal(err)
	}
	h.addRaw(u)
	h.waitChanged(good, bad)
	snap := h.waitKeys(good)

	c, ok := h.src.Compiled(id(bad), "uid-bad", 1)
	if !ok {
		t.Fatalf("Compiled(%q) found nothing; want the decoding error", bad)
	}
	if c.Rule != nil {
		t.Errorf("Compiled(%q).Rule = %v, want nil: the manifest cannot be decoded", bad, c.Rule)
	}
	if c.Err == nil || !strings.Contains(c.Err.Error(), `spec.unknownField: unknown field`) || !strings.Contains(c.Err.Error(), bad) {
		t.Errorf("Compiled(%q).Err = %v, want the rule and its unknown field spec.unknownField named", bad, c.Err)
	}
	if !errors.Is(c.Err, rules.ErrUndecodable) {
		t.Errorf("Compiled(%q).Err = %v is not rules.ErrUndecodable; want a decoding error", bad, c.Err)
	}
	if len(snap.Broken()) != 0 {
		t.Errorf("Broken() = %q, want none: an undecodable rule is not in the snapshot", ruleKeys(snap.Broken()))
	}
	if got := ruleKeys(snap.Candidates("team-a", rules.Create, "Pod", nil)); !slices.Equal(got, []string{good}) {
		t.Errorf("Candidates(team-a, CREATE, Pod) = %q, want only %s", got, good)
	}
	// Counted with the broken rules, not named (it has no compiled form).
	h.wantRuleMetricsCount(1, 1)
	if got := h.brokenNamed(); len(got) != 0 {
		t.Errorf("modwright_rule_broken names %q, want none", got)
	}
	if got := h.loggedWith("cannot be decoded", `"rule"="team-a/bad"`, `"kind"="ModRule"`, "unknownField"); len(got) != 1 {
		t.Errorf("%d log lines report the undecodable rule, want 1:\n%s", len(got), strings.Join(h.logs, "\n"))
	}

	// Fixed in generation 2: compiled and served.
	h.update("team-a", "bad", func(mr *v1beta1.ModRule) { mr.Generation = 2 })
	snap = h.waitKeys(bad, good)
	if c, ok := h.src.Compiled(id(bad), "uid-bad", 2); !ok || c.Rule == nil || c.Err != nil || ruleByKey(snap, bad) != c.Rule {
		t.Errorf("Compiled(%q, generation 2) = %+v, %v; want the served rule without error", bad, c, ok)
	}
	h.wantRuleMetricsCount(2, 0)
}

func TestRuleSourceBrokenRule(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.startAndWaitSynced()
	const good, bad = "team-a/good", "team-a/bad"

	h.add(modRule("team-a", "good", "uid-good", 1, "Pod"))
	h.add(brokenRule("team-a", "bad", "uid-bad", 1))
	snap := h.waitKeys(bad, good)
	h.waitChanged(bad, good)

	b := ruleByKey(snap, bad)
	bErr := b.Info().Err
	if bErr == nil {
		t.Fatalf("the rule with select %q compiled without error", brokenSelect)
	}
	if !errors.Is(bErr, rules.ErrInvalidRule) {
		t.Errorf("the broken rule's error %v is not rules.ErrInvalidRule", bErr)
	}
	var ce *rules.CompileError
	if !errors.As(bErr, &ce) {
		t.Fatalf("the broken rule's error is %T, want *rules.CompileError", bErr)
	}
	if ce.Kind != v1beta1.Kind || ce.Rule != bad || len(ce.Errors) != 1 || ce.Errors[0].Field != "spec.match[0].select" {
		t.Errorf("CompileError = {Kind: %q, Rule: %q, Errors: %+v}, want one error on spec.match[0].select of ModRule %s", ce.Kind, ce.Rule, ce.Errors, bad)
	}
	if got := snap.Broken(); !slices.Equal(got, []engine.Rule{b}) {
		t.Errorf("Broken() = %q, want the broken rule", ruleKeys(got))
	}
	if got, ok := h.src.Compiled(id(bad), "uid-bad", 1); !ok || got.Rule != b || !errors.Is(got.Err, rules.ErrInvalidRule) {
		t.Errorf("Compiled(%q) = %+v, %v; want the broken rule %p with its error", bad, got, ok, b)
	}
	// It is never a candidate.
	if got := ruleKeys(snap.Candidates("team-a", rules.Create, "Pod", nil)); !slices.Equal(got, []string{good}) {
		t.Errorf("Candidates(team-a, CREATE, Pod) = %q, want only the good rule", got)
	}
	h.wantRuleMetrics(1, bad)

	// Not recompiled without a new generation: still broken, same rule.
	h.update("team-a", "bad", func(mr *v1beta1.ModRule) { mr.Labels = map[string]string{"x": "y"} })
	h.barrier()
	if got, ok := h.src.Compiled(id(bad), "uid-bad", 1); !ok || got.Rule != b {
		t.Errorf("after a label change Compiled(%q) = %p, %v; want the same broken rule %p", bad, got.Rule, ok, b)
	}
	h.wantRuleMetrics(1, bad)

	// Fixed in generation 2.
	h.update("team-a", "bad", func(mr *v1beta1.ModRule) {
		mr.Generation = 2
		mr.Spec.Match[0].Select = "$.kind"
	})
	eventually(t, "the fixed rule to be published", func() bool {
		return generation(ruleByKey(h.store.Current(), bad)) == 2
	})
	snap = h.store.Current()
	if err := ruleByKey(snap, bad).Info().Err; err != nil {
		t.Errorf("the fixed rule still has error %v", err)
	}
	if got := snap.Broken(); len(got) != 0 {
		t.Errorf("Broken() = %q after the fix, want none", ruleKeys(got))
	}
	h.wantRuleMetrics(2)

	// Broken again, then deleted: the broken metric follows.
	h.update("team-a", "bad", func(mr *v1beta1.ModRule) {
		mr.Generation = 3
		mr.Spec.Match[0].Select = brokenSelect
	})
	eventually(t, "the broken generation 3 to be published", func() bool {
		r := ruleByKey(h.store.Current(), bad)
		return generation(r) == 3 && errors.Is(r.Info().Err, rules.ErrInvalidRule)
	})
	h.wantRuleMetrics(1, bad)
	h.remove("team-a", "bad")
	h.waitKeys(good)
	h.wantRuleMetrics(1)
}

// wantRuleMetrics checks the rule gauges of the serving snapshot.
func (h *harness) wantRuleMetrics(ready int, broken ...string) {
	h.t.Helper()
	if got, _ := h.metric("modwright_rules", "state", "ready"); got != float64(ready) {
		h.t.Errorf("modwright_rules{state=ready} = %v, want %d", got, ready)
	}
	if got, _ := h.metric("modwright_rules", "state", "broken"); got != float64(len(broken)) {
		h.t.Errorf("modwright_rules{state=broken} = %v, want %d", got, len(broken))
	}
	if diff := cmp.Diff(broken, h.brokenNamed()); diff != "" {
		h.t.Errorf("modwright_rule_broken rules (-want +got):\n%s", diff)
	}
}

// brokenNamed returns the rules modwright_rule_broken names (all of them
// ModRules here, labelled kind="ModRule").
func (h *harness) brokenNamed() []string {
	h.t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		if f.GetName() != "modwright_rule_broken" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if m.GetGauge().GetValue() == 1 && len(labels) == 2 && labels["kind"] == "ModRule" {
				got = append(got, labels["rule"])
			}
		}
	}
	return got
}

func TestRuleSourceWithoutMetrics(t *testing.T) {
	h := newHarness(t, harnessOptions{noMetrics: true})
	h.startAndWaitSynced()
	h.add(brokenRule("team-a", "bad", "uid", 1))
	h.add(modRule("team-a", "good", "uid", 1, "Pod"))
	snap := h.waitKeys("team-a/bad", "team-a/good")
	if got := ruleKeys(snap.Broken()); !slices.Equal(got, []string{"team-a/bad"}) {
		t.Errorf("Broken() = %q, want team-a/bad", got)
	}
}

func TestRuleSourceDelete(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.startAndWaitSynced()
	const a, b = "team-a/a", "team-b/b"
	h.add(modRule("team-a", "a", "uid-a", 1, "Pod"))
	h.add(modRule("team-b", "b", "uid-b", 1, "Pod"))
	h.waitKeys(a, b)
	cb, ok := h.src.Compiled(id(b), "uid-b", 1)
	rb := cb.Rule
	if !ok {
		t.Fatalf("Compiled(%q) found nothing", b)
	}

	h.resetChanges()
	h.remove("team-a", "a")
	snap := h.waitKeys(b)
	h.waitChanged(a)
	if r, ok := h.src.Compiled(id(a), "uid-a", 1); ok {
		t.Errorf("Compiled(%q) = %p after the rule was deleted, want nothing", a, r.Rule)
	}
	if got := ruleByKey(snap, b); got != rb {
		t.Errorf("deleting %s recompiled %s", a, b)
	}
	if got := snap.Candidates("team-a", rules.Create, "Pod", nil); len(got) != 0 {
		t.Errorf("Candidates(team-a, CREATE, Pod) = %q after the deletion, want none", ruleKeys(got))
	}
	h.barrier()
	if got := h.changed(); !slices.Equal(got, []string{a}) {
		t.Errorf("OnChange reported %q for the deletion of %s, want only it", got, a)
	}

	// A deletion the informer only learned from a relist comes as a
	// tombstone.
	h.resetChanges()
	mb := h.getRaw("team-b", "b")
	if err := h.client.Delete(h.ctx, mb); err != nil {
		t.Fatal(err)
	}
	for _, hd := range h.cache.liveHandlers() {
		hd.OnDelete(toolscache.DeletedFinalStateUnknown{Key: b, Obj: mb})
	}
	h.waitKeys()
	h.waitChanged(b)
	if r, ok := h.src.Compiled(id(b), "uid-b", 1); ok {
		t.Errorf("Compiled(%q) = %p after its tombstone, want nothing", b, r.Rule)
	}
	h.wantRuleMetrics(0)
}

func TestRuleSourceReadError(t *testing.T) {
	injected := errors.New("injected read error")
	var failing atomic.Value // the key whose reads fail, "" for none
	failing.Store("")
	h := newHarness(t, harnessOptions{funcs: &interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if isModRule(obj) && key.String() == failing.Load().(string) {
				return injected
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}})
	h.startAndWaitSynced()
	const k, other = "team-a/r", "team-a/other"
	failedBuilds := func() float64 { v, _ := h.metric("modwright_snapshot_builds_total", "result", "failed"); return v }

	// A rule that cannot be read is not published; it stays dirty and the
	// next event retries it.
	failing.Store(k)
	h.add(modRule("team-a", "r", "uid-r", 1, "Pod"))
	eventually(t, "a failed build to be counted", func() bool { return failedBuilds() == 1 })
	if r := ruleByKey(h.store.Current(), k); r != nil {
		t.Errorf("the unreadable rule %s was published", k)
	}
	failing.Store("")
	h.add(modRule("team-a", "other", "uid-o", 1, "Pod"))
	h.waitKeys(other, k)
	c1, ok := h.src.Compiled(id(k), "uid-r", 1)
	r1 := c1.Rule
	if !ok {
		t.Fatalf("Compiled(%q) found nothing after the retry", k)
	}

	// When a compiled rule cannot be read again, the previous compiled
	// form keeps serving until a later event retries the read.
	failing.Store(k)
	h.update("team-a", "r", func(mr *v1beta1.ModRule) {
		mr.Generation = 2
		mr.Spec.Match[0].MatchValue = ptr("Deployment")
	})
	eventually(t, "a second failed build to be counted", func() bool { return failedBuilds() == 2 })
	if got := ruleByKey(h.store.Current(), k); got != r1 {
		t.Errorf("the snapshot holds %p for %s after a failed read, want the previous rule %p", got, k, r1)
	}
	failing.Store("")
	h.update("team-a", "other", func(mr *v1beta1.ModRule) { mr.Labels = map[string]string{"poke": "1"} })
	eventually(t, "generation 2 to be published after the retry", func() bool {
		return generation(ruleByKey(h.store.Current(), k)) == 2
	})
}

// TestRuleSourceReadErrorRetried checks that an unreadable rule is read
// again after RetryDelay, with no further event, and that each failure is
// counted.
func TestRuleSourceReadErrorRetried(t *testing.T) {
	injected := errors.New("injected read error")
	var fails atomic.Int32 // reads of team-a/r still to fail
	h := newHarness(t, harnessOptions{retryDelay: 5 * time.Millisecond, funcs: &interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if isModRule(obj) && key.String() == "team-a/r" && fails.Add(-1) >= 0 {
				return injected
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}})
	h.startAndWaitSynced()
	fails.Store(3)
	h.add(modRule("team-a", "r", "uid-r", 1, "Pod"))
	h.waitKeys("team-a/r") // published without another event
	if n := fails.Load(); n >= 0 {
		t.Errorf("%d injected failures left; the rule was published before they were used", n+1)
	}
	if v, _ := h.metric("modwright_snapshot_builds_total", "result", "failed"); v != 3 {
		t.Errorf("failed builds = %v, want 3 (one per failed read)", v)
	}
}

// TestRuleSourceDeletedBeforeRead checks that a rule deleted before the
// source read it (its add and delete events arrive after the object is gone)
// publishes no snapshot and reports no change.
func TestRuleSourceDeletedBeforeRead(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.startAndWaitSynced()
	published := func() float64 { v, _ := h.metric("modwright_snapshot_builds_total", "result", "published"); return v }
	before := published()
	gone := toUnstructured(t, modRule("team-a", "gone", "uid-gone", 1, "Pod"))
	for _, hd := range h.cache.liveHandlers() {
		hd.OnAdd(gone, false)
		hd.OnDelete(gone)
	}
	h.barrier()
	if got := h.changed(); len(got) != 0 {
		t.Errorf("OnChange reported %q, want nothing", got)
	}
	if n := published() - before; n != 2 {
		t.Errorf("%v snapshots published, want 2 (the barrier rule's add and delete)", n)
	}
}

func TestRuleSourceWaitsForTheCRD(t *testing.T) {
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: v1beta1.Group, Kind: v1beta1.Kind}, SearchedVersions: []string{v1beta1.Version}}

	t.Run("installed later", func(t *testing.T) {
		var calls atomic.Int32
		h := newHarness(t, harnessOptions{informerErr: func() error {
			if calls.Add(1) == 1 {
				return noMatch
			}
			return nil
		}})
		h.startAndWaitSynced()
		if n := calls.Load(); n < 2 {
			t.Errorf("GetInformer was called %d times, want a retry after the missing CRD", n)
		}
		h.add(modRule("team-a", "r", "uid", 1, "Pod"))
		h.waitKeys("team-a/r")
	})

	t.Run("never installed", func(t *testing.T) {
		var calls atomic.Int32
		h := newHarness(t, harnessOptions{informerErr: func() error { calls.Add(1); return noMatch }})
		h.start()
		eventually(t, "GetInformer to be called", func() bool { return calls.Load() > 0 })
		if h.src.Synced() {
			t.Error("Synced() = true without the CRD")
		}
		if err := h.stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Start() = %v after cancel, want nil or context.Canceled", err)
		}
		if h.store.Current() != nil {
			t.Error("a snapshot was published without the CRD")
		}
	})

	t.Run("other error", func(t *testing.T) {
		boom := errors.New("boom")
		h := newHarness(t, harnessOptions{informerErr: func() error { return boom }})
		h.startFails = true
		h.start()
		err := h.result()
		if !errors.Is(err, boom) {
			t.Errorf("Start() = %v, want an error wrapping %v", err, boom)
		}
		if h.src.Synced() || h.store.Current() != nil {
			t.Error("a snapshot was published although the informer could not be had")
		}
	})
}

// TestRuleSourceBurst adds many rules, some before the sync and some after,
// some broken, in several namespaces, so that several compile workers run.
func TestRuleSourceBurst(t *testing.T) {
	h := newHarness(t, harnessOptions{unsynced: true})
	h.startAndWaitRegistered()
	var want []string
	add := func(i int) {
		ns, name := fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("r-%02d", i)
		if i%7 == 0 {
			h.add(brokenRule(ns, name, types.UID(name), int64(i+1)))
		} else {
			h.add(modRule(ns, name, types.UID(name), int64(i+1), fmt.Sprint("Kind", i%4)))
		}
		want = append(want, ns+"/"+name)
	}
	for i := range 30 {
		add(i)
	}
	h.inf.Synced()
	for i := 30; i < 60; i++ {
		add(i)
	}
	slices.Sort(want)
	snap := h.waitKeys(want...)
	var broken int
	for i, r := range snap.Rules() {
		k := r.Info().Key
		_, name, _ := cutKey(k)
		got, ok := h.src.Compiled(id(k), types.UID(name), generation(r))
		if !ok || got.Rule != r {
			t.Errorf("rule %d %s: Compiled = %p, %v; want the snapshot's %p", i, k, got.Rule, ok, r)
		}
		if r.Info().Err != nil {
			broken++
		}
	}
	if broken != 9 || len(snap.Broken()) != 9 {
		t.Errorf("%d rules have errors and Broken() holds %d, want 9", broken, len(snap.Broken()))
	}
	h.waitChanged(want...)
	h.wantRuleMetricsCount(51, 9)
}

func (h *harness) wantRuleMetricsCount(ready, broken int) {
	h.t.Helper()
	if got, _ := h.metric("modwright_rules", "state", "ready"); got != float64(ready) {
		h.t.Errorf("modwright_rules{state=ready} = %v, want %d", got, ready)
	}
	if got, _ := h.metric("modwright_rules", "state", "broken"); got != float64(broken) {
		h.t.Errorf("modwright_rules{state=broken} = %v, want %d", got, broken)
	}
}

func cutKey(k string) (ns, name string, ok bool) { return strings.Cut(k, "/") }

// isModRule reports whether obj is a ModRule as the RuleSource reads it.
func isModRule(obj client.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	return ok && u.GroupVersionKind() == modRuleGVK
}
