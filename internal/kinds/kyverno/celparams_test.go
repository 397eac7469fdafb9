package kyverno_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/rules"
)

const paramsPolicy = `
apiVersion: kyverno.io/v1
kind: KIND
metadata: {name: limits, namespace: team-a}
spec:
  validationFailureAction: Enforce
  rules:
  - name: max
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    celPreconditions:
    - {name: limited, expression: "variables.enabled == 'true'"}
    validate:
      cel:
        paramKind: {apiVersion: v1, kind: ConfigMap}
        paramRef: PARAMREF
        variables:
        - {name: enabled, expression: "params.data.?enabled.orValue('true')"}
        - {name: max, expression: "int(params.data.max)"}
        expressions:
        - expression: "size(object.data) <= variables.max"
          messageExpression: "'at most ' + string(variables.max) + ' keys (' + params.metadata.name + ')'"
`

func limit(ns, name, max string, labels map[string]any, enabled string) map[string]any {
	data := map[string]any{"max": max}
	if enabled != "" {
		data["enabled"] = enabled
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels}, "data": data}
}

// TestCELParams: validate.cel reads its paramRef's objects as `params`,
// in the object's namespace unless paramRef names one: by name (absent:
// the rule's error), or each one a selector picks (none: a pass under
// Allow, "no params found" under Deny); celPreconditions read them too,
// and the variables computed for each param;
// a namespaced Policy reads params in its own namespace only.
func TestCELParams(t *testing.T) {
	objs := kindObjects{
		"v1/ConfigMap team-a/max":   limit("team-a", "max", "2", map[string]any{"limits": "yes"}, ""),
		"v1/ConfigMap team-a/loose": limit("team-a", "loose", "1", map[string]any{"limits": "yes"}, "false"),
		"v1/ConfigMap team-a/tight": limit("team-a", "tight", "1", map[string]any{"limits": "tight"}, ""),
		"v1/ConfigMap shared/max":   limit("shared", "max", "5", nil, ""),
	}
	for _, tc := range []struct {
		name, kind, ref, ns string
		keys                int
		want                string // status: message
	}{
		{"by name", "ClusterPolicy", "{name: max, parameterNotFoundAction: Deny}", "team-a", 2, "pass: Validation rule 'max' passed."},
		{"by name, over", "ClusterPolicy", "{name: max, parameterNotFoundAction: Deny}", "team-a", 3, "fail: at most 2 keys (max)"},
		{"namespace given", "ClusterPolicy", "{name: max, namespace: shared, parameterNotFoundAction: Allow}", "team-a", 3, "pass: Validation rule 'max' passed."},
		{"absent", "ClusterPolicy", "{name: max, parameterNotFoundAction: Allow}", "team-b", 1, "error: error in parameterized resource: ConfigMap \"max\" not found"},
		{"selector, each", "ClusterPolicy", "{selector: {matchLabels: {limits: tight}}, parameterNotFoundAction: Deny}", "team-a", 2, "fail: at most 1 keys (tight)"},
		{"selector, precondition", "ClusterPolicy", "{selector: {matchLabels: {limits: 'yes'}}, parameterNotFoundAction: Deny}", "team-a", 2, "skip: cel preconditions not met"},
		{"selector, none, Allow", "ClusterPolicy", "{selector: {matchLabels: {limits: none}}, parameterNotFoundAction: Allow}", "team-a", 9, "pass: Validation rule 'max' passed."},
		{"selector, none, Deny", "ClusterPolicy", "{selector: {matchLabels: {limits: none}}, parameterNotFoundAction: Deny}", "team-a", 1, "error: error in parameterized resource: no params found"},
		{"Policy, own namespace", "Policy", "{name: max, parameterNotFoundAction: Deny}", "team-a", 3, "fail: at most 2 keys (max)"},
		{"Policy, other namespace", "Policy", "{name: max, namespace: shared, parameterNotFoundAction: Deny}", "team-a", 1, "error: error in parameterized resource: outside the Policy's namespace: a Policy in team-a reads params only from its own namespace, not from \"shared\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(t, strings.NewReplacer("KIND", tc.kind, "PARAMREF", tc.ref).Replace(paramsPolicy))
			data := map[string]any{}
			for i := range tc.keys {
				data[fmt.Sprint("k", i)] = "v"
			}
			obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": tc.ns}, "data": data}
			eng := engine.New(engine.Options{Kinds: objs, Authorizer: denyOtherNamespaces{}, RuleReader: "reader"})
			d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: tc.ns, Object: obj})
			if err != nil && !strings.HasPrefix(tc.want, "fail") && !strings.HasPrefix(tc.want, "error") {
				t.Fatal(err)
			}
			var got []string
			for _, tr := range d.Trace {
				for _, r := range kyverno.ResultsOf(tr.Detail) {
					got = append(got, string(r.Status)+": "+r.Message)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCELParamsErrors: paramKind and paramRef are checked when the policy
// loads, as Kyverno checks them, each at its field.
func TestCELParamsErrors(t *testing.T) {
	for _, tc := range []struct{ kind, ref, want string }{
		{"{apiVersion: v1, kind: ConfigMap}", "", "spec.rules[0].validate.cel.paramRef: cel.paramRef is required"},
		{"", "{name: a, parameterNotFoundAction: Deny}", "spec.rules[0].validate.cel.paramKind: cel.paramKind is required"},
		{"{kind: ConfigMap}", "{name: a, parameterNotFoundAction: Deny}", "cel.paramKind.apiVersion is required"},
		{"{apiVersion: v1}", "{name: a, parameterNotFoundAction: Deny}", "cel.paramKind.kind is required"},
		{"{apiVersion: a/b/c, kind: X}", "{name: a, parameterNotFoundAction: Deny}", "spec.rules[0].validate.cel.paramKind.apiVersion"},
		{"{apiVersion: v1, kind: ConfigMap}", "{parameterNotFoundAction: Deny}", "one of cel.paramRef.name or cel.paramRef.selector must be set"},
		{"{apiVersion: v1, kind: ConfigMap}", "{name: a, selector: {}, parameterNotFoundAction: Deny}", "one of cel.paramRef.name or cel.paramRef.selector must be set"},
		{"{apiVersion: v1, kind: ConfigMap}", "{name: a}", "cel.paramRef.parameterNotFoundAction is required"},
		{"{apiVersion: v1, kind: ConfigMap}", "{name: a, parameterNotFoundAction: Maybe}", `unsupported value "Maybe"`},
		{"{apiVersion: v1, kind: Namespace}", "{name: a, namespace: b, parameterNotFoundAction: Deny}", "spec.rules[0].validate.cel.paramRef.namespace"},
		{"{apiVersion: v1, kind: ConfigMap}", "{selector: {matchExpressions: [{key: a, operator: Bad}]}, parameterNotFoundAction: Deny}", "spec.rules[0].validate.cel.paramRef.selector"},
	} {
		cel := "{expressions: [{expression: 'true'}]"
		if tc.kind != "" {
			cel += ", paramKind: " + tc.kind
		}
		if tc.ref != "" {
			cel += ", paramRef: " + tc.ref
		}
		_, err := compileErr(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: broken}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate: {cel: `+cel+`}}`)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want one saying %s", tc.kind, tc.ref, err, tc.want)
		}
	}
}

// TestCELAuditAnnotations: validate.cel's audit annotations are added to
// the request's audit event whatever the outcome, keyed by the policy's
// name, as the API server adds an admission policy's (with the params they
// read); a value that is not a string is the rule's error; a bad key is an
// error when the policy loads.
func TestCELAuditAnnotations(t *testing.T) {
	policy := func(value string) string {
		return `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: limits}
spec:
  validationFailureAction: Audit
  rules:
  - name: max
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      cel:
        paramKind: {apiVersion: v1, kind: ConfigMap}
        paramRef: {name: max, parameterNotFoundAction: Deny}
        expressions: [{expression: "size(object.data) <= int(params.data.max)"}]
        auditAnnotations:
        - {key: keys, valueExpression: "` + value + `"}
        - {key: empty, valueExpression: "null"}
`
	}
	objs := kindObjects{"v1/ConfigMap team-a/max": limit("team-a", "max", "1", nil, "")}
	eng := engine.New(engine.Options{Kinds: objs})
	eval := func(snap *engine.Snapshot, keys int) ([]string, *engine.Decision) {
		data := map[string]any{}
		for i := range keys {
			data[fmt.Sprint("k", i)] = "v"
		}
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "team-a"}, "data": data}
		d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team-a", Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range d.Trace {
			for _, r := range kyverno.ResultsOf(tr.Detail) {
				got = append(got, string(r.Status))
			}
		}
		return got, d
	}
	snap := snapshot(t, policy("string(size(object.data)) + ' of ' + params.data.max"))
	for _, tc := range []struct {
		keys         int
		status, want string
	}{{1, "pass", "1 of 1"}, {2, "fail", "2 of 1"}} {
		got, d := eval(snap, tc.keys)
		if len(got) != 1 || got[0] != tc.status {
			t.Errorf("%d keys: %v, want %s", tc.keys, got, tc.status)
		}
		if len(d.AuditAnnotations) != 1 || d.AuditAnnotations[0].Key != "limits/keys" || d.AuditAnnotations[0].Value != tc.want {
			t.Errorf("%d keys: audit annotations %+v, want limits/keys=%s", tc.keys, d.AuditAnnotations, tc.want)
		}
	}
	if got, _ := eval(snapshot(t, policy("1")), 1); len(got) != 1 || got[0] != "error" {
		t.Errorf("a value that is not a string: %v", got)
	}
	if _, err := compileErr(t, strings.Replace(policy("'x'"), "key: keys", "key: 'bad key'", 1)); err == nil || !strings.Contains(err.Error(), "spec.rules[0].validate.cel.auditAnnotations[0].key") {
		t.Errorf("a bad key: %v", err)
	}
}

// limitsAsked is a KindReader that records the limit of each list.
type limitsAsked struct {
	kindObjects
	limits []int
}

func (l *limitsAsked) ListKind(ctx context.Context, apiVersion, kind, ns, selector string, limit int) ([]map[string]any, error) {
	l.limits = append(l.limits, limit)
	return l.kindObjects.ListKind(ctx, apiVersion, kind, ns, selector, limit)
}

// TestCELParamsBound: a selector picking more params than the bound is
// the rule's error, and the reader is asked for one more than the bound
// (never for every object it holds).
func TestCELParamsBound(t *testing.T) {
	objs := &limitsAsked{kindObjects: kindObjects{}}
	for i := range 150 {
		objs.kindObjects[fmt.Sprintf("v1/ConfigMap team-a/p%03d", i)] = limit("team-a", fmt.Sprintf("p%03d", i), "2", map[string]any{"limits": "many"}, "")
	}
	snap := snapshot(t, strings.NewReplacer("KIND", "ClusterPolicy", "PARAMREF", "{selector: {matchLabels: {limits: many}}, parameterNotFoundAction: Deny}").Replace(paramsPolicy))
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "team-a"}}
	d, err := engine.New(engine.Options{Kinds: objs}).Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team-a", Object: obj})
	if err != nil && d == nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range d.Trace {
		for _, r := range kyverno.ResultsOf(tr.Detail) {
			got = append(got, string(r.Status)+": "+r.Message)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "more than 100 ConfigMap objects selected as params") {
		t.Errorf("results %q", got)
	}
	if len(objs.limits) != 1 || objs.limits[0] != 101 {
		t.Errorf("limits asked %v, want [101]", objs.limits)
	}
}
