package kinds_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

func TestIsClusterScoped(t *testing.T) {
	for kind, want := range map[string]bool{"Namespace": true, "Node": true, "ClusterRole": true, "Pod": false, "Deployment": false, "Widget": false, "": false} {
		if got := kinds.IsClusterScoped(kind); got != want {
			t.Errorf("IsClusterScoped(%q) = %v", kind, got)
		}
	}
}

func TestOfflineRequest(t *testing.T) {
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}
	tests := []struct {
		name string
		obj  map[string]any
		ns   string
		op   rules.Operation
		want engine.Request
	}{
		{"grouped", dep, "shop", rules.Create, engine.Request{Operation: rules.Create, Name: "web", Namespace: "shop",
			Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: dep}},
		{"core delete", pod, "default", rules.Delete, engine.Request{Operation: rules.Delete, Name: "p", Namespace: "default",
			Kind: engine.GroupVersionKind{Version: "v1", Kind: "Pod"}, OldObject: pod}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, kinds.OfflineRequest(tt.obj, tt.ns, tt.op)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOfflineUpdate(t *testing.T) {
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}}
	old := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "labels": map[string]any{"a": "1"}}}
	attrs := engine.Request{Operation: rules.Update, Name: "web", Namespace: "shop",
		Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: dep}
	withOld := attrs
	withOld.OldObject = old
	tests := []struct {
		name string
		old  map[string]any
		want engine.Request
	}{
		{"with the old object", old, withOld},
		// A nil old object leaves OldObject a nil interface, not a typed nil.
		{"without", nil, attrs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := kinds.OfflineUpdate(dep, tt.old, "shop")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if (got.OldObject == nil) != (tt.old == nil) {
				t.Errorf("OldObject %#v", got.OldObject)
			}
		})
	}
}
