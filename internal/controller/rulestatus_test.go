package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/source/cluster"
)

// widgetKind is a made-up GroupOwner whose rules' status has its peer's
// shape, as Gatekeeper's constraints.
type widgetKind struct{}

var (
	_ kinds.GroupOwner    = widgetKind{}
	_ kinds.StatusWritten = widgetKind{}
)

func (widgetKind) Name() string                                 { return "Widget" }
func (widgetKind) Group() string                                { return "widgets.example.io" }
func (widgetKind) Versions() []string                           { return []string{"v1"} }
func (widgetKind) OwnedKinds() string                           { return "any widget" }
func (widgetKind) Compile(*kinds.Manifest) (engine.Rule, error) { return nil, nil }
func (widgetKind) RuleStatus(m *kinds.Manifest, id string, err error) map[string]any {
	st := map[string]any{"by": id, "ok": err == nil}
	if err != nil {
		st["error"] = err.Error()
	}
	return st
}

// compiled is a fixed Compiler.
type compiled map[cluster.RuleID]struct {
	uid        types.UID
	generation int64
	err        error
}

func (c compiled) Compiled(id cluster.RuleID, uid types.UID, generation int64) (cluster.Compiled, bool) {
	e, ok := c[id]
	if !ok || e.uid != uid || e.generation != generation {
		return cluster.Compiled{}, false
	}
	return cluster.Compiled{Err: e.err}, true
}

// TestRuleStatusWriter: the status of a StatusWritten kind's rules is
// written in its shape once the rule source compiled the stored
// generation; the other kinds' rules are left to their reconcilers.
func TestRuleStatusWriter(t *testing.T) {
	gadget := func(name string, generation int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "widgets.example.io/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": name, "uid": name + "-uid", "generation": generation}}}
		return u
	}
	good, bad, newer := gadget("good", 1), gadget("bad", 1), gadget("newer", 2)
	cl := fake.NewClientBuilder().WithObjects(good, bad, newer).WithStatusSubresource(good, bad, newer).Build()
	id := func(name string) cluster.RuleID {
		return cluster.RuleID{Kind: "Gadget", Key: name, Group: "widgets.example.io"}
	}
	src := compiled{
		id("good"):  {"good-uid", 1, nil},
		id("bad"):   {"bad-uid", 1, errors.New("spec.x: broken")},
		id("newer"): {"newer-uid", 1, nil}, // an older generation
	}
	w := &RuleStatusWriter{Client: cl, Kinds: []kinds.Kind{modrule.NewKind(""), widgetKind{}}, Source: src, ID: "pod-a", Log: logr.Discard()}
	w.Changed([]cluster.RuleID{id("good"), id("bad"), id("newer"), id("gone"), {Kind: "ModRule", Key: "ns/r", Group: "api.kubemod.io"}})
	if len(w.pending) != 4 {
		t.Errorf("pending %v: want the Gadgets only", w.pending)
	}
	if err := w.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	status := func(u *unstructured.Unstructured) any {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := cl.Get(context.Background(), client.ObjectKeyFromObject(u), got); err != nil {
			t.Fatal(err)
		}
		return got.Object["status"]
	}
	for _, c := range []struct {
		u    *unstructured.Unstructured
		want any
	}{
		{good, map[string]any{"by": "pod-a", "ok": true}},
		{bad, map[string]any{"by": "pod-a", "ok": false, "error": "spec.x: broken"}},
		{newer, nil},
	} {
		if diff := cmp.Diff(c.want, status(c.u)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.u.GetName(), diff)
		}
	}
	if len(w.pending) != 0 {
		t.Errorf("pending after a flush that wrote: %v", w.pending)
	}
}
