package modrule

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/testtool"
)

// TestFieldsContract checks the criteria a ModRule declares to the kernel
// (engine.Field) against its Match: on every object where the kernel
// refuses it, Match (asked, with a trace) says NotMatched without an
// error, and the decision without a trace (where the kernel decides) is
// the one with a trace.
func TestFieldsContract(t *testing.T) {
	all := p(v1beta1.MatchForTypeAll)
	labels := func(k string) []string { return []string{"metadata", "labels", k} }
	for _, tc := range []struct {
		name   string
		match  []v1beta1.MatchItem
		fields []engine.Field
	}{
		{"one value", []v1beta1.MatchItem{{Select: "$.metadata.labels.team", MatchValue: p("nobody")}},
			[]engine.Field{{Path: labels("team"), Values: []string{"nobody"}}}},
		{"values, then a regex", []v1beta1.MatchItem{
			{Select: "$.kind", MatchValue: p("Deployment")},
			{Select: "$.metadata.labels['app']", MatchValues: []string{"web", "api"}},
			{Select: "$.metadata.name", MatchValue: p("web"), MatchFor: all},
			{Select: "$.metadata.labels.team", MatchRegex: p("^x")},
			{Select: "$.metadata.labels.tier", MatchValue: p("a")},
		}, []engine.Field{{Path: []string{"kind"}, Values: []string{"Deployment"}}, {Path: labels("app"), Values: []string{"web", "api"}},
			{Path: []string{"metadata", "name"}, Values: []string{"web"}}}},
		{"negated first", []v1beta1.MatchItem{{Select: "$.metadata.labels.team", MatchValue: p("x"), Negate: true}, {Select: "$.metadata.name", MatchValue: p("web")}}, nil},
		{"existence first", []v1beta1.MatchItem{{Select: "$.metadata.labels.team"}, {Select: "$.metadata.name", MatchValue: p("web")}}, nil},
		{"a wildcard", []v1beta1.MatchItem{{Select: "$.metadata.labels.*", MatchValue: p("x")}}, nil},
		{"an index", []v1beta1.MatchItem{{Select: "$.spec.containers[0].name", MatchValue: p("x")}}, nil},
		{"a filter", []v1beta1.MatchItem{{Select: "$.metadata.labels[?(@ == 'x')]", MatchValue: p("x")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr := rule("team-a", "r", func(s *v1beta1.ModRuleSpec) {
				s.Type, s.Match, s.Patch, s.RejectMessage = v1beta1.ModRuleTypeReject, tc.match, nil, p("denied")
			})
			r, err := Compile(mr)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.fields, r.Info().Index.Fields); d != "" {
				t.Errorf("Fields (-want +got):\n%s", d)
			}
			snap := engine.NewSnapshot([]engine.Rule{r})
			refused := 0
			for i, obj := range testtool.FieldObjects(rand.New(rand.NewPCG(4, 40)), 400) {
				req := engine.Request{Operation: rules.Create, Namespace: "team-a", Object: obj, Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}
				traced, terr := engine.New(engine.Options{}).Evaluate(context.Background(), snap, req)
				fast, ferr := engine.New(engine.Options{NoTrace: true}).Evaluate(context.Background(), snap, req)
				if engine.FieldsRefuse(r.Info().Index.Fields, obj) {
					refused++
					if terr != nil || len(traced.Trace) != 1 || traced.Trace[0].Outcome != engine.NotMatched {
						t.Errorf("object %d: refused from the Fields, but Match says %v", i, testtool.Says(traced, terr))
					}
				}
				if d := cmp.Diff(testtool.Says(traced, terr), testtool.Says(fast, ferr)); d != "" {
					t.Errorf("object %d: the decision without a trace differs (-traced +fast):\n%s", i, d)
				}
			}
			if tc.fields != nil && refused < 50 {
				t.Errorf("the kernel refused %d times: the objects do not exercise the Fields", refused)
			}
		})
	}
}
