package policy_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/crdschema"
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
		name: "nested variable reading the object",
		spec: `
context:
- {name: settings, configMap: {name: settings}}
validations:
- jmespath: "settings.data.x == 'y'"
  message: "{{ settings.data.\"{{ request.object.metadata.labels.k }}\" }} {{ settings.data.\"{{ request.namespace }}\" }}"`,
		want: []string{"W207 spec.validations[0].message"},
	}, {
		name: "idempotent mutation",
		spec: `mutations: [{jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]"}]`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snap := load(t, policyYAML("ModwrightPolicy", "team-a", tc.spec))
			l, ok := snap.Rules()[0].(kinds.Linter)
			if !ok {
				t.Fatal("a policy is not a kinds.Linter")
			}
			var got []string
			fs := l.Lint(context.Background(), "p.yaml", sample)
			fs = append(fs, snap.Rules()[0].(kinds.SchemaLinter).LintSchemas("p.yaml", nil)...)
			for _, f := range fs {
				if f.Severity != kinds.SeverityWarning || f.Kind != "ModwrightPolicy" || f.Rule != "team-a/p" || f.Hint == "" {
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

// TestLintSchemas checks lint --crd: self typed by the CRD's schema at the
// scope's place, expressions type-checked against it, and what stays
// dynamically typed said.
func TestLintSchemas(t *testing.T) {
	b, err := os.ReadFile("../../../testdata/crd/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set := crdschema.NewSet()
	if err := set.Add(context.Background(), decode(t, string(b))); err != nil {
		t.Fatal(err)
	}
	var schemas []kinds.KindSchema
	for _, v := range set.Versions() {
		schemas = append(schemas, kinds.KindSchema{Group: v.GVK.Group, Version: v.GVK.Version, Kind: v.GVK.Kind, Typing: &v.Typing})
	}
	widgets := "match: {resources: [{apiGroups: [example.com], kinds: [Widget]}]}\n"
	for _, tc := range []struct {
		name, spec string
		want       []string // code field column: message part
	}{{
		name: "typed: clean",
		spec: widgets + `validations: [{scope: "$.spec", cel: "self.x__dash__mode == 'fast' && self.tags.all(t, t != '')", messageExpression: "'mode ' + self.x__dash__mode"}]`,
	}, {
		name: "each item of a list: clean",
		spec: widgets + `validations: [{scope: "$.spec.ports[*]", cel: "self.port > 1024"}]`,
	}, {
		name: "undeclared property and wrong type",
		spec: widgets + `validations: [{scope: "$.spec", cel: "self.mode == 'fast'", messageExpression: "'size ' + self.minReplicas"}]`,
		want: []string{"E201 spec.validations[0].cel 5: undefined field 'mode'", "E201 spec.validations[0].messageExpression 9: found no matching overload for '_+_'"},
	}, {
		name: "the root's metadata as a CRD rule sees it",
		spec: widgets + `validations: [{scope: "$", cel: "self.metadata.labels.size() > 0"}]`,
		want: []string{"E201 spec.validations[0].cel 14: undefined field 'labels'"},
	}, {
		name: "a place the schema does not type",
		spec: widgets + `validations: [{scope: "$.status.other", cel: "self != ''"}]`,
		want: []string{"W206 spec.validations[0].scope 0: does not type the scope's place"},
	}, {
		name: "a place that depends on the object",
		spec: widgets + `validations: [{scope: "$..port", cel: "self > 0"}]`,
		want: []string{"W206 spec.validations[0].scope 0: depends on the object"},
	}, {
		name: "a kind without a CRD given",
		spec: "match: {resources: [{kinds: [Widget, Gadget]}]}\n" + `validations: [{scope: "$.spec", cel: "has(self.x__dash__mode)"}]`,
		want: []string{"W206 spec.validations[0].scope 0: dynamically typed on Gadget"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snap := load(t, policyYAML("ModwrightPolicy", "team-a", tc.spec))
			var got []string
			for _, f := range snap.Rules()[0].(kinds.SchemaLinter).LintSchemas("p.yaml", schemas) {
				got = append(got, fmt.Sprintf("%s %s %d: %s", f.Code, f.Field, f.Pos, f.Message))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				code, part, _ := strings.Cut(tc.want[i], ": ")
				if !strings.HasPrefix(got[i], code+": ") || !strings.Contains(got[i], part) {
					t.Errorf("finding %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
