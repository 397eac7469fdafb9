package translate

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlace(t *testing.T) {
	rule := func(kind, ns, name string) Rule {
		md := map[string]any{"name": name}
		if ns != "" {
			md["namespace"] = ns
		}
		return Rule{Kind: kind, Object: map[string]any{"metadata": md}}
	}
	in := func(ns string) Scope { return Scope{Namespace: ns} }
	anywhere := Scope{Anywhere: true}
	type served struct {
		rule  Rule
		scope Scope
	}
	// A translation per rule, or one of several rules (a group).
	type translated [][]served
	for _, c := range []struct {
		name       string
		translated translated
		left       []served // skipped by the compiler, or of a kind it does not translate
		skipped    map[string]string
		want       []string // the rules placed in the API server, by key
		kept       map[string]string
	}{
		{name: "no rule left to the webhook",
			translated: translated{{{rule("ModRule", "a", "x"), in("a")}}, {{rule("ModwrightPolicy", "b", "y"), in("b")}}},
			want:       []string{"a/x", "b/y"}},
		{name: "a rule left that applies anywhere keeps every other",
			translated: translated{{{rule("ModRule", "a", "x"), in("a")}}, {{rule("ClusterModwrightPolicy", "", "z"), anywhere}}},
			left:       []served{{rule("ClusterPolicy", "", "kyverno"), anywhere}},
			kept:       map[string]string{"a/x": "ClusterPolicy kyverno runs there", "z": "ClusterPolicy kyverno runs there"}},
		{name: "a rule left in one namespace keeps the rules of that namespace only",
			translated: translated{{{rule("ModRule", "a", "x"), in("a")}}, {{rule("ModRule", "b", "y"), in("b")}}, {{rule("ClusterModwrightPolicy", "", "z"), anywhere}}},
			left:       []served{{rule("ModRule", "a", "templated"), in("a")}},
			skipped:    map[string]string{"a/templated": "spec.rejectMessage is a Go template"},
			want:       []string{"b/y", "z"},
			kept:       map[string]string{"a/x": "ModRule a/templated runs there"}},
		{name: "the rule left of the namespace is named before one that applies anywhere",
			translated: translated{{{rule("ModRule", "a", "x"), in("a")}}},
			left:       []served{{rule("ClusterPolicy", "", "kyverno"), anywhere}, {rule("ModRule", "a", "templated"), in("a")}},
			kept:       map[string]string{"a/x": "ModRule a/templated runs there"}},
		{name: "a rule that does not translate is named before one kept",
			translated: translated{{{rule("ModRule", "a", "x"), in("a")}}, {{rule("ModRule", "a", "y"), in("a")}}},
			left:       []served{{rule("ClusterPolicy", "", "kyverno"), anywhere}},
			kept:       map[string]string{"a/x": "ClusterPolicy kyverno runs there", "a/y": "ClusterPolicy kyverno runs there"}},
		{name: "cluster-scoped objects are a namespace of their own",
			translated: translated{{{rule("ModRule", "kubemod-system", "ns-label"), in("")}}, {{rule("ModRule", "a", "x"), in("a")}}},
			left:       []served{{rule("ModRule", "kubemod-system", "other"), in("")}},
			want:       []string{"a/x"},
			kept:       map[string]string{"kubemod-system/ns-label": "ModRule kubemod-system/other runs there"}},
		{name: "a group kept whole, and what a rule kept covers kept in turn",
			translated: translated{
				{{rule("ModRule", "c", "w"), in("c")}},
				{{rule("ModRule", "a", "g1"), in("a")}, {rule("K8sRequired", "", "g2"), anywhere}}},
			left: []served{{rule("ModRule", "a", "templated"), in("a")}},
			kept: map[string]string{"a/g1": "ModRule a/templated runs there", "g2": "ModRule a/templated runs there",
				"c/w": "K8sRequired g2 runs there, kept as well"}},
		{name: "a rule the webhook does not serve (a template) keeps nothing",
			translated: translated{
				{{rule("ModRule", "a", "g1"), in("a")}, {rule("ConstraintTemplate", "", "tmpl"), Scope{}}},
				{{rule("ModRule", "c", "w"), in("c")}}},
			left: []served{{rule("ModRule", "a", "templated"), in("a")}},
			want: []string{"c/w"},
			kept: map[string]string{"a/g1": "ModRule a/templated runs there", "tmpl": "ModRule a/templated runs there"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var res Result
			var scopes []ScopedRule
			for _, tr := range c.translated {
				var tl Translation
				for _, s := range tr {
					tl.Rules = append(tl.Rules, s.rule)
					if s.rule.Kind != "ConstraintTemplate" {
						scopes = append(scopes, ScopedRule{Ref: ref(s.rule), Scope: s.scope})
					}
				}
				res.Translated = append(res.Translated, tl)
			}
			for _, s := range c.left {
				scopes = append(scopes, ScopedRule{Ref: ref(s.rule), Scope: s.scope})
				if why, ok := c.skipped[s.rule.Key()]; ok {
					res.Skipped = append(res.Skipped, Skip{Rule: s.rule, Reason: why})
				}
			}
			res.Skipped = slices.Grow(res.Skipped, 8) // room to append: Place must not write into it
			before := slices.Clone(res.Skipped[:cap(res.Skipped)])

			if got := Place(res, PlaceNative, scopes); !cmp.Equal(got, res) {
				t.Errorf("PlaceNative changed the result:\n%s", cmp.Diff(res, got))
			}
			got := Place(res, PlaceFastest, scopes)
			var native []string
			for _, tl := range got.Translated {
				for _, r := range tl.Rules {
					native = append(native, r.Key())
				}
			}
			if diff := cmp.Diff(c.want, native); diff != "" {
				t.Errorf("in the API server (-want +got):\n%s", diff)
			}
			kept := map[string]string{}
			for _, s := range got.Skipped {
				if !s.Kept {
					if want := c.skipped[s.Rule.Key()]; s.Reason != want {
						t.Errorf("%s: skipped for %q, want %q", s.Rule.Key(), s.Reason, want)
					}
					continue
				}
				if !strings.HasPrefix(s.Reason, "faster there: the webhook is called for every request it may concern anyway (") ||
					!strings.HasSuffix(s.Reason, "--placement native moves it") {
					t.Errorf("%s: reason %q", s.Rule.Key(), s.Reason)
				}
				_, why, _ := strings.Cut(s.Reason, "anyway (")
				why, _, _ = strings.Cut(why, "), and")
				kept[s.Rule.Key()] = why
			}
			if len(c.kept) == 0 {
				c.kept = map[string]string{}
			}
			if diff := cmp.Diff(c.kept, kept); diff != "" {
				t.Errorf("kept in the webhook, and why (-want +got):\n%s", diff)
			}
			if after := res.Skipped[:cap(res.Skipped)]; !cmp.Equal(before, after) {
				t.Errorf("Place wrote into the caller's result:\n%s", cmp.Diff(before, after))
			}
		})
	}
}

func TestParsePlacement(t *testing.T) {
	for s, want := range map[string]Placement{"fastest": PlaceFastest, "native": PlaceNative} {
		if got, err := ParsePlacement(s); err != nil || got != want {
			t.Errorf("%s: %v, %v", s, got, err)
		}
	}
	if _, err := ParsePlacement("webhook"); err == nil || !strings.Contains(err.Error(), `fastest or native, not "webhook"`) {
		t.Errorf("webhook: %v", err)
	}
}

// BenchmarkPlace places 10,000 rules (the operator does at every pass):
// 7,500 translated over 1,000 namespaces, 2,500 left to the webhook in
// 500 of them, which keep there the 2,500 translated of those.
func BenchmarkPlace(b *testing.B) {
	var res Result
	var scopes []ScopedRule
	for i := range 10_000 {
		n := (i / 2) % 1_000
		ns := "ns-" + strconv.Itoa(n)
		r := Rule{Kind: "ModRule", Object: map[string]any{"metadata": map[string]any{"namespace": ns, "name": "r" + strconv.Itoa(i)}}}
		scopes = append(scopes, ScopedRule{Ref: ref(r), Scope: Scope{Namespace: ns}})
		if i%2 == 0 || n >= 500 {
			res.Translated = append(res.Translated, Translation{Rules: []Rule{r}})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := Place(res, PlaceFastest, scopes); len(got.Translated) != 5_000 {
			b.Fatalf("%d translations in the API server, want 5,000", len(got.Translated))
		}
	}
}
