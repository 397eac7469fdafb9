package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/policy"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

func registry() *kinds.Registry {
	return kinds.NewRegistry(policy.NewPolicyKind(), policy.NewClusterPolicyKind())
}

// load compiles the policies of a YAML stream; compile errors fail the test.
func load(t *testing.T, yaml string) *engine.Snapshot {
	t.Helper()
	docs, err := source.ParseManifest("policies.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, registry())
	if len(res.Errors) > 0 || len(res.Skipped) > 0 {
		t.Fatalf("load: errors %v, skipped %v", res.Errors, res.Skipped)
	}
	return engine.NewSnapshot(res.Rules)
}

func decode(t *testing.T, yaml string) map[string]any {
	t.Helper()
	if yaml == "" {
		return nil
	}
	docs, err := source.ParseManifest("object.yaml", []byte(yaml))
	if err != nil || len(docs) != 1 {
		t.Fatalf("object: %v (%d documents)", err, len(docs))
	}
	return docs[0].Object
}

// objects is an ObjectReader over a fixed set.
type objects []map[string]any

func (o objects) Get(_ context.Context, ref engine.ObjectRef) (map[string]any, error) {
	for _, obj := range o {
		md, _ := obj["metadata"].(map[string]any)
		if obj["kind"] == ref.Kind && md["name"] == ref.Name {
			return obj, nil
		}
	}
	return nil, nil
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team-a
  labels: {app: web}
spec:
  replicas: 5
  template:
    spec:
      containers:
      - name: app
        image: nginx:1.25
      - name: sidecar
        image: envoy
`

type outcome struct {
	Patch       string   // the decision's patch as JSON, "" for none
	Rejections  []string // "message|reason|code"
	Warnings    []string
	Annotations []string // key=value
}

func run(t *testing.T, snap *engine.Snapshot, op rules.Operation, obj, old map[string]any, objs engine.ObjectReader) (outcome, *engine.Decision, error) {
	t.Helper()
	ns := ""
	if md, ok := obj["metadata"].(map[string]any); ok {
		ns, _ = md["namespace"].(string)
	} else if md, ok := old["metadata"].(map[string]any); ok {
		ns, _ = md["namespace"].(string)
	}
	req := engine.Request{Operation: op, Namespace: ns, Object: obj, OldObject: old}
	if op == rules.Delete {
		req.Object = nil
	}
	if obj == nil {
		req.Object = nil
	}
	dec, err := engine.New(engine.Options{Objects: objs}).Evaluate(context.Background(), snap, req)
	if err != nil {
		return outcome{}, nil, err
	}
	var o outcome
	if len(dec.Patch) > 0 {
		b, _ := json.Marshal(dec.Patch)
		o.Patch = string(b)
	}
	for _, r := range dec.Rejections {
		o.Rejections = append(o.Rejections, r.Message+"|"+r.Reason+"|"+itoa(r.Code))
	}
	for _, w := range dec.Warnings {
		o.Warnings = append(o.Warnings, w.Message)
	}
	for _, a := range dec.AuditAnnotations {
		o.Annotations = append(o.Annotations, a.Key+"="+a.Value)
	}
	return o, dec, nil
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func policyYAML(kind, ns, spec string) string {
	meta := "  name: p\n"
	if ns != "" {
		meta += "  namespace: " + ns + "\n"
	}
	return "apiVersion: modwright.io/v1alpha1\nkind: " + kind + "\nmetadata:\n" + meta + "spec:\n" + indent(spec)
}

func indent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    string // default Policy in team-a
		spec    string
		op      rules.Operation
		obj     string // default deployment
		old     string
		objects []string
		want    outcome
		wantErr error
	}{{
		name: "validation passes",
		spec: `validations: [{cel: "object.spec.replicas <= 10"}]`,
	}, {
		name: "validation denies with message, default reason",
		spec: `validations: [{cel: "object.spec.replicas <= 3", message: "at most 3 replicas"}]`,
		want: outcome{Rejections: []string{"at most 3 replicas|Invalid|422"}},
	}, {
		name: "messageExpression wins, reason Forbidden",
		spec: `validations: [{cel: "object.spec.replicas <= 3", message: "m", messageExpression: "'got ' + string(object.spec.replicas)", reason: Forbidden}]`,
		want: outcome{Rejections: []string{"got 5|Forbidden|403"}},
	}, {
		name: "empty messageExpression falls back to message",
		spec: `validations: [{cel: "false", message: "m", messageExpression: "''"}]`,
		want: outcome{Rejections: []string{"m|Invalid|422"}},
	}, {
		name: "no message: the expression",
		spec: `validations: [{cel: "object.spec.replicas < 2"}]`,
		want: outcome{Rejections: []string{"failed expression: object.spec.replicas < 2|Invalid|422"}},
	}, {
		name: "Warn",
		spec: "validationActions: [Warn]\nvalidations: [{cel: 'false', message: careful}]",
		want: outcome{Warnings: []string{"careful"}},
	}, {
		name: "Audit",
		spec: "validationActions: [Audit]\nvalidations: [{cel: 'false', message: noted}]",
		want: outcome{Annotations: []string{`validation_failure={"message":"noted","policy":"team-a/p","kind":"ModwrightPolicy","expressionIndex":0,"validationActions":["Audit"]}`}},
	}, {
		name: "scope: each container",
		spec: `validations: [{scope: "$.spec.template.spec.containers[*]", cel: "self.image.contains(':')", messageExpression: "self.name + ' needs a tag'"}]`,
		want: outcome{Rejections: []string{"sidecar needs a tag|Invalid|422"}},
	}, {
		name: "variables, lazily, later reading earlier",
		spec: `
variables:
- {name: replicas, cel: "object.spec.replicas"}
- {name: double, cel: "variables.replicas * 2"}
- {name: boom, cel: "object.nope.nope"}
validations: [{cel: "variables.double == 10"}]`,
	}, {
		name: "a variable without a JSON form",
		spec: `
variables:
- {name: limit, cel: "quantity('1Gi')"}
validations: [{cel: "variables.limit.isGreaterThan(quantity('512Mi'))"}]`,
	}, {
		name: "a variable cannot read a later one",
		spec: `
variables:
- {name: a, cel: "variables.b"}
- {name: b, cel: "1"}
validations: [{cel: "variables.a == 1"}]`,
		wantErr: engine.ErrRuleFailed,
	}, {
		name: "matchConditions false: not applied",
		spec: `
matchConditions: [{name: big, cel: "object.spec.replicas > 10"}]
validations: [{cel: "false"}]`,
	}, {
		name: "matchConditions true",
		spec: `
matchConditions: [{name: big, cel: "object.spec.replicas > 3"}]
validations: [{cel: "false", message: big}]`,
		want: outcome{Rejections: []string{"big|Invalid|422"}},
	}, {
		name: "resources: another kind",
		spec: "match: {resources: [{kinds: [StatefulSet]}]}\nvalidations: [{cel: 'false'}]",
	}, {
		name: "resources: group and name glob",
		spec: "match: {resources: [{apiGroups: [apps], kinds: [Deployment], names: ['w*']}]}\nvalidations: [{cel: 'false', message: x}]",
		want: outcome{Rejections: []string{"x|Invalid|422"}},
	}, {
		name: "resources: wrong group",
		spec: "match: {resources: [{apiGroups: [''], kinds: ['*']}]}\nvalidations: [{cel: 'false', message: x}]",
	}, {
		name: "objectSelector",
		spec: "match: {objectSelector: {matchLabels: {app: db}}}\nvalidations: [{cel: 'false'}]",
	}, {
		name: "exclude by name",
		spec: "match: {exclude: {resources: [{names: [web]}]}}\nvalidations: [{cel: 'false'}]",
	}, {
		name:    "namespaceSelector with the Namespace",
		spec:    "match: {namespaceSelector: {matchLabels: {tier: prod}}}\nvalidations: [{cel: 'namespaceObject.metadata.name != \"team-a\"', message: prod}]",
		objects: []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {tier: prod}}"},
		want:    outcome{Rejections: []string{"prod|Invalid|422"}},
	}, {
		name:    "namespaceSelector not matching",
		spec:    "match: {namespaceSelector: {matchLabels: {tier: prod}}}\nvalidations: [{cel: 'false'}]",
		objects: []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {tier: dev}}"},
	}, {
		name:    "namespaceSelector without a reader fails the policy",
		spec:    "match: {namespaceSelector: {matchLabels: {tier: prod}}}\nvalidations: [{cel: 'false'}]",
		wantErr: policy.ErrNoNamespace,
	}, {
		name: "Policy in another namespace does not apply",
		kind: "Policy/other",
		spec: `validations: [{cel: "false"}]`,
	}, {
		name: "ClusterPolicy with namespace globs",
		kind: "ClusterModwrightPolicy",
		spec: "match: {resources: [{namespaces: ['team-*']}]}\nvalidations: [{cel: 'false', message: c}]",
		want: outcome{Rejections: []string{"c|Invalid|422"}},
	}, {
		name: "ClusterPolicy with other namespaces",
		kind: "ClusterModwrightPolicy",
		spec: "match: {resources: [{namespaces: ['prod-*']}]}\nvalidations: [{cel: 'false', message: c}]",
	}, {
		name:    "evaluation error with failurePolicy Fail",
		spec:    `validations: [{cel: "object.spec.nope > 1"}]`,
		wantErr: engine.ErrRuleFailed,
	}, {
		name: "evaluation error with failurePolicy Ignore",
		spec: "failurePolicy: Ignore\nvalidations: [{cel: 'object.spec.nope > 1'}, {cel: 'false', message: second}]",
	}, {
		name: "request and oldObject on UPDATE",
		op:   rules.Update,
		old:  strings.Replace(deployment, "replicas: 5", "replicas: 2", 1),
		spec: `validations: [{cel: "request.operation == 'UPDATE' && object.spec.replicas - oldObject.spec.replicas <= 2", message: "grows by at most 2"}]`,
		want: outcome{Rejections: []string{"grows by at most 2|Invalid|422"}},
	}, {
		name: "oldSelf",
		op:   rules.Update,
		old:  strings.Replace(deployment, "image: envoy", "image: envoy:1", 1),
		spec: `validations: [{scope: "$.spec.template.spec.containers[*]", cel: "oldSelf == null || self.image == oldSelf.image", messageExpression: "self.name + ' image is immutable'"}]`,
		want: outcome{Rejections: []string{"sidecar image is immutable|Invalid|422"}},
	}, {
		name: "DELETE: object null, oldObject the object",
		op:   rules.Delete,
		spec: "match: {operations: [DELETE]}\nvalidations: [{cel: 'object == null && oldObject.metadata.name == \"web\"', message: nope}, {cel: 'false', message: protected}]",
		want: outcome{Rejections: []string{"protected|Invalid|422"}},
	}, {
		name: "DELETE not matched by default",
		op:   rules.Delete,
		spec: `validations: [{cel: "false"}]`,
	}, {
		name: "jsonPatch mutation",
		spec: `mutations: [{jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/checked', value: 'yes'}]"}]`,
		want: outcome{Patch: `[{"op":"add","path":"/metadata/labels/checked","value":"yes"}]`},
	}, {
		name: "applyConfiguration mutation",
		spec: `mutations: [{applyConfiguration: "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"}]`,
		want: outcome{Patch: `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`},
	}, {
		name: "mutations in order, then validations on the result",
		spec: `
mutations:
- jsonPatch: "[JSONPatch{op: 'replace', path: '/spec/replicas', value: 3}]"
- jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/r', value: string(object.spec.replicas)}]"
validations: [{cel: "object.spec.replicas == 3 && object.metadata.labels.r == '3'", message: order}]`,
		want: outcome{Patch: `[{"op":"add","path":"/metadata/labels/r","value":"3"},{"op":"replace","path":"/spec/replicas","value":3}]`},
	}, {
		name:    "a failing mutation leaves nothing (failurePolicy Fail)",
		spec:    `mutations: [{jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}, JSONPatch{op: 'remove', path: '/nope'}]"}]`,
		wantErr: engine.ErrRuleFailed,
	}, {
		name: "a failing mutation with Ignore",
		spec: "failurePolicy: Ignore\nmutations: [{jsonPatch: \"[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}, JSONPatch{op: 'remove', path: '/nope'}]\"}]",
	}, {
		name: "audit annotation",
		spec: `auditAnnotations: [{key: replicas, valueExpression: "string(object.spec.replicas)"}, {key: none, valueExpression: "null"}]`,
		want: outcome{Annotations: []string{"replicas=5"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			kind, ns := "ModwrightPolicy", "team-a"
			switch {
			case tc.kind == "ClusterModwrightPolicy":
				kind, ns = tc.kind, ""
			case strings.HasPrefix(tc.kind, "Policy/"):
				ns = strings.TrimPrefix(tc.kind, "Policy/")
			}
			snap := load(t, policyYAML(kind, ns, tc.spec))
			op := tc.op
			if op == "" {
				op = rules.Create
			}
			src := tc.obj
			if src == "" {
				src = deployment
			}
			obj, old := decode(t, src), decode(t, tc.old)
			if op == rules.Delete {
				old = obj
			}
			var objs objects
			for _, o := range tc.objects {
				objs = append(objs, decode(t, o))
			}
			var reader engine.ObjectReader
			if objs != nil {
				reader = objs
			}
			got, _, err := run(t, snap, op, obj, old, reader)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, kind, spec string
		want             []string // FieldError strings
	}{{
		name: "CEL type error with position",
		spec: `validations: [{cel: "object.spec.replicas + 'a' > 1"}]`,
		want: []string{"spec.validations[0].cel: column"},
	}, {
		name: "no language",
		spec: `validations: [{message: m}]`,
		want: []string{"spec.validations[0]: exactly one of cel, jmespath, rego, deny and cue must be set"},
	}, {
		name: "Deny and Warn",
		spec: "validationActions: [Deny, Warn]\nvalidations: [{cel: 'true'}]",
		want: []string{"spec.validationActions: Deny and Warn cannot be used together"},
	}, {
		name: "namespaces in a Policy",
		spec: "match: {resources: [{namespaces: [a]}]}\nvalidations: [{cel: 'true'}]",
		want: []string{"spec.match.resources[0].namespaces: namespaces is for ClusterModwrightPolicy only"},
	}, {
		name: "self outside a scope",
		spec: `validations: [{cel: "self.x == 1"}]`,
		want: []string{"spec.validations[0].cel: column 1: undeclared reference to 'self'"},
	}, {
		name: "bad scope",
		spec: `validations: [{scope: "$.a[", cel: "true"}]`,
		want: []string{"spec.validations[0].scope: column"},
	}, {
		name: "both mutation members",
		spec: `mutations: [{jsonPatch: "[]", applyConfiguration: "Object{}"}]`,
		want: []string{"spec.mutations[0]: exactly one of jsonPatch, applyConfiguration, patch and cue must be set"},
	}, {
		name: "a $( ) reference to nothing, reported once",
		spec: "validations:\n- deny: {conditions: {any: [{key: a, operator: Equals, value: \"$(./../nope)\"}]}}",
		want: []string{"spec.validations[0].deny.conditions.any[0].value: unresolved reference $(./../nope): no value at /validations/0/deny/conditions/any/0/nope"},
	}, {
		name: "an unknown condition operator",
		spec: "validations:\n- deny: {conditions: {all: [{key: a, operator: Bigger, value: b}]}}",
		want: []string{"spec.validations[0].deny.conditions.all[0].operator: unknown operator \"Bigger\""},
	}, {
		name: "a JMESPath syntax error with its offset",
		spec: `validations: [{jmespath: "request.object.(("}]`,
		want: []string{"spec.validations[0].jmespath: column"},
	}, {
		name: "an unknown JMESPath function",
		spec: `variables: [{name: v, jmespath: "nope(@)"}]
validations: [{cel: "true"}]`,
		want: []string{"spec.variables[0].jmespath: column 1: unknown function: nope"},
	}, {
		name: "a {{ }} variable that does not parse",
		spec: `validations: [{jmespath: "` + "`true`" + `", message: "{{ request.( }}"}]`,
		want: []string{"spec.validations[0].message: variable {{ request.( }}"},
	}, {
		name: "a variable in a patch path",
		spec: `mutations: [{patch: [{op: add, path: "/metadata/labels/{{ request.name }}", value: x}]}]`,
		want: []string{"spec.mutations[0].patch[0].path: column 18: variables are not allowed in a patch's path"},
	}, {
		name: "a patch operation without its value",
		spec: `mutations: [{patch: [{op: replace, path: /spec/replicas}]}]`,
		want: []string{"spec.mutations[0].patch[0].value: replace needs a value"},
	}, {
		name: "context: two sources, a name that hides request, a variable without value",
		spec: `context:
- {name: a, configMap: {name: x}, variable: {value: 1}}
- {name: request, variable: {value: 1}}
- {name: c, variable: {default: 1}}
validations: [{cel: "true"}]`,
		want: []string{"spec.context[0]: exactly one of configMap, apiCall, variable and graph must be set",
			"spec.context[1].name: context entry name \"request\" hides Kyverno's variable of that name",
			"spec.context[2].variable: a variable needs a value or a jmesPath"},
	}, {
		name: "an apiCall with data but GET",
		spec: `context: [{name: a, apiCall: {urlPath: /x, data: [{key: k, value: v}]}}]
validations: [{cel: "true"}]`,
		want: []string{"spec.context[0].apiCall.data: data is the body of a POST"},
	}, {
		name: "bad selector",
		spec: "match: {objectSelector: {matchExpressions: [{key: a, operator: Nope}]}}\nvalidations: [{cel: 'true'}]",
		want: []string{"spec.match.objectSelector: "},
	}, {
		name: "duplicate variable and bad name",
		spec: "variables: [{name: a, cel: '1'}, {name: a, cel: '2'}, {name: 1x, cel: '3'}]\nvalidations: [{cel: 'true'}]",
		want: []string{"spec.variables[1].name: variable \"a\" is defined twice", "spec.variables[2].name: variable name \"1x\" is not an identifier"},
	}, {
		name: "result types known when compiling",
		spec: "matchConditions: [{name: c, cel: \"'x'\"}]\nvalidations: [{cel: '1', messageExpression: '2'}, {cel: 'object.x', messageExpression: 'object.y'}, {cel: 'object.x == 1', messageExpression: \"'a' + object.y\"}]\nauditAnnotations: [{key: a, valueExpression: 'null'}, {key: b, valueExpression: '3'}]",
		want: []string{
			"spec.matchConditions[0].cel: column 1: must evaluate to bool but got string",
			"spec.validations[0].cel: column 1: must evaluate to bool but got int",
			"spec.validations[0].messageExpression: column 1: must evaluate to string but got int",
			"spec.validations[1].cel: column 1: must evaluate to bool but got dyn",
			"spec.validations[1].messageExpression: column 1: must evaluate to string but got dyn",
			"spec.auditAnnotations[1].valueExpression: column 1: must evaluate to one of [string null_type] but got int",
		},
	}, {
		name: "bad reason",
		spec: `validations: [{cel: "true", reason: Teapot}]`,
		want: []string{"spec.validations[0].reason: unknown reason \"Teapot\""},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.kind
			ns := "team-a"
			if kind == "" {
				kind = "ModwrightPolicy"
			}
			docs, err := source.ParseManifest("p.yaml", []byte(policyYAML(kind, ns, tc.spec)))
			if err != nil {
				t.Fatal(err)
			}
			res := source.LoadRules(docs, registry())
			if len(res.Errors) != 1 {
				t.Fatalf("errors %v, want 1", res.Errors)
			}
			var ce *rules.CompileError
			if !errors.As(res.Errors[0], &ce) || !errors.Is(res.Errors[0], rules.ErrInvalidRule) {
				t.Fatalf("error %v is not a *rules.CompileError", res.Errors[0])
			}
			if len(ce.Errors) != len(tc.want) {
				t.Fatalf("errors %v, want %d", ce.Errors, len(tc.want))
			}
			for i, w := range tc.want {
				if got := ce.Errors[i].String(); !strings.HasPrefix(got, w) {
					t.Errorf("error %d: %q, want prefix %q", i, got, w)
				}
			}
			if len(res.Rules) != 1 || res.Rules[0].Info().Err == nil {
				t.Errorf("the broken policy is not kept with its error: %v", res.Rules)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	// Each validation costs about 10^6/2 over a 1000-element list; a
	// policy's budget is spent before the 30th.
	var vs []string
	for i := 0; i < 30; i++ {
		vs = append(vs, `{cel: "variables.big.all(x, variables.big.all(y, x + y >= 0))"}`)
	}
	spec := "variables: [{name: big, cel: 'lists.range(300)'}]\nvalidations: [" + strings.Join(vs, ", ") + "]"
	snap := load(t, policyYAML("ModwrightPolicy", "team-a", spec))
	_, _, err := run(t, snap, rules.Create, decode(t, deployment), nil, nil)
	if !errors.Is(err, lang.ErrLimit) || !errors.Is(err, engine.ErrRuleFailed) || !errors.Is(err, policy.ErrBudget) {
		t.Fatalf("error %v, want ErrLimit, ErrBudget and ErrRuleFailed", err)
	}
	t.Log(err)
}

// fakeAuthz allows what its map says, by "verb group/resource ns/name".
type fakeAuthz struct {
	allow map[string]bool
	asked []string
}

func (f *fakeAuthz) Authorize(_ context.Context, a engine.AuthzAttributes) (bool, string, error) {
	q := a.User.Username + " " + a.Verb + " " + a.Group + "/" + a.Resource + " " + a.Namespace + "/" + a.Name
	f.asked = append(f.asked, q)
	return f.allow[q], "rbac", nil
}

func TestAuthorizer(t *testing.T) {
	spec := `validations: [{cel: "authorizer.group('apps').resource('deployments').namespace('team-a').name('web').check('delete').allowed()", message: "may not delete"}]`
	snap := load(t, policyYAML("ModwrightPolicy", "team-a", spec))
	req := engine.Request{Operation: rules.Create, Namespace: "team-a", Object: decode(t, deployment), UserInfo: engine.UserInfo{Username: "alice"}}

	_, err := engine.New(engine.Options{}).Evaluate(context.Background(), snap, req)
	if !errors.Is(err, cel.ErrNoAuthorizer) || !errors.Is(err, engine.ErrRuleFailed) {
		t.Fatalf("offline: error %v, want ErrNoAuthorizer", err)
	}
	for _, allowed := range []bool{true, false} {
		a := &fakeAuthz{allow: map[string]bool{"alice delete apps/deployments team-a/web": allowed}}
		dec, err := engine.New(engine.Options{Authorizer: a}).Evaluate(context.Background(), snap, req)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Allowed() != allowed || len(a.asked) != 1 {
			t.Errorf("allowed %v: decision allowed %v, asked %v", allowed, dec.Allowed(), a.asked)
		}
	}
}
