package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/testtool/crdtest"
	"sigs.k8s.io/yaml"
)

// The CRDs generated from this package, as committed.
const (
	policyCRD        = "modwright.io_modwrightpolicies.yaml"
	clusterPolicyCRD = "modwright.io_clustermodwrightpolicies.yaml"
	// The former names' (deprecated, read for one more release).
	formerPolicyCRD        = "modwright.io_policies.yaml"
	formerClusterPolicyCRD = "modwright.io_clusterpolicies.yaml"
)

// TestGeneratedFiles regenerates the CRDs and the deep copies from the Go
// types and compares them with the committed copies (deploy/crds, the Helm
// chart's crds/, zz_generated.deepcopy.go). Run `make generate` when it
// fails.
func TestGeneratedFiles(t *testing.T) {
	crdtest.GeneratedFiles(t, "./api/v1alpha1", map[string][]string{
		policyCRD:                            {"deploy/crds", "deploy/helm/modwright/crds"},
		clusterPolicyCRD:                     {"deploy/crds", "deploy/helm/modwright/crds"},
		formerPolicyCRD:                      {"deploy/crds", "deploy/helm/modwright/crds"},
		formerClusterPolicyCRD:               {"deploy/crds", "deploy/helm/modwright/crds"},
		"modwright.io_generaterequests.yaml": {"deploy/crds", "deploy/helm/modwright/crds"},
		"zz_generated.deepcopy.go":           {"api/v1alpha1"},
	})
}

// manyItems is a YAML list of n items made by item(i).
func manyItems(n int, item func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("\n  - " + item(i))
	}
	return b.String()
}

func TestCRDValidation(t *testing.T) {
	const check = "validations:\n  - cel: 'true'\n"
	tests := []struct {
		name string
		kind string // ModwrightPolicy (default) or ClusterModwrightPolicy
		spec string // YAML; "-" for no spec at all
		want []string
	}{
		{name: "the issue's example", kind: "ClusterModwrightPolicy", spec: `
executionTier: 0
failurePolicy: Fail
validationActions: [Deny]
match:
  operations: [CREATE, UPDATE]
  resources:
  - apiGroups: ["apps"]
    kinds: ["Deployment"]
    names: ["web-*"]
    namespaces: ["team-*"]
  namespaceSelector: {}
  objectSelector: {}
  exclude: {resources: [], namespaceSelector: {}, objectSelector: {}}
variables:
- name: replicas
  cel: "object.spec.replicas"
matchConditions:
- name: many-replicas
  cel: "variables.replicas > 3"
validations:
- cel: "object.spec.replicas <= 10"
  message: "at most 10 replicas"
  messageExpression: "'got ' + string(object.spec.replicas)"
  reason: Invalid
- scope: "$.spec.template.spec.containers[*]"
  cel: "self.image.contains(':')"
  message: "every container image needs a tag"
mutations:
- jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/checked', value: 'yes'}]"
- applyConfiguration: "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"
auditAnnotations:
- key: replicas
  valueExpression: "string(object.spec.replicas)"
`},
		{name: "minimal validation", spec: check},
		{name: "only mutations", spec: "mutations:\n  - jsonPatch: '[]'"},
		{name: "only audit annotations", spec: "auditAnnotations:\n  - key: a.b_c-1\n    valueExpression: 'null'"},
		{name: "warn and audit", spec: check + "validationActions: [Warn, Audit]"},
		{name: "deny and audit", spec: check + "validationActions: [Audit, Deny]"},
		{name: "match condition with a prefix", spec: check + "matchConditions:\n  - name: example.com/many\n    cel: 'true'"},
		{name: "message with a trailing line break", spec: "validations:\n  - cel: 'false'\n    message: |\n      no\n"},
		{name: "scope of the object", spec: "validations:\n  - cel: 'true'\n    scope: $"},
		{name: "Policy: empty namespaces", spec: check + "match:\n  resources:\n  - kinds: [Pod]\n    namespaces: []"},
		{name: "ClusterPolicy: namespaces in exclude", kind: "ClusterModwrightPolicy", spec: check + "match:\n  exclude:\n    resources:\n    - namespaces: [kube-*]"},
		{name: "largest lists", spec: check +
			"matchConditions:" + manyItems(64, func(i int) string { return fmt.Sprintf("{name: c%d, cel: 'true'}", i) }) +
			"\nauditAnnotations:" + manyItems(20, func(i int) string { return fmt.Sprintf("{key: k%d, valueExpression: 'null'}", i) })},

		{name: "no spec", spec: "-", want: []string{`spec: Required value`}},
		{name: "a policy that does nothing", spec: "failurePolicy: Ignore", want: []string{
			"spec: Invalid value: a policy needs at least one of validations, mutations and auditAnnotations"}},
		{name: "empty lists do nothing either", spec: "validations: []\nmutations: []\nauditAnnotations: []", want: []string{
			"a policy needs at least one of validations, mutations and auditAnnotations"}},
		{name: "Policy: namespaces in resources", spec: check + "match:\n  resources:\n  - kinds: [Pod]\n  - namespaces: [team-*]", want: []string{
			"spec.match.resources: Invalid value: namespaces is for ClusterModwrightPolicies: a ModwrightPolicy applies to objects of its own namespace"}},
		{name: "Policy: namespaces in exclude", spec: check + "match:\n  exclude:\n    resources:\n    - namespaces: [kube-*]", want: []string{
			"spec.match.exclude.resources: Invalid value: namespaces is for ClusterModwrightPolicies"}},
		{name: "deny and warn", spec: check + "validationActions: [Deny, Warn]", want: []string{
			"spec.validationActions: Invalid value: must not contain both Deny and Warn"}},
		{name: "no validation action", spec: check + "validationActions: []", want: []string{"spec.validationActions: Invalid value: 0: spec.validationActions in body should have at least 1 items"}},
		{name: "an action twice", spec: check + "validationActions: [Deny, Deny]", want: []string{`spec.validationActions[1]: Duplicate value: "Deny"`}},
		{name: "unknown action", spec: check + "validationActions: [Block]", want: []string{`spec.validationActions[0]: Unsupported value: "Block"`}},
		{name: "no language", spec: "validations:\n  - message: m", want: []string{
			"spec.validations[0]: Invalid value: exactly one of cel, jmespath, rego, deny and cue must be set"}},
		{name: "variable without language", spec: check + "variables:\n  - name: v", want: []string{
			"spec.variables[0]: Invalid value: exactly one language must be set: cel, jmespath or rego"}},
		{name: "match condition without language", spec: check + "matchConditions:\n  - name: c", want: []string{
			"spec.matchConditions[0]: Invalid value: exactly one of cel, jmespath, rego and conditions must be set"}},
		{name: "empty expression", spec: "validations:\n  - cel: ''", want: []string{"spec.validations[0].cel: Invalid value: \"\": spec.validations[0].cel in body should be at least 1 chars long"}},
		{name: "both mutation members", spec: "mutations:\n  - jsonPatch: '[]'\n    applyConfiguration: 'Object{}'", want: []string{
			"spec.mutations[0]: Invalid value: exactly one of jsonPatch, applyConfiguration, patch and cue must be set"}},
		{name: "no mutation member", spec: "mutations:\n  - {}", want: []string{
			"spec.mutations[0]: Invalid value: exactly one of jsonPatch, applyConfiguration, patch and cue must be set"}},
		{name: "variables of one name", spec: check + "variables:\n  - {name: a, cel: '1'}\n  - {name: a, cel: '2'}", want: []string{
			`spec.variables[1]: Duplicate value: {"name":"a"}`}},
		{name: "match conditions of one name", spec: check + "matchConditions:\n  - {name: a, cel: 'true'}\n  - {name: a, cel: 'true'}", want: []string{
			`spec.matchConditions[1]: Duplicate value: {"name":"a"}`}},
		{name: "audit annotations of one key", spec: "auditAnnotations:\n  - {key: a, valueExpression: 'null'}\n  - {key: a, valueExpression: 'null'}", want: []string{
			`spec.auditAnnotations[1]: Duplicate value: {"key":"a"}`}},
		{name: "variable named with a reserved word", spec: check + "variables:\n  - {name: namespace, cel: '1'}", want: []string{
			"spec.variables[0].name: Invalid value: name must be a CEL identifier, not a reserved word"}},
		{name: "variable name not an identifier", spec: check + "variables:\n  - {name: my-var, cel: '1'}", want: []string{
			`spec.variables[0].name: Invalid value: "my-var": spec.variables[0].name in body should match`}},
		{name: "match condition name not a qualified name", spec: check + "matchConditions:\n  - {name: 'many replicas', cel: 'true'}", want: []string{
			"spec.matchConditions[0].name: Invalid value: \"many replicas\": name must be a qualified name"}},
		{name: "audit annotation key with a prefix", spec: "auditAnnotations:\n  - {key: a/b, valueExpression: 'null'}", want: []string{
			"spec.auditAnnotations[0].key: Invalid value: \"a/b\": key must be the name part of a qualified name"}},
		{name: "audit annotation key beginning with a dash", spec: "auditAnnotations:\n  - {key: -a, valueExpression: 'null'}", want: []string{
			"spec.auditAnnotations[0].key: Invalid value: \"-a\": key must be the name part of a qualified name"}},
		{name: "audit annotation value too long", spec: "auditAnnotations:\n  - {key: a, valueExpression: '" + strings.Repeat("x", 5121) + "'}", want: []string{
			"spec.auditAnnotations[0].valueExpression: Too long: may not be more than 5120 bytes"}},
		{name: "too many match conditions", spec: check + "matchConditions:" + manyItems(65, func(i int) string { return fmt.Sprintf("{name: c%d, cel: 'true'}", i) }), want: []string{
			"spec.matchConditions: Too many: 65: must have at most 64 items"}},
		{name: "too many audit annotations", spec: "auditAnnotations:" + manyItems(21, func(i int) string { return fmt.Sprintf("{key: k%d, valueExpression: 'null'}", i) }), want: []string{
			"spec.auditAnnotations: Too many: 21: must have at most 20 items"}},
		{name: "too many validations", spec: "validations:" + manyItems(257, func(int) string { return "{cel: 'true'}" }), want: []string{
			"spec.validations: Too many: 257: must have at most 256 items"}},
		{name: "too many resource filters", spec: check + "match:\n  resources:" + manyItems(65, func(int) string { return "{kinds: [Pod]}" }), want: []string{
			"spec.match.resources: Too many: 65: must have at most 64 items"}},
		{name: "scope without $", spec: "validations:\n  - cel: 'true'\n    scope: spec.containers", want: []string{
			"spec.validations[0].scope: Invalid value: \"spec.containers\": scope must be a KubeMod JSONPath expression starting with $"}},
		{name: "blank message", spec: "validations:\n  - cel: 'true'\n    message: '  '", want: []string{
			"spec.validations[0].message: Invalid value: \"  \": message must not be blank"}},
		{name: "message with a line break", spec: "validations:\n  - cel: 'true'\n    message: \"a\\nb\"", want: []string{
			"spec.validations[0].message: Invalid value: \"a\\nb\": message must not contain line breaks"}},
		{name: "empty message expression", spec: "validations:\n  - cel: 'true'\n    messageExpression: ''", want: []string{
			"spec.validations[0].messageExpression: Invalid value: \"\": spec.validations[0].messageExpression in body should be at least 1 chars long"}},
		{name: "unknown reason", spec: "validations:\n  - cel: 'true'\n    reason: Teapot", want: []string{`spec.validations[0].reason: Unsupported value: "Teapot"`}},
		{name: "unknown failure policy", spec: check + "failurePolicy: Maybe", want: []string{`spec.failurePolicy: Unsupported value: "Maybe"`}},
		{name: "tier out of range", spec: check + "executionTier: 40000", want: []string{"spec.executionTier: Invalid value: 40000: spec.executionTier in body should be less than or equal to 32766"}},
		{name: "unknown operation", spec: check + "match:\n  operations: [PATCH]", want: []string{`spec.match.operations[0]: Unsupported value: "PATCH"`}},
		{name: "no operation", spec: check + "match:\n  operations: []", want: []string{"spec.match.operations: Invalid value: 0: spec.match.operations in body should have at least 1 items"}},
		{name: "empty kind", spec: check + "match:\n  resources:\n  - kinds: ['']", want: []string{"spec.match.resources[0].kinds[0]: Invalid value: \"\": spec.match.resources[0].kinds[0] in body should be at least 1 chars long"}},
		{name: "VAP's field name", spec: "validations:\n  - cel: 'true'\n    expression: 'true'", want: []string{"spec.validations[0].expression: Invalid value: null: unknown field"}},
	}
	// Each case is checked against the CRD of the kind and of its former
	// name: the two have one schema.
	validators := map[string]*crdtest.Validator{"ModwrightPolicy": crdtest.Load(t, policyCRD), "ClusterModwrightPolicy": crdtest.Load(t, clusterPolicyCRD),
		"Policy": crdtest.Load(t, formerPolicyCRD), "ClusterPolicy": crdtest.Load(t, formerClusterPolicyCRD)}
	former := map[string]string{"ModwrightPolicy": "Policy", "ClusterModwrightPolicy": "ClusterPolicy"}
	for _, tt := range tests {
		current := tt.kind
		if current == "" {
			current = "ModwrightPolicy"
		}
		for _, kind := range []string{current, former[current]} {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				obj := map[string]any{
					"apiVersion": "modwright.io/v1alpha1", "kind": kind,
					"metadata": map[string]any{"name": "p", "namespace": "team-a"},
				}
				if kind == "ClusterModwrightPolicy" || kind == "ClusterPolicy" {
					delete(obj["metadata"].(map[string]any), "namespace")
				}
				if tt.spec != "-" {
					var spec map[string]any
					if err := yaml.Unmarshal([]byte(tt.spec), &spec); err != nil {
						t.Fatalf("spec: %v", err)
					}
					obj["spec"] = spec
				}
				errs := validators[kind].Validate(obj)
				var got []string
				for _, e := range errs {
					got = append(got, e.Error())
				}
				if len(got) != len(tt.want) {
					t.Fatalf("errors:\n%s\nwant %d: %q", strings.Join(got, "\n"), len(tt.want), tt.want)
				}
				for i, w := range tt.want {
					if !strings.Contains(got[i], w) {
						t.Errorf("error %d = %s\nwant it to contain %s", i, got[i], w)
					}
				}
			})
		}
	}
}
