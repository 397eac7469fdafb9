package generator

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/modwright/modwright/internal/engine"
)

// TestDownstream: the synchronized objects of a rule go once its object
// is deleted from the API server, and only its inner rules' own; a rule
// missing from a snapshot while its object is still there deletes
// nothing.
func TestDownstream(t *testing.T) {
	policies := schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}
	marked := func(name, rule string) *unstructured.Unstructured {
		u := object("v1", "ConfigMap", "team", name, "")
		u.SetLabels(map[string]string{LabelGenerated: "true"})
		u.SetAnnotations(map[string]string{AnnotationRule: rule})
		return u
	}
	policy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "p"}}}
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", policies: "ClusterPolicyList"},
		policy, marked("synced", "ClusterPolicy p rule sync"), marked("kept", "ClusterPolicy p rule orphan"), marked("other", "ClusterPolicy q rule sync"))
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "kyverno.io", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "kyverno.io", Version: "v1", Kind: "ClusterPolicy"}, meta.RESTScopeRoot)
	g := NewGenerator(Options{Client: c, Mapper: m, Watch: []schema.GroupVersionResource{configMaps}, Log: logr.Discard()})
	evals := 0
	rule := &namespaceRule{info: engine.RuleInfo{Kind: "ClusterPolicy", Group: "kyverno.io", Key: "p", Name: "p", Phase: engine.Validate, Downstream: []string{"sync"}}, evals: &evals}
	snaps := &staticSnapshots{engine.NewSnapshot([]engine.Rule{rule})}
	d := &Downstream{Generator: g, Snapshots: snaps, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 1}), known: map[string]knownRule{}}
	ctx := context.Background()
	names := func() []string {
		l, err := c.Resource(configMaps).Namespace("team").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range l.Items {
			out = append(out, o.GetName())
		}
		return out
	}
	d.look(ctx)
	snaps.s = engine.NewSnapshot(nil) // the rule leaves the snapshot, its object stays
	d.look(ctx)
	if got := names(); len(got) != 3 {
		t.Fatalf("objects %v: deleted while the policy is still there", got)
	}
	if err := c.Resource(policies).Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d.look(ctx)
	if got := names(); len(got) != 2 || contains(got, "synced") {
		t.Fatalf("objects %v: want the deleted rule's synchronized object gone, the others kept", got)
	}
	if len(d.known) != 0 {
		t.Errorf("known %v after the deletion", d.known)
	}
}
