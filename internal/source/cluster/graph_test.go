package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestServedResource(t *testing.T) {
	crd := func(versions ...any) map[string]any {
		return map[string]any{"spec": map[string]any{"group": "example.com", "names": map[string]any{"plural": "widgets", "kind": "Widget"}, "versions": versions}}
	}
	v := func(name string, served, storage bool) any {
		return map[string]any{"name": name, "served": served, "storage": storage}
	}
	for _, c := range []struct {
		name    string
		crd     map[string]any
		version string // "": none
	}{
		{"the storage version", crd(v("v1beta1", true, false), v("v1", true, true)), "v1"},
		{"storage not served: the first served", crd(v("v1alpha1", false, true), v("v1beta1", true, false), v("v1", true, false)), "v1beta1"},
		{"nothing served", crd(v("v1", false, true)), ""},
		{"no versions", crd(), ""},
	} {
		gvr, kind, ok := servedResource(c.crd)
		if want := (schema.GroupVersionResource{Group: "example.com", Version: c.version, Resource: "widgets"}); ok != (c.version != "") || ok && (gvr != want || kind != "Widget") {
			t.Errorf("%s: %v %s %v", c.name, gvr, kind, ok)
		}
	}
	est := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "NamesAccepted", "status": "True"}, map[string]any{"type": "Established", "status": "True"}}}}
	if !established(est) || established(map[string]any{}) {
		t.Error("established")
	}
}
