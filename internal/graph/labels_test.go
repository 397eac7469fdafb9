package graph

import (
	"reflect"
	"testing"
)

// TestSharedLabels: objects that carry the same labels share one copy of
// them (whatever the order the object lists them in), another set has its
// own, and a set no object carries any more is dropped, on a relabel and
// on a delete; a Pod's SELECTS edges follow its shared labels.
func TestSharedLabels(t *testing.T) {
	pod := func(name string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "a", "labels": labels}}
	}
	g := New(nil)
	g.Upsert(map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web", "namespace": "a"},
		"spec": map[string]any{"selector": map[string]any{"app": "web"}}})
	g.Upsert(pod("p1", map[string]any{"app": "web", "team": "x"}))
	g.Upsert(pod("p2", map[string]any{"team": "x", "app": "web"}))
	g.Upsert(pod("p3", map[string]any{"app": "db"}))
	g.Upsert(pod("p4", map[string]any{"n": int64(3)})) // no string values: no labels
	// A manifest's labels may hold any byte: two sets whose texts run
	// together alike are still two.
	g.Upsert(pod("p5", map[string]any{"a\x00b": "c"}))
	g.Upsert(pod("p6", map[string]any{"a": "b\x00c"}))
	labelsOf := func(name string) map[string]string {
		r, ok := g.Object(Ref{Kind: "Pod", Namespace: "a", Name: name})
		if !ok {
			t.Fatalf("no Pod %s", name)
		}
		return r.Labels
	}
	same := func(a, b map[string]string) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	if l1, l2 := labelsOf("p1"), labelsOf("p2"); !same(l1, l2) || l1["app"] != "web" || l1["team"] != "x" || len(l1) != 2 {
		t.Errorf("p1 %v and p2 %v: want one shared copy of app=web,team=x", l1, l2)
	}
	if l3 := labelsOf("p3"); same(l3, labelsOf("p1")) || l3["app"] != "db" {
		t.Errorf("p3's labels %v", l3)
	}
	if l4 := labelsOf("p4"); l4 != nil {
		t.Errorf("p4's labels %v, want none", l4)
	}
	if l5, l6 := labelsOf("p5"), labelsOf("p6"); same(l5, l6) || l5["a\x00b"] != "c" || l6["a"] != "b\x00c" {
		t.Errorf("p5 %q and p6 %q: want two sets", l5, l6)
	}
	g.Delete(Ref{Kind: "Pod", Namespace: "a", Name: "p5"})
	g.Delete(Ref{Kind: "Pod", Namespace: "a", Name: "p6"})
	if len(g.labelSets) != 2 {
		t.Errorf("%d label sets, want 2", len(g.labelSets))
	}
	selected := func() int {
		n := 0
		for _, e := range g.Outgoing(Ref{Kind: "Service", Namespace: "a", Name: "web"}) {
			if e.Type == Selects {
				n++
			}
		}
		return n
	}
	if n := selected(); n != 2 {
		t.Errorf("the Service selects %d Pods, want 2 (p1, p2)", n)
	}

	g.Upsert(pod("p3", map[string]any{"app": "web"})) // relabeled: app=db is carried no more
	if len(g.labelSets) != 2 || g.labelSets[labelsKey(map[string]any{"app": "db"})] != nil {
		t.Errorf("after the relabel: %d label sets, app=db among them: %v", len(g.labelSets), g.labelSets[labelsKey(map[string]any{"app": "db"})] != nil)
	}
	if n := selected(); n != 3 {
		t.Errorf("the Service selects %d Pods, want 3", n)
	}
	g.Upsert(pod("p1", map[string]any{"app": "web", "team": "x"})) // the same set again: still carried
	g.Delete(Ref{Kind: "Pod", Namespace: "a", Name: "p1"})
	if ls := g.labelSets[labelsKey(map[string]any{"app": "web", "team": "x"})]; ls == nil || ls.refs != 1 {
		t.Errorf("app=web,team=x after p1's delete: %+v, want carried by p2 alone", ls)
	}
	g.Delete(Ref{Kind: "Pod", Namespace: "a", Name: "p2"})
	g.Delete(Ref{Kind: "Pod", Namespace: "a", Name: "p3"})
	if len(g.labelSets) != 0 {
		t.Errorf("%d label sets with no Pod left carrying one, want 0", len(g.labelSets))
	}
}
