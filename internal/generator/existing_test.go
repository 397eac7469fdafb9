package generator

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// namespaceRule is a rule that, for every Namespace, generates a
// ConfigMap by each of two inner rules, "existing" and "admitted".
type namespaceRule struct {
	info  engine.RuleInfo
	evals *int
}

func (r *namespaceRule) Info() *engine.RuleInfo             { return &r.info }
func (r *namespaceRule) InScope(string) bool                { return true }
func (r *namespaceRule) Match(*engine.Handle) (bool, error) { return true, nil }
func (r *namespaceRule) Apply(h *engine.Handle) error {
	*r.evals++
	ns := h.Request().Name
	for _, inner := range []string{"existing", "admitted"} {
		h.Generate(inner, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": inner, "namespace": ns}}, false)
	}
	return nil
}

// TestExisting: a rule acting on existing objects has its inner rules
// named in Existing carried out for every existing object of its kinds,
// once per rule value; a rule compiled again is scanned again.
func TestExisting(t *testing.T) {
	c := newFake(object("v1", "Namespace", "", "a", "u-a"), object("v1", "Namespace", "", "b", "u-b"))
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "namespaces", Kind: "Namespace", Verbs: []string{"get", "list"}},
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get", "list"}},
	}}}
	evals := 0
	rule := &namespaceRule{info: engine.RuleInfo{Kind: "ClusterPolicy", Key: "p", Phase: engine.Validate, Existing: []string{"existing"},
		Index: engine.IndexKeys{AnyNamespace: true, Kinds: []string{"Namespace"}, Operations: engine.OpSetOf(rules.Create)}}, evals: &evals}
	snap := engine.NewSnapshot([]engine.Rule{rule})
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard()})
	x := &Existing{Generator: g, Snapshots: &staticSnapshots{snap}, Client: c, Discovery: disc, Log: logr.Discard(), scanned: map[string]*engine.RuleInfo{}}
	x.scan(context.Background())
	if evals != 2 {
		t.Fatalf("%d evaluations, want one per Namespace", evals)
	}
	g.mu.Lock()
	var keys []string
	for k := range g.tasks {
		keys = append(keys, k)
	}
	g.mu.Unlock()
	if len(keys) != 2 || !contains(keys, "create v1/ConfigMap a/existing") || !contains(keys, "create v1/ConfigMap b/existing") {
		t.Fatalf("tasks %v: want the existing inner rule's ConfigMap for each Namespace", keys)
	}
	x.scan(context.Background())
	if evals != 2 {
		t.Errorf("the same rule scanned again (%d evaluations)", evals)
	}
	again := &namespaceRule{info: rule.info, evals: &evals}
	x.Snapshots = &staticSnapshots{engine.NewSnapshot([]engine.Rule{again})}
	x.scan(context.Background())
	if evals != 4 {
		t.Errorf("a rule compiled again not scanned (%d evaluations)", evals)
	}
	run(t, g, func() bool {
		_, err := c.Resource(configMaps).Namespace("b").Get(context.Background(), "existing", metav1.GetOptions{})
		return err == nil
	})
	if _, err := c.Resource(configMaps).Namespace("a").Get(context.Background(), "admitted", metav1.GetOptions{}); err == nil {
		t.Error("an inner rule not acting on existing objects generated for one")
	}
}

type staticSnapshots struct{ s *engine.Snapshot }

func (s *staticSnapshots) Current() *engine.Snapshot { return s.s }

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
