package generator

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/modwright/modwright/internal/engine"
)

// TestDownstream: the synchronized objects of a rule go once its object
// is deleted from the API server, and only its inner rules' own; a rule
// missing from a snapshot while its object is still there deletes
// nothing.
func TestDownstream(t *testing.T) {
	policies := schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}
	policy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "p"}}}
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", policies: "ClusterPolicyList"},
		policy, generatedBy("synced", "ClusterPolicy p rule sync"), generatedBy("kept", "ClusterPolicy p rule orphan"), generatedBy("other", "ClusterPolicy q rule sync"))
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "kyverno.io", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "kyverno.io", Version: "v1", Kind: "ClusterPolicy"}, meta.RESTScopeRoot)
	g := NewGenerator(Options{Client: c, Mapper: m, Watch: []schema.GroupVersionResource{configMaps}, Log: logr.Discard()})
	evals := 0
	rule := &namespaceRule{info: engine.RuleInfo{Kind: "ClusterPolicy", Group: "kyverno.io", Key: "p", Name: "p", Phase: engine.Validate, Downstream: []string{"sync"}}, evals: &evals}
	snaps := &staticSnapshots{engine.NewSnapshot([]engine.Rule{rule})}
	d := &Downstream{Generator: g, Snapshots: snaps, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 1}), known: map[string]knownRule{}}
	ctx := context.Background()
	d.look(ctx)
	snaps.s = engine.NewSnapshot(nil) // the rule leaves the snapshot, its object stays
	d.look(ctx)
	if got := configMapNames(t, c); len(got) != 3 {
		t.Fatalf("objects %v: deleted while the policy is still there", got)
	}
	if err := c.Resource(policies).Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d.look(ctx)
	if got := configMapNames(t, c); len(got) != 2 || contains(got, "synced") {
		t.Fatalf("objects %v: want the deleted rule's synchronized object gone, the others kept", got)
	}
	if len(d.known) != 0 {
		t.Errorf("known %v after the deletion", d.known)
	}
}

// TestDownstreamWhileLeaderless: a rule deleted while no replica led (a
// new leader never saw it) has its marked synchronized objects deleted
// once the API server confirms it is gone; a rule whose object is still
// there, and an object not marked for deletion with its rule (even when
// another object's mark names that rule), are left.
func TestDownstreamWhileLeaderless(t *testing.T) {
	policies := schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}
	marked := func(name, policy string, downstream bool) *unstructured.Unstructured {
		u := object("v1", "ConfigMap", "team", name, "")
		u.SetLabels(map[string]string{LabelGenerated: "true"})
		ann := map[string]string{AnnotationRule: "ClusterPolicy " + policy + " rule sync"}
		if downstream {
			ann[AnnotationDownstream] = `{"group":"kyverno.io","kind":"ClusterPolicy","key":"` + policy + `","name":"` + policy + `","inner":["sync"]}`
		}
		u.SetAnnotations(ann)
		return u
	}
	alive := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "alive"}}}
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", policies: "ClusterPolicyList"},
		alive, marked("of-gone", "gone", true), marked("orphaned", "gone-orphan", false), marked("of-alive", "alive", true),
		// A forged mark naming the orphaning rule: only the forged
		// object goes, never the orphaned one.
		marked("forged", "gone-orphan", true))
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "kyverno.io", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "kyverno.io", Version: "v1", Kind: "ClusterPolicy"}, meta.RESTScopeRoot)
	g := NewGenerator(Options{Client: c, Mapper: m, Watch: []schema.GroupVersionResource{configMaps}, Log: logr.Discard()})
	// The new leader's snapshot has none of these rules (not loaded yet,
	// or deleted).
	d := &Downstream{Generator: g, Snapshots: &staticSnapshots{engine.NewSnapshot(nil)}, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 1}), known: map[string]knownRule{}}
	ctx := context.Background()
	d.look(ctx)
	l, err := c.Resource(configMaps).Namespace("team").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range l.Items {
		left = append(left, o.GetName())
	}
	slices.Sort(left)
	if want := []string{"of-alive", "orphaned"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// TestDownstreamMark: a synchronized object of a rule that deletes its
// objects with it is marked with the rule's identity; one of a rule that
// orphans them is not.
func TestDownstreamMark(t *testing.T) {
	c := newFake(object("v1", "Namespace", "", "team", "u-1"))
	applied := map[string]string{}
	c.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchAction)
		var u unstructured.Unstructured
		if err := json.Unmarshal(pa.GetPatch(), &u.Object); err != nil {
			return true, nil, err
		}
		applied[pa.GetName()] = u.GetAnnotations()[AnnotationDownstream]
		return true, &u, nil
	})
	evals := 0
	rule := &namespaceRule{info: engine.RuleInfo{Kind: "ClusterPolicy", Group: "kyverno.io", Key: "p", Name: "p", Phase: engine.Validate, Downstream: []string{"r"}}, evals: &evals}
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard(), Snapshots: &staticSnapshots{engine.NewSnapshot([]engine.Rule{rule})}})
	ctx := context.Background()
	for name, rule := range map[string]string{"kept": "ClusterPolicy p rule r", "orphan": "ClusterPolicy p rule other"} {
		if err := g.write(ctx, generated(name, true).Object, true, rule, trigger{Kind: "Namespace", Name: "team"}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"kept": `{"group":"kyverno.io","kind":"ClusterPolicy","key":"p","name":"p","inner":["r"]}`, "orphan": ""}
	if d := cmp.Diff(want, applied); d != "" {
		t.Errorf("%s (-want +got):\n%s", AnnotationDownstream, d)
	}
}

// TestDownstreamRuleRemoved: an inner rule removed from a rule that stays
// (or renamed) has its synchronized objects deleted, as Kyverno deletes a
// removed rule's; one that stays but stops synchronizing keeps them, and
// so do the other rules'.
func TestDownstreamRuleRemoved(t *testing.T) {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"},
		generatedBy("a", "ClusterPolicy p rule a"), generatedBy("b", "ClusterPolicy p rule b"), generatedBy("c", "ClusterPolicy p rule c"), generatedBy("q", "ClusterPolicy q rule b"))
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	g := NewGenerator(Options{Client: c, Mapper: m, Watch: []schema.GroupVersionResource{configMaps}, Log: logr.Discard()})
	evals := 0
	policy := func(downstream, generates []string) *staticSnapshots {
		return &staticSnapshots{engine.NewSnapshot([]engine.Rule{&namespaceRule{info: engine.RuleInfo{Kind: "ClusterPolicy", Group: "kyverno.io", Key: "p", Name: "p",
			Phase: engine.Validate, Downstream: downstream, Generates: generates}, evals: &evals}})}
	}
	ctx := context.Background()
	d := &Downstream{Generator: g, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 1}), known: map[string]knownRule{}}
	for _, step := range []struct {
		downstream, generates, want []string
	}{
		{[]string{"a", "b"}, []string{"a", "b", "c"}, []string{"a", "b", "c", "q"}},
		{[]string{"a"}, []string{"a", "c"}, []string{"a", "c", "q"}}, // b removed: its object goes, q's stays
		{nil, []string{"a", "c"}, []string{"a", "c", "q"}},           // a stops synchronizing: kept
		{nil, nil, []string{"a", "c", "q"}},                          // no longer known: nothing more
	} {
		d.Snapshots = policy(step.downstream, step.generates)
		d.look(ctx)
		if got := configMapNames(t, c); !slices.Equal(got, step.want) {
			t.Errorf("downstream %v, generates %v: objects %v, want %v", step.downstream, step.generates, got, step.want)
		}
	}
}

// TestDownstreamMarksOlder: a new leader's first look marks the
// synchronized objects of a serving rule that deletes its objects with it
// when they carry no mark of it (written before marks existed), and only
// those; a later leader then finds them when the rule was deleted while
// none led.
func TestDownstreamMarksOlder(t *testing.T) {
	policies := schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}
	policy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "p"}}}
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", policies: "ClusterPolicyList"},
		policy, generatedBy("old", "ClusterPolicy p rule sync"), generatedBy("orphan", "ClusterPolicy p rule keep"), generatedBy("other", "ClusterPolicy q rule sync"))
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "kyverno.io", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "kyverno.io", Version: "v1", Kind: "ClusterPolicy"}, meta.RESTScopeRoot)
	evals := 0
	serving := &staticSnapshots{engine.NewSnapshot([]engine.Rule{&namespaceRule{info: engine.RuleInfo{Kind: "ClusterPolicy", Group: "kyverno.io", Key: "p", Name: "p",
		Phase: engine.Validate, Downstream: []string{"sync"}, Generates: []string{"sync", "keep"}}, evals: &evals}})}
	g := NewGenerator(Options{Client: c, Mapper: m, Watch: []schema.GroupVersionResource{configMaps}, Log: logr.Discard(), Snapshots: serving})
	ctx := context.Background()
	marks := func() map[string]string {
		l, err := c.Resource(configMaps).Namespace("team").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, o := range l.Items {
			out[o.GetName()] = o.GetAnnotations()[AnnotationDownstream]
		}
		return out
	}
	(&Downstream{Generator: g, Snapshots: serving, Log: logr.Discard(), known: map[string]knownRule{}}).look(ctx)
	want := map[string]string{"old": `{"group":"kyverno.io","kind":"ClusterPolicy","key":"p","name":"p","inner":["sync"]}`, "orphan": "", "other": ""}
	if d := cmp.Diff(want, marks()); d != "" {
		t.Fatalf("marks (-want +got):\n%s", d)
	}
	// The policy goes while no replica leads; the next leader never saw it.
	if err := c.Resource(policies).Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	none := &staticSnapshots{engine.NewSnapshot(nil)}
	g2 := NewGenerator(Options{Client: c, Mapper: m, Watch: []schema.GroupVersionResource{configMaps}, Log: logr.Discard(), Snapshots: none})
	d2 := &Downstream{Generator: g2, Snapshots: none, Log: logr.Discard(), known: map[string]knownRule{}}
	d2.look(ctx)
	d2.look(ctx)
	got := slices.Sorted(maps.Keys(marks()))
	if !slices.Equal(got, []string{"orphan", "other"}) {
		t.Errorf("objects %v, want the deleted rule's synchronized object gone", got)
	}
}

// generatedBy is a ConfigMap of namespace team the generator made for
// rule (no downstream mark).
func generatedBy(name, rule string) *unstructured.Unstructured {
	u := object("v1", "ConfigMap", "team", name, "")
	u.SetLabels(map[string]string{LabelGenerated: "true"})
	u.SetAnnotations(map[string]string{AnnotationRule: rule})
	return u
}

// configMapNames are the ConfigMaps of namespace team, by name.
func configMapNames(t *testing.T, c dynamic.Interface) []string {
	t.Helper()
	l, err := c.Resource(configMaps).Namespace("team").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range l.Items {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}
