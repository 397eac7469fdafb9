package policy_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/policy"

	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// apiResponses is an APIReader over recorded responses, counting calls.
type apiResponses struct {
	bodies map[string]string // "GET /path" -> JSON
	calls  int
}

func (a *apiResponses) Call(_ context.Context, c engine.APICall) ([]byte, error) {
	a.calls++
	b, ok := a.bodies[c.Method+" "+c.Path+string(c.Data)]
	if !ok {
		return nil, fmt.Errorf("%w: %s %s", engine.ErrNoAPIResponse, c.Method, c.Path)
	}
	return []byte(b), nil
}

type roleReader struct{ roles, clusterRoles []string }

func (r roleReader) Roles(context.Context, engine.UserInfo, string) ([]string, []string, error) {
	return r.roles, r.clusterRoles, nil
}

const configMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team-a}
data: {registries: "ghcr.io,docker.io", team: blue, maxReplicas: "4"}
`

func TestKyvernoContext(t *testing.T) {
	api := &apiResponses{bodies: map[string]string{
		"GET /api/v1/namespaces/team-a/pods":                     `{"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}`,
		`POST /apis/x/v1/namespaces/team-a/checks{"name":"web"}`: `{"allowed": true}`,
		"GET /apis/apps/v1/namespaces/team-a/deployments/web":    `{"spec": {"replicas": 2}}`,
		"GET /api/v1/namespaces/team-a/configmaps/team%20web":    `{"data": {"ok": "yes"}}`,
	}}
	for _, tc := range []struct {
		name    string
		spec    string
		op      rules.Operation
		obj     string
		old     string
		user    string
		want    outcome
		wantErr error
		errText string
	}{{
		name:    "a configMap entry in another namespace is refused",
		spec:    "context: [{name: cm, configMap: {name: settings, namespace: team-b}}]\nvalidations: [{jmespath: \"cm != null\"}]",
		wantErr: policy.ErrOutsideNamespace,
	}, {
		name:    "an apiCall into another namespace is refused",
		spec:    "context: [{name: s, apiCall: {urlPath: /api/v1/namespaces/team-b/secrets/tls}}]\nvalidations: [{jmespath: \"s != null\"}]",
		wantErr: policy.ErrOutsideNamespace,
	}, {
		name:    "an apiCall of a cluster-wide path is refused",
		spec:    "context: [{name: s, apiCall: {urlPath: /api/v1/nodes}}]\nvalidations: [{jmespath: \"s != null\"}]",
		wantErr: policy.ErrOutsideNamespace,
	}, {
		name:    "an apiCall whose variable would leave the namespace is refused",
		spec:    "context: [{name: s, apiCall: {urlPath: \"/api/v1/namespaces/team-a/pods/{{ request.object.metadata.annotations.p }}\"}}]\nvalidations: [{jmespath: \"s != null\"}]",
		obj:     `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "team-a", "annotations": {"p": "../../team-b/secrets/tls"}}}`,
		wantErr: policy.ErrURLPath,
	}, {
		name:    "an apiCall whose object-made path is too long is refused before it is read",
		spec:    "context: [{name: s, apiCall: {urlPath: \"/api/v1/namespaces/team-a/configmaps/{{ request.object.metadata.annotations.p }}\"}}]\nvalidations: [{jmespath: \"s != null\"}]",
		obj:     `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "team-a", "annotations": {"p": "` + strings.Repeat("a", 10000) + `"}}}`,
		wantErr: policy.ErrURLPath,
		errText: "over the 8192 limit",
	}, {
		name: "an apiCall's variable is one escaped path segment",
		spec: "context: [{name: s, apiCall: {urlPath: \"/api/v1/namespaces/team-a/configmaps/{{ request.object.metadata.annotations.p }}\", jmesPath: \"data.ok\"}}]\nvalidations: [{jmespath: \"s == 'yes'\"}]",
		obj:  `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "team-a", "annotations": {"p": "team web"}}}`,
	}, {
		name: "jmespath validation passes",
		spec: `validations: [{jmespath: "request.object.spec.replicas <= ` + "`10`" + `"}]`,
	}, {
		name: "jmespath validation denies, message substituted",
		spec: `validations: [{jmespath: "request.object.spec.replicas <= ` + "`3`" + `", message: "{{ request.object.metadata.name }} has {{ request.object.spec.replicas }} replicas"}]`,
		want: outcome{Rejections: []string{"web has 5 replicas|Invalid|422"}},
	}, {
		name:    "jmespath validation: a non-boolean is an error",
		spec:    `validations: [{jmespath: "request.object.metadata.name"}]`,
		errText: "want a boolean",
	}, {
		name: "jmespath variable read by CEL and by JMESPath",
		spec: `
variables:
- {name: names, jmespath: "request.object.spec.template.spec.containers[*].name"}
- {name: count, cel: "size(variables.names)"}
validations:
- {cel: "variables.count == 2 && variables.names[0] == 'app'"}
- {jmespath: "length(names) == count"}`,
	}, {
		name: "context variable with value and jmesPath, default",
		spec: `
context:
- name: tier
  variable: {value: {a: "{{ request.object.metadata.labels.app }}"}, jmesPath: "a"}
- name: missing
  variable: {jmesPath: "request.object.metadata.labels.nope", default: fallback}
validations:
- {jmespath: "tier == 'web' && missing == 'fallback'"}
- {cel: "variables.tier == 'web'"}`,
	}, {
		name: "configMap entry",
		spec: `
context:
- name: settings
  configMap: {name: settings}
validations:
- jmespath: "request.object.spec.replicas <= to_number(settings.data.maxReplicas)"
  message: "at most {{ settings.data.maxReplicas }} replicas for team {{ settings.data.team }}"`,
		want: outcome{Rejections: []string{"at most 4 replicas for team blue|Invalid|422"}},
	}, {
		name: "configMap entry with a variable name, not found",
		spec: `
context:
- name: settings
  configMap: {name: "{{ request.object.metadata.name }}-settings"}
validations: [{jmespath: "settings.data.x == 'y'"}]`,
		errText: "ConfigMap team-a/web-settings not found",
	}, {
		name: "apiCall with jmesPath",
		spec: `
context:
- name: podCount
  apiCall: {urlPath: "/api/v1/namespaces/{{ request.namespace }}/pods", jmesPath: "length(items)"}
validations: [{jmespath: "podCount == ` + "`2`" + `", message: "pods: {{ podCount }}"}]`,
	}, {
		name: "apiCall POST with data",
		spec: `
context:
- name: check
  apiCall: {urlPath: /apis/x/v1/namespaces/team-a/checks, method: POST, data: [{key: name, value: "{{ request.object.metadata.name }}"}], jmesPath: allowed}
validations: [{jmespath: "check"}]`,
	}, {
		name: "apiCall failing without default is an error",
		spec: `
context:
- name: x
  apiCall: {urlPath: /api/v1/namespaces/team-a/nope}
validations: [{jmespath: "x == null"}]`,
		wantErr: engine.ErrNoAPIResponse,
	}, {
		name: "apiCall failing with default",
		spec: `
context:
- name: x
  apiCall: {urlPath: /api/v1/namespaces/team-a/nope, default: {limit: 3}}
validations: [{jmespath: "x.limit == ` + "`3`" + `"}]`,
	}, {
		name: "an unused failing context entry costs nothing",
		spec: `
context:
- name: x
  apiCall: {urlPath: /api/v1/namespaces/team-a/nope}
validations: [{jmespath: "request.object.spec.replicas == ` + "`5`" + `"}]`,
	}, {
		name:    "undefined variable in a message",
		spec:    `validations: [{jmespath: "` + "`false`" + `", message: "{{ request.object.metadata.nope }}"}]`,
		want:    outcome{Rejections: []string{"{{ request.object.metadata.nope }}|Invalid|422"}},
		wantErr: nil,
	}, {
		name: "undefined variable in a context value is an error naming it",
		spec: `
context:
- name: v
  variable: {value: "{{ request.object.metadata.nope }}"}
validations: [{jmespath: "v == 'x'"}]`,
		wantErr: subst.ErrUndefined,
		errText: "nope",
	}, {
		name: "a default makes an undefined key fine",
		spec: `
context:
- name: v
  variable: {value: "{{ request.object.metadata.nope || 'dflt' }}"}
validations: [{jmespath: "v == 'dflt'"}]`,
	}, {
		name: "DELETE: request.object is the old object",
		spec: "match: {operations: [DELETE]}\nvalidations: [{jmespath: \"request.object.metadata.name != 'web'\", message: \"{{ request.operation }} {{ request.object.metadata.name }}\"}]",
		op:   rules.Delete,
		obj:  "-",
		old:  deployment,
		want: outcome{Rejections: []string{"DELETE web|Invalid|422"}},
	}, {
		name: "serviceAccountName and roles",
		user: "system:serviceaccount:ci:deployer",
		spec: `validations: [{jmespath: "serviceAccountName == 'deployer' && serviceAccountNamespace == 'ci' && contains(request.roles, 'team-a:dev') && contains(request.clusterRoles, 'view')", message: "{{ request.userInfo.username }}"}]`,
	}, {
		name: "images",
		spec: `
validations:
- jmespath: "images.containers.app.registry == 'docker.io' && images.containers.app.tag == '1.25' && images.containers.sidecar.tag == 'latest'"
- deny:
    conditions:
      any:
      - {key: "{{ images.containers.*.registry }}", operator: AnyNotIn, value: [docker.io]}
  message: "registry {{ images.containers.*.registry }}"
- jmespath: "` + "`false`" + `"
  message: "{{ images.containers.sidecar.reference }}"`,
		want: outcome{Rejections: []string{"docker.io/envoy:latest|Invalid|422"}},
	}, {
		name: "scoped jmespath validation: self",
		spec: `validations: [{scope: "$.spec.template.spec.containers[*]", jmespath: "contains(self.image, ':')", message: "needs a tag"}]`,
		want: outcome{Rejections: []string{"needs a tag|Invalid|422"}},
	}, {
		name: "static patch with variables",
		spec: `
mutations:
- patch:
  - {op: add, path: /metadata/labels/owner, value: "{{ request.userInfo.username }}"}
  - {op: add, path: /metadata/annotations/replicas, value: "r{{ request.object.spec.replicas }}"}
  - {op: remove, path: /metadata/labels/nope}`,
		user: "alice",
		want: outcome{Patch: `[{"op":"add","path":"/metadata/labels/owner","value":"alice"},{"op":"add","path":"/metadata/annotations","value":{"replicas":"r5"}}]`},
	}, {
		name: "static patch: a whole-variable value keeps its type",
		spec: `
mutations:
- patch:
  - {op: replace, path: /spec/replicas, value: "{{ request.object.spec.template.spec.containers | length(@) }}"}`,
		want: outcome{Patch: `[{"op":"replace","path":"/spec/replicas","value":2}]`},
	}, {
		name: "cue validation: reason as the message, data with a context entry",
		spec: `
context:
- {name: settings, configMap: {name: settings}}
validations:
- cue: |
    object: _ @tag(object)
    data: _ @tag(data)
    validate: {
      if object.spec.replicas > 4 {
        valid: false
        reason: "\(object.metadata.name): \(object.spec.replicas) replicas for team \(data.settings.data.team) (\(data.request.operation))"
      }
    }
- cue: |
    object: _ @tag(object)
    validate: valid: object.metadata.name == "web"
  message: not shown`,
		want: outcome{Rejections: []string{"web: 5 replicas for team blue (CREATE)|Invalid|422"}},
	}, {
		name: "cue mutations: patches, each seeing the one before",
		spec: `
mutations:
- cue: |
    object: _ @tag(object)
    patches: [{op: "add", path: "/metadata/labels/cue", value: "\(object.spec.replicas)"}]
- cue: |
    object: _ @tag(object)
    patches: [{op: "add", path: "/metadata/labels/copy", value: object.metadata.labels.cue}]`,
		want: outcome{Patch: `[{"op":"add","path":"/metadata/labels/copy","value":"5"},{"op":"add","path":"/metadata/labels/cue","value":"5"}]`},
	}, {
		name: "cue: an incomplete output is an error naming the field",
		spec: `
validations:
- cue: |
    object: _ @tag(object)
    validate: valid: object.nope == 1`,
		errText: "spec.validations[0].cue",
	}, {
		name: "jmespath match condition false: no validation",
		spec: `
matchConditions: [{name: only-db, jmespath: "request.object.metadata.labels.app == 'db'"}]
validations: [{cel: "false"}]`,
	}, {
		name: "precondition block holds",
		spec: `
matchConditions:
- name: pre
  conditions:
    all:
    - {key: "{{ request.operation }}", operator: AnyIn, value: [CREATE, UPDATE]}
    - {key: "{{ request.object.spec.replicas }}", operator: GreaterThan, value: 3}
validations: [{jmespath: "` + "`false`" + `", message: "replicas {{ request.object.spec.replicas }}"}]`,
		want: outcome{Rejections: []string{"replicas 5|Invalid|422"}},
	}, {
		name: "precondition block fails: the policy does not apply",
		spec: `
matchConditions:
- name: pre
  conditions:
    any:
    - {key: "{{ request.object.metadata.name }}", operator: Equals, value: "db-*"}
    - {key: "{{ request.object.metadata.labels.app }}", operator: AnyIn, value: [db, cache]}
validations: [{cel: "false"}]`,
	}, {
		name: "deny block holds: denied with the message",
		spec: `
context:
- {name: settings, configMap: {name: settings}}
validations:
- deny:
    conditions:
      all:
      - {key: "{{ request.object.spec.replicas }}", operator: GreaterThan, value: "{{ settings.data.maxReplicas }}"}
      - {key: "{{ images.containers.*.name || ` + "`[]`" + ` }}", operator: AllNotIn, value: [forbidden]}
  message: "at most {{ settings.data.maxReplicas }} replicas"`,
		want: outcome{Rejections: []string{"at most 4 replicas|Invalid|422"}},
	}, {
		name: "deny block does not hold",
		spec: `
validations:
- deny:
    conditions:
      any:
      - {key: "{{ request.object.metadata.name }}", operator: NotEquals, value: "we?"}
  message: m`,
	}, {
		name: "$( ) references: a condition's value reads its key's field, with an operator prefix",
		spec: `
validations:
- deny:
    conditions:
      all:
      - key: "{{ request.object.spec.replicas }}"
        operator: Equals
        value: "$(./../key)"
      - key: "$(./../../0/key)"
        operator: Equals
        value: 5
  message: "same: $(./../deny/conditions/all/0/operator) \\$(./not)"`,
		want: outcome{Rejections: []string{"same: Equals $(./not)|Invalid|422"}},
	}, {
		name: "condition with an undefined variable is an error naming it",
		spec: `
validations:
- deny:
    conditions:
      any:
      - {key: "{{ request.object.metadata.nope }}", operator: Equals, value: x}`,
		wantErr: subst.ErrUndefined,
		errText: "spec.validations[0].deny.conditions: any[0].key",
	}, {
		name:    "jmespath match condition: a non-boolean is an error",
		spec:    "matchConditions: [{name: c, jmespath: \"request.object.metadata.name\"}]\nvalidations: [{cel: \"false\"}]",
		errText: "want a boolean",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snap := load(t, policyYAML("ModwrightPolicy", "team-a", tc.spec))
			op := tc.op
			if op == "" {
				op = rules.Create
			}
			src := tc.obj
			if src == "" {
				src = deployment
			}
			obj := map[string]any(nil)
			if src != "-" {
				obj = decode(t, src)
			}
			old := decode(t, tc.old)
			ns := "team-a"
			req := engine.Request{Operation: op, Namespace: ns, Object: obj, OldObject: old, UserInfo: engine.UserInfo{Username: tc.user}}
			if obj == nil {
				req.Object = nil
			}
			e := engine.New(engine.Options{Objects: objects{decode(t, configMap)}, API: api, Roles: roleReader{[]string{"team-a:dev"}, []string{"view"}}})
			dec, err := e.Evaluate(context.Background(), snap, req)
			var ruleErr error
			if err != nil {
				if !errors.Is(err, engine.ErrRuleFailed) {
					t.Fatal(err)
				}
				ruleErr = err
				dec = &engine.Decision{}
			}
			var got outcome
			if len(dec.Patch) > 0 {
				b, _ := jsonMarshal(dec.Patch)
				got.Patch = string(b)
			}
			for _, r := range dec.Rejections {
				got.Rejections = append(got.Rejections, r.Message+"|"+r.Reason+"|"+itoa(r.Code))
			}
			for _, r := range dec.Errors {
				ruleErr = r.Err
			}
			if tc.wantErr != nil || tc.errText != "" {
				if ruleErr == nil {
					t.Fatalf("no error, want %v %q", tc.wantErr, tc.errText)
				}
				if tc.wantErr != nil && !errors.Is(ruleErr, tc.wantErr) {
					t.Errorf("error %v is not %v", ruleErr, tc.wantErr)
				}
				if tc.errText != "" && !contains(ruleErr.Error(), tc.errText) {
					t.Errorf("error %v does not say %q", ruleErr, tc.errText)
				}
				return
			}
			if ruleErr != nil {
				t.Fatalf("error: %v", ruleErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestSecretRedacted: a policy failing on a Secret's data, or echoing it,
// never says the value: not in a rejection, a warning, an audit
// annotation, a rule error (a JMESPath function's error quotes its
// argument) nor the evaluation's error (failurePolicy Fail).
func TestSecretRedacted(t *testing.T) {
	const password = "hunter2hunter2"
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "team-a"},
		"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(password))}, "stringData": map[string]any{"token": "s3cr3t-token"}}
	req := engine.Request{Operation: rules.Create, Namespace: "team-a", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Secret"}, Object: secret}
	for _, tc := range []struct{ name, spec string }{
		{"echoed in a denial, a warning and an audit annotation", `
validations:
- {jmespath: "to_boolean('false')", message: "{{ base64_decode(request.object.data.password) }} and {{ request.object.stringData.token }} are weak"}
- {cel: "false", messageExpression: "string(object.data.password)"}
auditAnnotations: [{key: k, valueExpression: "string(object.stringData.token)"}]`},
		{"warned", `
validationActions: [Warn]
validations: [{jmespath: "to_boolean('false')", message: "{{ request.object.data.password }}"}]`},
		{"a function error quoting its argument, ignored", `
failurePolicy: Ignore
validations: [{jmespath: "to_boolean(base64_decode(request.object.data.password))"}]`},
		{"a function error quoting its argument, failing", `
validations: [{jmespath: "to_boolean(base64_decode(request.object.data.password))"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := load(t, policyYAML("ModwrightPolicy", "team-a", tc.spec))
			dec, err := engine.New(engine.Options{}).Evaluate(context.Background(), snap, req)
			var said []string
			if err != nil {
				said = append(said, err.Error())
			} else {
				for _, r := range dec.Rejections {
					said = append(said, r.Message)
				}
				for _, w := range dec.Warnings {
					said = append(said, w.Message)
				}
				for _, a := range dec.AuditAnnotations {
					said = append(said, a.Value)
				}
				for _, e := range dec.Errors {
					said = append(said, e.Error())
				}
				for _, tr := range dec.Trace { // explain prints it
					said = append(said, tr.Reason)
				}
			}
			all := strings.Join(said, "\n")
			if len(said) == 0 || !strings.Contains(all, engine.Redacted) {
				t.Fatalf("said %q; want the values redacted", all)
			}
			for _, v := range []string{password, secret["data"].(map[string]any)["password"].(string), "s3cr3t-token"} {
				if strings.Contains(all, v) {
					t.Errorf("a Secret's value was said: %q", all)
				}
			}
		})
	}
}

// TestVariablesTyped: CEL variables are typed by their expressions, as the
// apiserver types an admission policy's variables: a match condition or
// validation that reads a boolean variable compiles (it was refused as
// dyn), and a type error through a variable is refused at load.
func TestVariablesTyped(t *testing.T) {
	snap := load(t, policyYAML("ModwrightPolicy", "team-a", `
variables:
- {name: r, cel: "object.spec.replicas"}
- {name: big, cel: "variables.r > 4"}
- {name: name, cel: "object.metadata.name"}
- {name: label, jmespath: "request.object.metadata.labels.app"}
matchConditions: [{name: big, cel: "variables.big"}]
validations:
- {cel: "!variables.big || variables.label == 'x'", messageExpression: "variables.name + ' has too many replicas'"}`))
	req := engine.Request{Operation: rules.Create, Namespace: "team-a", Object: decode(t, deployment)}
	dec, err := engine.New(engine.Options{}).Evaluate(context.Background(), snap, req)
	if err != nil || len(dec.Rejections) != 1 || dec.Rejections[0].Message != "web has too many replicas" {
		t.Fatalf("Evaluate = %+v, %v; want one rejection", dec, err)
	}
	docs, err := source.ParseManifest("p.yaml", []byte(policyYAML("ModwrightPolicy", "team-a", `
variables: [{name: num, cel: "1"}]
validations: [{cel: "variables.num == 'one'"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, kinds.NewRegistry(policy.NewPolicyKind()))
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "spec.validations[0].cel") {
		t.Errorf("an int variable compared with a string: %v, want a load error", res.Errors)
	}
}

// TestVariablesTypeNotShared: the type of `variables` a CEL expression is
// compiled against is the variables defined before it, fixed once built,
// though the environments built on it are shared by every policy of the
// kind. The type was built on the compiler's own map of fields, which
// went on growing: a later policy with the same first variables compiled
// against the first policy's later ones too, and policies compiled at once
// (a snapshot's build) read the map while it was written, which crashed
// the process.
func TestVariablesTypeNotShared(t *testing.T) {
	reg := kinds.NewRegistry(policy.NewPolicyKind())
	loadErrs := func(spec string) []error {
		t.Helper()
		docs, err := source.ParseManifest("p.yaml", []byte(policyYAML("ModwrightPolicy", "team-a", spec)))
		if err != nil {
			t.Fatal(err)
		}
		return source.LoadRules(docs, reg).Errors
	}
	if errs := loadErrs(`
variables: [{name: a, cel: "1"}, {name: b, cel: "2"}, {name: c, cel: "3"}]
validations: [{cel: "variables.c == 3"}]`); len(errs) != 0 {
		t.Fatalf("the first policy: %v", errs)
	}
	errs := loadErrs(`
variables: [{name: a, cel: "1"}, {name: b, cel: "2"}, {name: d, cel: "variables.c"}]
validations: [{cel: "variables.d == 3"}]`)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.variables[2].cel") {
		t.Errorf("a variable reading one its policy does not define: %v, want a load error", errs)
	}
}

// TestCompileParallel loads policies that share their first variables
// (each read by the next) in one snapshot, compiled in parallel (source.LoadRules) against the
// kind's one environment cache: each compiles and decides as alone. Run
// with -race by make test (the race target): the type of `variables` was
// once written while another compile read it.
func TestCompileParallel(t *testing.T) {
	var manifest []string
	for i := range 80 { // enough to be compiled in parallel (source.ForEach)
		manifest = append(manifest, strings.Replace(policyYAML("ModwrightPolicy", "team-a", fmt.Sprintf(`
variables:
- {name: r, cel: "object.spec.replicas"}
- {name: twice, cel: "variables.r * 2"}
- {name: limit%d, cel: "variables.twice * 0 + %d"}
- {name: big, cel: "variables.r > variables.limit%d"}
validations: [{cel: "!variables.big", messageExpression: "object.metadata.name + ' over %d'"}]`, i, i, i, i)), "name: p", fmt.Sprintf("name: p%d", i), 1))
	}
	docs, err := source.ParseManifest("p.yaml", []byte(strings.Join(manifest, "---\n")))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, kinds.NewRegistry(policy.NewPolicyKind()))
	if len(res.Errors) != 0 || len(res.Rules) != 80 {
		t.Fatalf("LoadRules: %d rules, errors %v; want 80 rules", len(res.Rules), res.Errors)
	}
	// The Deployment has 5 replicas: the policies with limits 0 to 4
	// reject it.
	req := engine.Request{Operation: rules.Create, Namespace: "team-a", Object: decode(t, deployment)}
	dec, err := engine.New(engine.Options{}).Evaluate(context.Background(), engine.NewSnapshot(res.Rules), req)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range dec.Rejections {
		got = append(got, r.Message)
	}
	slices.Sort(got)
	if want := []string{"web over 0", "web over 1", "web over 2", "web over 3", "web over 4"}; !slices.Equal(got, want) {
		t.Errorf("rejections %q, want %q", got, want)
	}
}

// readerAuthz allows the rule readers it lists, recording what it was
// asked.
type readerAuthz struct {
	allow map[string]bool // "user verb resource ns/name"
	asked []string
}

func (a *readerAuthz) Authorize(_ context.Context, at engine.AuthzAttributes) (bool, string, error) {
	q := at.User.Username + " " + at.Verb + " " + at.Resource + " " + at.Namespace + "/" + at.Name
	a.asked = append(a.asked, q)
	return a.allow[q], "", nil
}

// TestConfigMapAsRuleReader: with a RuleReader, a namespaced Policy's
// configMap entry is read only when its namespace's rule reader may get
// the ConfigMap; a ClusterPolicy's is read as the operator.
func TestConfigMapAsRuleReader(t *testing.T) {
	spec := "context: [{name: settings, configMap: {name: settings}}]\nvalidations: [{jmespath: \"settings.data.team == 'blue'\"}]"
	const who = "system:serviceaccount:team-a:modwright-rules get configmaps team-a/settings"
	req := engine.Request{Operation: rules.Create, Namespace: "team-a", Object: decode(t, deployment)}
	for _, tc := range []struct {
		kind, ns string
		allow    bool
		wantErr  bool
		asked    int
	}{
		{"ModwrightPolicy", "team-a", false, true, 1},
		{"ModwrightPolicy", "team-a", true, false, 1},
		{"ClusterModwrightPolicy", "", false, false, 0},
	} {
		authz := &readerAuthz{allow: map[string]bool{who: tc.allow}}
		e := engine.New(engine.Options{Objects: objects{decode(t, configMap)}, Authorizer: authz, RuleReader: "modwright-rules"})
		dec, err := e.Evaluate(context.Background(), load(t, policyYAML(tc.kind, tc.ns, spec)), req)
		switch {
		case tc.wantErr && (!errors.Is(err, engine.ErrReadForbidden) || !contains(err.Error(), "a rule in team-a reads as system:serviceaccount:team-a:modwright-rules, which may not get configmaps in team-a")):
			t.Errorf("%s, allowed %v: %v, want the read refused", tc.kind, tc.allow, err)
		case !tc.wantErr && (err != nil || !dec.Allowed()):
			t.Errorf("%s, allowed %v: %v %+v", tc.kind, tc.allow, err, dec)
		}
		if len(authz.asked) != tc.asked {
			t.Errorf("%s: asked %q", tc.kind, authz.asked)
		}
	}
	// A name an object made that no object can have is not asked about.
	long := "context: [{name: settings, configMap: {name: \"{{ request.object.metadata.annotations.n }}\"}}]\nvalidations: [{jmespath: \"settings != null\"}]"
	obj := decode(t, deployment)
	obj["metadata"].(map[string]any)["annotations"] = map[string]any{"n": strings.Repeat("n", 300)}
	authz := &readerAuthz{}
	e := engine.New(engine.Options{Objects: objects{decode(t, configMap)}, Authorizer: authz, RuleReader: "modwright-rules"})
	_, err := e.Evaluate(context.Background(), load(t, policyYAML("ModwrightPolicy", "team-a", long)), engine.Request{Operation: rules.Create, Namespace: "team-a", Object: obj})
	if !errors.Is(err, engine.ErrReadForbidden) || len(authz.asked) != 0 {
		t.Errorf("a 300-byte name: %v, asked %q", err, authz.asked)
	}
}

// fakeGraph answers every object with the same edges.
type fakeGraph struct{ in []any }

func (g fakeGraph) Edges(context.Context, engine.ObjectRef, map[string]any) ([]any, []any, error) {
	return g.in, nil, nil
}

// TestGraphConfined: a namespaced Policy's graph entry gives only the
// edges whose ends are in its namespace or cluster-scoped; a
// ClusterPolicy's gives every edge.
func TestGraphConfined(t *testing.T) {
	edge := func(ns string) any {
		return map[string]any{"type": "USES_SECRET", "from": map[string]any{"kind": "Pod", "namespace": ns, "name": "p"},
			"to": map[string]any{"kind": "Secret", "namespace": "team-a", "name": "db"}}
	}
	node := map[string]any{"type": "SCHEDULED_ON", "from": map[string]any{"kind": "Pod", "namespace": "team-a", "name": "p"},
		"to": map[string]any{"kind": "Node", "name": "n1"}}
	g := fakeGraph{in: []any{edge("team-a"), edge("team-b"), node}}
	spec := "context: [{name: users, graph: {direction: incoming}}]\nvalidations: [{jmespath: \"length(users) == `%d`\", message: \"{{ length(users) }} edges\"}]"
	req := engine.Request{Operation: rules.Create, Namespace: "team-a", Object: decode(t, deployment)}
	for _, tc := range []struct {
		kind, ns string
		want     int
	}{{"ModwrightPolicy", "team-a", 2}, {"ClusterModwrightPolicy", "", 3}} {
		e := engine.New(engine.Options{Graph: g})
		dec, err := e.Evaluate(context.Background(), load(t, policyYAML(tc.kind, tc.ns, fmt.Sprintf(spec, tc.want))), req)
		if err != nil || !dec.Allowed() {
			t.Errorf("%s: %v %+v, want %d edges", tc.kind, err, dec.Rejections, tc.want)
		}
	}
}
