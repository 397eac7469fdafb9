package policy_test

import (
	"context"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// FuzzPolicy decodes, compiles and evaluates arbitrary Policy manifests on
// the test Deployment: nothing may panic, a broken policy keeps its error,
// and evaluation ends with a decision or an error.
func FuzzPolicy(f *testing.F) {
	for _, spec := range []string{
		`validations: [{cel: "object.spec.replicas <= 3", messageExpression: "'got ' + string(object.spec.replicas)"}]`,
		"variables: [{name: a, cel: 'object.metadata.name'}]\nmatchConditions: [{name: c, cel: 'variables.a != \"\"'}]\nvalidations: [{cel: 'false'}]",
		`validations: [{scope: "$.spec.template.spec.containers[*]", cel: "self.image.contains(':')"}]`,
		`mutations: [{jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]"}]`,
		`mutations: [{applyConfiguration: "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}]`,
		"match: {resources: [{kinds: [Deployment], names: ['w*']}], objectSelector: {matchLabels: {app: web}}}\nauditAnnotations: [{key: k, valueExpression: \"'v'\"}]",
		"failurePolicy: Ignore\nvalidationActions: [Warn, Audit]\nvalidations: [{cel: 'object.nope'}]",
		"context: [{name: v, variable: {value: '{{ request.object.metadata.name }}', jmesPath: 'to_upper(@)'}}]\nvalidations: [{jmespath: \"v == 'WEB'\", message: '{{ v }} {{ request.operation }}'}]",
		"context: [{name: cm, configMap: {name: '{{ request.name }}'}}, {name: a, apiCall: {urlPath: /api, default: 1}}]\nvalidations: [{jmespath: 'cm.data.x == a'}]",
		"mutations: [{patch: [{op: add, path: /metadata/labels/x, value: '{{ request.object.spec.replicas }}'}, {op: remove, path: /spec/x}]}]",
		"matchConditions: [{name: c, jmespath: \"request.object.metadata.labels.app == 'web'\"}]\nvalidations: [{scope: '$.spec.template.spec.containers[*]', jmespath: \"contains(self.image, ':')\"}]",
		"matchConditions: [{name: c, conditions: {any: [{key: '{{ request.operation }}', operator: AnyIn, value: [CREATE]}]}}]\nvalidations: [{deny: {conditions: {all: [{key: '{{ request.object.spec.replicas }}', operator: GreaterThan, value: 3}]}}, message: m}]",
		"validations: [{cue: \"object: _ @tag(object)\\nvalidate: valid: object.spec.replicas < 3\"}]\nmutations: [{cue: \"object: _ @tag(object)\\npatches: [{op: \\\"add\\\", path: \\\"/metadata/labels/x\\\", value: \\\"y\\\"}]\"}]",
	} {
		f.Add(policyYAML("ModwrightPolicy", "team-a", spec))
	}
	obj := func(t *testing.T) map[string]any { return decode(t, deployment) }
	f.Fuzz(func(t *testing.T, manifest string) {
		docs, err := source.ParseManifest("fuzz.yaml", []byte(manifest))
		if err != nil {
			return
		}
		res := source.LoadRules(docs, registry())
		for _, r := range res.Rules {
			if r.Info().Err == nil {
				continue
			}
			if _, ok := r.Info().Err.(*rules.CompileError); !ok {
				t.Fatalf("compile error %T is not a *rules.CompileError", r.Info().Err)
			}
		}
		snap := engine.NewSnapshot(res.Rules)
		for _, op := range []rules.Operation{rules.Create, rules.Delete} {
			req := engine.Request{Operation: op, Namespace: "team-a", Object: obj(t)}
			if op == rules.Delete {
				req.Object, req.OldObject = nil, obj(t)
			}
			_, _ = engine.New(engine.Options{}).Evaluate(context.Background(), snap, req)
		}
	})
}
