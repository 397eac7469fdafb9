package webhook

import (
	"slices"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source"
)

// namedRule is a rule of a kind, for the filter.
type namedRule struct{ info engine.RuleInfo }

func (r *namedRule) Info() *engine.RuleInfo             { return &r.info }
func (r *namedRule) InScope(string) bool                { return true }
func (r *namedRule) Match(*engine.Handle) (bool, error) { return false, nil }
func (r *namedRule) Apply(*engine.Handle) error         { return nil }

var _ engine.Rule = (*namedRule)(nil)

func TestKindFilter(t *testing.T) {
	rule := func(kind, name string) engine.Rule {
		return &namedRule{engine.RuleInfo{Kind: kind, Key: name, Name: name, Index: engine.IndexKeys{AnyNamespace: true}}}
	}
	st := &source.Store{}
	f := &KindFilter{Source: st, Keep: func(k string) bool { return k == "OverridePolicy" }}
	if f.Current() != nil {
		t.Fatal("a snapshot before the source has one")
	}
	st.Publish(engine.NewSnapshot([]engine.Rule{rule("ModRule", "a"), rule("OverridePolicy", "b"), rule("Policy", "c")}))
	first := f.Current()
	if first.Len() != 1 || first.Rules()[0].Info().Key != "b" {
		t.Fatalf("filtered: %d rules", first.Len())
	}
	if f.Current() != first {
		t.Error("the filtered snapshot is built again for the same source snapshot")
	}
	st.Publish(engine.NewSnapshot([]engine.Rule{rule("OverridePolicy", "b"), rule("OverridePolicy", "d")}))
	if got := f.Current(); got == first || got.Len() != 2 {
		t.Errorf("after a new source snapshot: %d rules", got.Len())
	}
}

func TestExcludeFilter(t *testing.T) {
	rule := func(kind, name string) engine.Rule {
		return &namedRule{engine.RuleInfo{Kind: kind, Key: name, Name: name, Index: engine.IndexKeys{AnyNamespace: true}}}
	}
	st := &source.Store{}
	f := &ExcludeFilter{Source: st}
	if f.Current() != nil {
		t.Fatal("a snapshot before the source has one")
	}
	src := engine.NewSnapshot([]engine.Rule{rule("ModRule", "ns/a"), rule("ModRule", "ns/b"), rule("Policy", "ns/a")})
	st.Publish(src)
	if f.Current() != src {
		t.Error("without exclusions the source's snapshot is served as it is")
	}
	f.SetExcluded(map[string]bool{ExcludeKey("ModRule", "ns/a"): true})
	got := f.Current()
	var keys []string
	for _, r := range got.Rules() {
		keys = append(keys, r.Info().Kind+" "+r.Info().Key)
	}
	if len(keys) != 2 || slices.Contains(keys, "ModRule ns/a") {
		t.Fatalf("served %v", keys)
	}
	if f.Current() != got {
		t.Error("the filtered snapshot is built again for the same snapshot and exclusions")
	}
	f.SetExcluded(map[string]bool{})
	if f.Current() != src {
		t.Error("after the exclusions are gone the source's snapshot is served")
	}
}
