package modrule

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/api/v1beta1"
)

// compileMatch compiles a Reject rule in namespace ns with the given
// criteria and an optional targetNamespaceRegex.
func compileMatch(t *testing.T, ns string, target *string, match ...v1beta1.MatchItem) *Rule {
	t.Helper()
	mr := &v1beta1.ModRule{Spec: v1beta1.ModRuleSpec{Type: v1beta1.ModRuleTypeReject, Match: match, TargetNamespaceRegex: target}}
	mr.Name, mr.Namespace = "r", ns
	r, err := Compile(mr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ptr[T any](v T) *T { return &v }

func TestPathOf(t *testing.T) {
	tests := []struct {
		sel  string
		want []string
	}{
		{"$.metadata.labels.app", []string{"metadata", "labels", "app"}},
		{`$.metadata.annotations["a.b/c"]`, []string{"metadata", "annotations", "a.b/c"}},
		{"$.spec.containers[*].image", nil},
		{"$.spec.replicas > 1", nil},
		{"$", nil},
	}
	for _, tt := range tests {
		r := compileMatch(t, "shop", nil, v1beta1.MatchItem{Select: tt.sel})
		if diff := cmp.Diff(tt.want, pathOf(&r.Criteria[0])); diff != "" {
			t.Errorf("pathOf(%q) (-want +got):\n%s", tt.sel, diff)
		}
	}
}

func TestSatisfy(t *testing.T) {
	tests := []struct {
		name string
		item v1beta1.MatchItem
		want map[string]any
	}{
		{"value", v1beta1.MatchItem{Select: "$.metadata.labels.team", MatchValue: ptr("a")},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x", "team": "a"}}}},
		{"values", v1beta1.MatchItem{Select: "$.spec.x", MatchValues: []string{"b", "c"}},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}}, "spec": map[string]any{"x": "b"}}},
		{"exists", v1beta1.MatchItem{Select: "$.spec.y"},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}}, "spec": map[string]any{"y": "sample"}}},
		{"negated existence removes", v1beta1.MatchItem{Select: "$.metadata.labels.app", Negate: true},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{}}}},
		{"regex left alone", v1beta1.MatchItem{Select: "$.spec.z", MatchRegex: ptr("a.*")},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}}}},
		{"kind left alone", v1beta1.MatchItem{Select: "$.kind", MatchValue: ptr("Pod")},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compileMatch(t, "shop", nil, tt.item)
			obj := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}}}
			satisfy(obj, &r.Criteria[0])
			if diff := cmp.Diff(tt.want, obj); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSampleNamespace(t *testing.T) {
	pod := map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "p"}}
	podIn := map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "web"}}
	node := map[string]any{"kind": "Node", "metadata": map[string]any{"name": "n"}}
	tests := []struct {
		name   string
		ns     string
		target *string
		obj    map[string]any
		want   string
	}{
		{"cluster-scoped", "shop", nil, node, ""},
		{"namespaced rule", "shop", nil, podIn, "shop"},
		{"rule without namespace", "", nil, pod, "default"},
		{"rule without namespace, object's own", "", nil, podIn, "web"},
		{"target matches", DefaultClusterRulesNamespace, ptr("web"), podIn, "web"},
		{"target does not match", DefaultClusterRulesNamespace, ptr("^sam"), podIn, "sample"},
	}
	for _, tt := range tests {
		r := compileMatch(t, tt.ns, tt.target, v1beta1.MatchItem{Select: "$.kind"})
		if got := r.sampleNamespace(tt.obj); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
