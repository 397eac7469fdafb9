package policy_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/source"
)

func TestLint(t *testing.T) {
	sample, err := source.ParseManifest("web.yaml", []byte(deployment))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, spec string
		want       []string // code field
	}{{
		name: "clean",
		spec: `validations: [{cel: "object.spec.template.spec.containers.all(c, c.image.contains(':'))"}]`,
	}, {
		name: "nested loops over lists",
		spec: `validations: [{cel: "object.spec.template.spec.containers.all(c, object.spec.template.spec.containers.all(d, c.name != d.name || c == d))"}]`,
		want: []string{"W201 spec.validations[0].cel"},
	}, {
		name: "costly message expression and variable",
		spec: `
variables: [{name: pairs, cel: "object.spec.template.spec.containers.map(c, object.spec.template.spec.containers.map(d, c.name + d.name))"}]
validations: [{cel: "true", messageExpression: "'m'"}]`,
		want: []string{"W201 spec.variables[0].cel"},
	}, {
		name: "appending mutation",
		spec: `mutations: [{jsonPatch: "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/-', value: {'name': 'x', 'image': 'y'}}]"}]`,
		want: []string{"W202 spec.mutations"},
	}, {
		name: "kyverno context: clean",
		spec: `
context:
- {name: cm, configMap: {name: settings}}
- {name: nm, variable: {jmesPath: "request.object.metadata.name"}}
- {name: limit, apiCall: {urlPath: /api/v1/namespaces/x, jmesPath: "metadata.labels.limit"}}
- {name: tr, variable: {value: {a: 1}, jmesPath: "a"}}
variables: [{name: v, cel: "variables.nm + 'x'"}]
validations: [{jmespath: "cm.data.x == 'y'", message: "{{ v }} {{ images.containers }} {{ serviceAccountName }} {{ limit }} {{ tr }}"}]`,
	}, {
		name: "kyverno context: undefined name, unused entry, {{ }} in match",
		spec: `
match: {resources: [{names: ["{{ request.name }}"]}]}
context:
- {name: unused, variable: {value: 1}}
validations: [{jmespath: "typo.x == 'y'", message: "{{ request.name }} {{ other }}"}]`,
		want: []string{"W203 spec.validations[0].jmespath", "W203 spec.validations[0].message", "W204 spec.match.resources[0].names[0]", "W205 spec.context[0]"},
	}, {
		name: "scoped validation on a custom resource: self dynamically typed",
		spec: `
match: {resources: [{kinds: [Widget]}]}
validations: [{cel: "self.size() > 0", scope: "$.spec.items[*]"}]`,
		want: []string{"W206 spec.validations[0].scope"},
	}, {
		name: "scoped validation on any kind: self dynamically typed",
		spec: `validations: [{cel: "self != ''", scope: "$.metadata.name"}]`,
		want: []string{"W206 spec.validations[0].scope"},
	}, {
		name: "scoped validation on built-in kinds: clean",
		spec: `
match: {resources: [{kinds: [Deployment, Pod]}]}
validations: [{cel: "self.image != ''", scope: "$.spec.template.spec.containers[*]"}]`,
	}, {
		name: "context read by rego and cue only: clean",
		spec: `
context:
- {name: byRego, variable: {value: 1}}
- {name: byCUE, variable: {value: 2}}
- {name: unread, variable: {value: 3}}
validations:
- rego: {entrypoint: data.p.allow, module: "package p\nallow if input.context.byRego == 1"}
- cue: "data: _ @tag(data)\nvalidate: valid: data.byCUE == 2"`,
		want: []string{"W205 spec.context[2]"},
	}, {
		name: "idempotent mutation",
		spec: `mutations: [{jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]"}]`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snap := load(t, policyYAML("Policy", "team-a", tc.spec))
			l, ok := snap.Rules()[0].(kinds.Linter)
			if !ok {
				t.Fatal("a policy is not a kinds.Linter")
			}
			var got []string
			for _, f := range l.Lint(context.Background(), "p.yaml", sample) {
				if f.Severity != kinds.SeverityWarning || f.Kind != "Policy" || f.Rule != "team-a/p" || f.Hint == "" {
					t.Errorf("finding %+v", f)
				}
				got = append(got, f.Code+" "+f.Field)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
		})
	}
}
