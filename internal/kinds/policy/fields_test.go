package policy_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
)

// fieldPolicies are Policies whose Match begins with tests the kernel may
// decide (engine.Field), and some whose tests it may not; each denies what
// it matches.
var fieldPolicies = []struct {
	name, match string
	fields      []engine.Field
}{
	{"condition", `matchConditions: [{name: c, cel: "object.metadata.?labels.?team.orValue('') == 'nobody'"}]`,
		[]engine.Field{{Path: []string{"metadata", "labels", "team"}, Values: []string{"nobody"}, Strict: 1}}},
	{"conditions", `matchConditions: [{name: a, cel: "object.metadata.labels.app in ['web', 'api']"}, {name: b, cel: "'x' == object.?metadata.?labels[?'team'].orValue('')"}, {name: c, cel: "object.spec.replicas > 1"}]`,
		[]engine.Field{{Path: []string{"metadata", "labels", "app"}, Values: []string{"web", "api"}, Strict: 3}, {Path: []string{"metadata", "labels", "team"}, Values: []string{"x"}}}},
	{"selector", "match:\n  objectSelector:\n    matchLabels: {team: x, app: web}\n    matchExpressions: [{key: tier, operator: In, values: [a, b]}, {key: zone, operator: NotIn, values: [c]}]\nmatchConditions: [{name: c, cel: \"object.metadata.name == 'web'\"}]",
		[]engine.Field{{Path: []string{"metadata", "labels", "app"}, Values: []string{"web"}}, {Path: []string{"metadata", "labels", "team"}, Values: []string{"x"}},
			{Path: []string{"metadata", "labels", "tier"}, Values: []string{"a", "b"}}, {Path: []string{"metadata", "name"}, Values: []string{"web"}, Strict: 2}}},
	{"namespace selector first", "match:\n  objectSelector: {matchLabels: {app: web}}\n  namespaceSelector: {matchLabels: {env: prod}}\nmatchConditions: [{name: c, cel: \"object.metadata.name == 'web'\"}]",
		[]engine.Field{{Path: []string{"metadata", "labels", "app"}, Values: []string{"web"}}}},
	{"deletes too", "match:\n  operations: [CREATE, DELETE]\nmatchConditions: [{name: c, cel: \"object.metadata.name == 'web'\"}]", nil},
	{"not a field test first", `matchConditions: [{name: a, cel: "has(object.metadata.labels)"}, {name: b, cel: "object.metadata.name == 'web'"}]`, nil},
}

// TestFieldsContract checks what a Policy declares to the kernel against
// what its Match does: on every object (created or deleted) where the
// kernel refuses it from its Fields, Match (asked, with a trace) says
// NotMatched, without an error; and the decision without a trace (where the kernel decides) is
// the decision with one.
func TestFieldsContract(t *testing.T) {
	objs := testtool.FieldObjects(rand.New(rand.NewPCG(3, 30)), 400)
	refused := 0
	for _, p := range fieldPolicies {
		t.Run(p.name, func(t *testing.T) {
			spec := p.match + "\nvalidations: [{cel: \"false\", message: denied}]"
			docs, err := source.ParseManifest("p.yaml", []byte(policyYAML("ModwrightPolicy", "team-a", spec)))
			if err != nil {
				t.Fatal(err)
			}
			res := source.LoadRules(docs, registry())
			if len(res.Errors) > 0 || len(res.Rules) != 1 {
				t.Fatalf("load: %v", res.Errors)
			}
			r := res.Rules[0]
			if d := cmp.Diff(p.fields, r.Info().Index.Fields); d != "" {
				t.Errorf("Fields (-want +got):\n%s", d)
			}
			snap := engine.NewSnapshot(res.Rules)
			ns := objects{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a", "labels": map[string]any{"env": "prod"}}}}
			for j, obj := range objs {
				// Even objects are created, odd ones deleted (the kernel
				// sees the old object, a CEL condition null).
				i, req := j, engine.Request{Operation: rules.Create, Namespace: "team-a", Object: obj, Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}
				if j%2 == 1 {
					req.Operation, req.Object, req.OldObject = rules.Delete, nil, obj
				}
				traced, terr := engine.New(engine.Options{Objects: ns}).Evaluate(context.Background(), snap, req)
				fast, ferr := engine.New(engine.Options{Objects: ns, NoTrace: true}).Evaluate(context.Background(), snap, req)
				// Match was asked when the rule is a candidate (its
				// operations): one trace entry.
				if engine.FieldsRefuse(r.Info().Index.Fields, obj) && (terr != nil || len(traced.Trace) > 0) {
					refused++
					if terr != nil || traced.Trace[0].Outcome != engine.NotMatched {
						t.Errorf("%s object %d: refused from the Fields, but Match says %v %v", req.Operation, i, terr, testtool.Says(traced, nil))
					}
				}
				if d := cmp.Diff(testtool.Says(traced, terr), testtool.Says(fast, ferr)); d != "" {
					t.Errorf("%s object %d: the decision without a trace differs (-traced +fast):\n%s", req.Operation, i, d)
				}
			}
		})
	}
	if refused < 100 {
		t.Errorf("the kernel refused %d times: the objects do not exercise the Fields", refused)
	}
}
