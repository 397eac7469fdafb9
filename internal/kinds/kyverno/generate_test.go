package kyverno_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// kindObjects is a KindReader over objects keyed "apiVersion/Kind ns/name".
type kindObjects map[string]map[string]any

func (k kindObjects) GetKind(_ context.Context, apiVersion, kind, ns, name string) (map[string]any, error) {
	return k[apiVersion+"/"+kind+" "+ns+"/"+name], nil
}

func (k kindObjects) ListKind(_ context.Context, apiVersion, kind, ns, selector string, limit int) ([]map[string]any, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for key, o := range k {
		if prefix := apiVersion + "/" + kind + " " + ns + "/"; ns == "" && !strings.HasPrefix(key, apiVersion+"/"+kind+" ") || ns != "" && !strings.HasPrefix(key, prefix) {
			continue // ns "": every namespace's
		}
		md, _ := o["metadata"].(map[string]any)
		ls := labels.Set{}
		lm, _ := md["labels"].(map[string]any)
		for k, v := range lm {
			ls[k], _ = v.(string)
		}
		if sel.Matches(ls) && (limit <= 0 || len(out) < limit) {
			out = append(out, o)
		}
	}
	return out, nil
}

var _ engine.KindReader = kindObjects(nil)

const generatePolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: defaults}
spec:
  rules:
  - name: quota
    match: {any: [{resources: {kinds: [Namespace], operations: [CREATE]}}]}
    generate:
      apiVersion: v1
      kind: ResourceQuota
      name: "{{ request.object.metadata.name }}-quota"
      namespace: "{{ request.object.metadata.name }}"
      synchronize: true
      data:
        metadata: {labels: {team: "{{ request.object.metadata.labels.team }}"}}
        spec: {hard: {pods: "10"}}
  - name: copy-secret
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: v1
      kind: Secret
      name: pull
      namespace: "{{ request.object.metadata.name }}"
      clone: {namespace: shared, name: pull}
  - name: copy-configs
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      namespace: "{{ request.object.metadata.name }}"
      cloneList:
        namespace: shared
        kinds: [v1/ConfigMap]
        selector: {matchLabels: {copy: "yes"}}
  - name: per-port
    match: {any: [{resources: {kinds: [Service]}}]}
    generate:
      foreach:
      - list: request.object.spec.ports
        preconditions:
          all: [{key: "{{ element.port }}", operator: GreaterThan, value: 1000}]
        apiVersion: v1
        kind: ConfigMap
        name: "port-{{ element.port }}"
        namespace: "{{ request.object.metadata.namespace }}"
        data: {data: {port: "{{ element.port }}"}}
`

func sharedObjects() kindObjects {
	return kindObjects{
		"v1/Secret shared/pull": {"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "pull", "namespace": "shared", "uid": "u1", "resourceVersion": "7"},
			"data":     map[string]any{"k": "dg=="}},
		"v1/ConfigMap shared/a": {"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "namespace": "shared", "labels": map[string]any{"copy": "yes"}}, "data": map[string]any{"x": "1"}},
		"v1/ConfigMap shared/b": {"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "b", "namespace": "shared"}, "data": map[string]any{"x": "2"}},
	}
}

// generatedNames are the decision's generated objects as
// "rule kind ns/name sync".
func generatedNames(d *engine.Decision) []string {
	var out []string
	for _, g := range d.Generated {
		md, _ := g.Object["metadata"].(map[string]any)
		sync := ""
		if g.Synchronize {
			sync = " sync"
		}
		out = append(out, g.Name+" "+g.Object["kind"].(string)+" "+md["namespace"].(string)+"/"+md["name"].(string)+sync)
	}
	return out
}

// TestGenerate: Kyverno's generate rules: data with variables, clone,
// cloneList with a selector, foreach with preconditions; the objects carry
// Kyverno's labels; none on DELETE or in a background scan.
func TestGenerate(t *testing.T) {
	snap := snapshot(t, generatePolicy)
	eng := engine.New(engine.Options{Kinds: sharedObjects()})
	eval := func(op rules.Operation, ns, obj string, background bool) *engine.Decision {
		t.Helper()
		o := manifests(t, obj)[0].Object
		req := engine.Request{Operation: op, Namespace: ns, Object: o, Background: background}
		if op != rules.Create {
			req.OldObject = o
		}
		d, err := eng.Evaluate(context.Background(), snap, req)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := eval(rules.Create, "", `{apiVersion: v1, kind: Namespace, metadata: {name: team-a, uid: u9, labels: {team: a}}}`, false)
	want := []string{"quota ResourceQuota team-a/team-a-quota sync", "copy-secret Secret team-a/pull", "copy-configs ConfigMap team-a/a"}
	if diff := cmp.Diff(want, generatedNames(d)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	quota := d.Generated[0].Object
	wantQuota := map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": "team-a-quota", "namespace": "team-a", "labels": map[string]any{
			"team": "a", "app.kubernetes.io/managed-by": "kyverno",
			"generate.kyverno.io/policy-name": "defaults", "generate.kyverno.io/policy-namespace": "", "generate.kyverno.io/rule-name": "quota",
			"generate.kyverno.io/trigger-group": "", "generate.kyverno.io/trigger-version": "v1", "generate.kyverno.io/trigger-kind": "Namespace",
			"generate.kyverno.io/trigger-namespace": "", "generate.kyverno.io/trigger-uid": "u9"}},
		"spec": map[string]any{"hard": map[string]any{"pods": "10"}}}
	if diff := cmp.Diff(wantQuota, quota); diff != "" {
		t.Errorf("generated quota (-want +got):\n%s", diff)
	}
	secret := d.Generated[1].Object
	smd := secret["metadata"].(map[string]any)
	if smd["uid"] != nil || smd["resourceVersion"] != nil || secret["data"].(map[string]any)["k"] != "dg==" {
		t.Errorf("a clone keeps the data and drops what the API server owns: %v", secret)
	}
	if _, ok := smd["labels"].(map[string]any)["generate.kyverno.io/clone-source"]; !ok {
		t.Errorf("a clone is marked as one: %v", smd["labels"])
	}
	var res []string
	for _, tr := range d.Trace {
		for _, r := range kyverno.ResultsOf(tr.Detail) {
			res = append(res, r.Rule+"="+string(r.Status))
		}
	}
	if diff := cmp.Diff([]string{"quota=pass", "copy-secret=pass", "copy-configs=pass"}, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}

	d = eval(rules.Create, "web", `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: web}, spec: {ports: [{port: 80}, {port: 8080}, {port: 9090}]}}`, false)
	if diff := cmp.Diff([]string{"per-port ConfigMap web/port-8080", "per-port ConfigMap web/port-9090"}, generatedNames(d)); diff != "" {
		t.Errorf("foreach (-want +got):\n%s", diff)
	}
	// A background scan generates nothing; a DELETE gives no result, and
	// the synchronized objects that go with the trigger (the quota rule
	// names CREATE alone: its objects go with the trigger all the same).
	d = eval(rules.Create, "", `{apiVersion: v1, kind: Namespace, metadata: {name: team-a, labels: {team: a}}}`, true)
	if len(d.Generated) != 0 {
		t.Errorf("background: generated %v", generatedNames(d))
	}
	d = eval(rules.Delete, "", `{apiVersion: v1, kind: Namespace, metadata: {name: team-a, labels: {team: a}}}`, false)
	if diff := cmp.Diff([]string{"quota ResourceQuota team-a/team-a-quota sync"}, generatedNames(d)); diff != "" {
		t.Errorf("DELETE (-want +got):\n%s", diff)
	}
	for _, tr := range d.Trace {
		if rs := kyverno.ResultsOf(tr.Detail); len(rs) != 0 {
			t.Errorf("DELETE: results %v, want none (as Kyverno)", rs)
		}
	}
}

// TestGenerateConfined: a namespaced Policy generates in its namespace
// only and clones from it only, as its rule reader could read.
func TestGenerateConfined(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: p, namespace: team-a}
spec:
  rules:
  - name: copy
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    generate:
      apiVersion: v1
      kind: Secret
      name: pull
      namespace: "{{ request.object.data.to }}"
      clone: {namespace: "{{ request.object.data.from }}", name: pull}
`)
	objs := sharedObjects()
	objs["v1/Secret team-a/pull"] = map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "pull", "namespace": "team-a"}}
	eng := engine.New(engine.Options{Kinds: objs, Authorizer: denyOtherNamespaces{}, RuleReader: "reader"})
	for _, tc := range []struct{ from, to, want string }{
		{"team-a", "team-a", ""}, // a copy of itself: nothing, as Kyverno
		{"shared", "team-a", "clones only from its own namespace"},
		{"team-a", "team-b", "may generate only in its own namespace"},
	} {
		o := manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: team-a}, data: {from: `+tc.from+`, to: `+tc.to+`}}`)[0].Object
		d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team-a", Object: o})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range d.Trace {
			for _, r := range kyverno.ResultsOf(tr.Detail) {
				got = append(got, string(r.Status)+": "+r.Message)
			}
		}
		if tc.want == "" {
			if len(got) != 1 || got[0] != "pass: " || len(d.Generated) != 0 {
				t.Errorf("%s -> %s: %v, generated %v", tc.from, tc.to, got, generatedNames(d))
			}
			continue
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], "error") || !strings.Contains(got[0], tc.want) || len(d.Generated) != 0 {
			t.Errorf("%s -> %s: %v (generated %v), want an error saying %q", tc.from, tc.to, got, generatedNames(d), tc.want)
		}
	}
}

// TestGenerateErrors: a generate that cannot work is an error when the
// policy loads, at its field.
func TestGenerateErrors(t *testing.T) {
	for _, tc := range []struct{ generate, field string }{
		{`{apiVersion: v1, kind: ConfigMap, name: a, data: {}, clone: {name: b}}`, "spec.rules[0].generate: only one of data, clone or cloneList"},
		{`{apiVersion: v1, kind: ConfigMap, name: a}`, "spec.rules[0].generate: a generate needs data, clone or cloneList"},
		{`{apiVersion: v1, name: a, data: {}}`, "spec.rules[0].generate.kind"},
		{`{apiVersion: v1, kind: ConfigMap, data: {}}`, "spec.rules[0].generate.name"},
		{`{cloneList: {kinds: [ConfigMap]}}`, "spec.rules[0].generate.cloneList.kinds[0]"},
		{`{apiVersion: v1, kind: ConfigMap, name: a, data: {}, foreach: [{list: x}]}`, "not both"},
		{`{apiVersion: v1, kind: ConfigMap, name: "{{ bad( }}", data: {}}`, "spec.rules[0].generate"},
		{`{apiVersion: v1, kind: ConfigMap, name: a, data: {}, unknown: 1}`, "unknown"},
	} {
		_, err := compileErr(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: broken}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate: `+tc.generate)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one saying %s", tc.generate, err, tc.field)
		}
	}
}

const gpolTeam = `
apiVersion: policies.kyverno.io/v1
kind: KIND
metadata: {name: team, namespace: team-a}
spec:
  evaluation: {synchronize: {enabled: true}}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  matchConditions:
  - {name: wanted, expression: "object.metadata.?labels.generate.orValue('') == 'yes'"}
  generate:
  - expression: >-
      generator.Apply(object.data.to, [{"apiVersion": dyn("v1"), "kind": dyn("Secret"),
        "metadata": dyn({"name": object.metadata.name + "-copy"}), "data": dyn(object.data)}])
`

// TestGeneratingPolicy: generator.Apply places the objects in the
// namespace given, with Kyverno's labels; a match condition that does not
// hold is a skip; a namespaced policy generates in its namespace only; a
// DELETE gives the synchronized objects and no result.
func TestGeneratingPolicy(t *testing.T) {
	eval := func(snap *engine.Snapshot, op rules.Operation, to, labels string) ([]string, *engine.Decision) {
		t.Helper()
		return results(t, snap, op, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: team-a, uid: u7, labels: {`+labels+`}}, data: {to: `+to+`}}`)
	}
	snap := snapshot(t, strings.Replace(gpolTeam, "KIND", "GeneratingPolicy", 1))
	got, d := eval(snap, rules.Create, "team-b", "generate: 'yes'")
	if diff := cmp.Diff([]string{"=pass"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{" Secret team-b/web-copy sync"}, generatedNames(d)); diff != "" {
		t.Fatalf("generated (-want +got):\n%s", diff)
	}
	ls := d.Generated[0].Object["metadata"].(map[string]any)["labels"].(map[string]any)
	if ls["generate.kyverno.io/policy-name"] != "team" || ls["generate.kyverno.io/trigger-name"] != "web" || ls["generate.kyverno.io/trigger-uid"] != "u7" {
		t.Errorf("labels %v", ls)
	}
	if got, d = eval(snap, rules.Create, "team-b", ""); !cmp.Equal([]string{"=skip"}, got) || len(d.Generated) != 0 {
		t.Errorf("a match condition that does not hold: %v, generated %v", got, generatedNames(d))
	}
	if got, d = eval(snap, rules.Delete, "team-b", "generate: 'yes'"); len(got) != 0 || !cmp.Equal([]string{" Secret team-b/web-copy sync"}, generatedNames(d)) {
		t.Errorf("DELETE: results %v, generated %v", got, generatedNames(d))
	}

	nsnap := snapshot(t, strings.Replace(gpolTeam, "KIND", "NamespacedGeneratingPolicy", 1))
	got, d = eval(nsnap, rules.Create, "team-b", "generate: 'yes'")
	if len(got) != 1 || got[0] != "=error" || len(d.Generated) != 0 {
		t.Errorf("a namespaced policy generating elsewhere: %v, generated %v", got, generatedNames(d))
	}
	if got, d = eval(nsnap, rules.Create, "team-a", "generate: 'yes'"); !cmp.Equal([]string{"=pass"}, got) || len(d.Rejections) != 0 || len(d.Generated) != 1 {
		t.Errorf("in its own namespace: %v, generated %v", got, generatedNames(d))
	}
}

// TestGeneratingPolicyErrors: what cannot work is an error when the policy
// loads; a template is not evaluated yet (an error result, never a pass).
func TestGeneratingPolicyErrors(t *testing.T) {
	for _, tc := range []struct{ generate, want string }{
		{`[{expression: "generator.Apply('x', [1])"}]`, "spec.generate[0].expression"},
		{`[{expression: "generator.Nope()"}]`, "spec.generate[0].expression"},
		{`[]`, "spec.generate"},
		{`[{}]`, "spec.generate[0].expression"},
	} {
		_, err := compileErr(t, `
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: broken}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}]
  generate: `+tc.generate)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one at %s", tc.generate, err, tc.want)
		}
	}
	snap := snapshot(t, `
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: templated}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}]
  generate:
  - template: {value: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: a}"}
`)
	got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: Namespace, metadata: {name: a}}`)
	if len(got) != 1 || got[0] != "=pass" || len(d.Generated) != 1 || len(d.Rejections) != 0 {
		t.Errorf("a template: %v, generated %v (rejections %v)", got, d.Generated, d.Rejections)
	}
}

const mutateExistingPolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: stamp}
spec:
  rules:
  - name: stamp-settings
    match: {any: [{resources: {kinds: [ConfigMap], names: [trigger]}}]}
    mutate:
      targets:
      - apiVersion: v1
        kind: ConfigMap
        namespace: "{{ request.object.metadata.namespace }}"
        selector: {matchLabels: {stamp: "yes"}}
        preconditions:
          all: [{key: "{{ target.metadata.name }}", operator: NotEquals, value: frozen}]
      patchStrategicMerge:
        metadata:
          labels: {stamped-by: "{{ request.object.metadata.name }}", was: "{{ target.metadata.name }}"}
`

// TestMutateExisting: a mutate with targets patches the existing objects
// it picks (selector, preconditions with the target), not the object
// admitted; each target's change goes to the engine as a patch testing the
// resourceVersion read; one result per target.
func TestMutateExisting(t *testing.T) {
	snap := snapshot(t, mutateExistingPolicy)
	cm := func(name, labels string) map[string]any {
		return manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: `+name+`, namespace: team, resourceVersion: "7", labels: {`+labels+`}}}`)[0].Object
	}
	objs := kindObjects{"v1/ConfigMap team/a": cm("a", "stamp: 'yes'"), "v1/ConfigMap team/frozen": cm("frozen", "stamp: 'yes'"), "v1/ConfigMap team/b": cm("b", "")}
	eng := engine.New(engine.Options{Kinds: objs})
	trigger := manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: trigger, namespace: team}}`)[0].Object
	d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team", Object: trigger})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range d.Trace {
		for _, r := range kyverno.ResultsOf(tr.Detail) {
			got = append(got, r.Target+"="+string(r.Status))
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"ConfigMap team/a=pass", "ConfigMap team/frozen=skip"}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if len(d.Patch) != 0 {
		t.Errorf("the trigger was patched: %v", d.Patch)
	}
	if len(d.Generated) != 1 || d.Generated[0].Patch == nil {
		t.Fatalf("changes %+v", d.Generated)
	}
	ops, _ := json.Marshal(d.Generated[0].Patch)
	want := `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/labels/stamped-by","value":"trigger"},{"op":"add","path":"/metadata/labels/was","value":"a"}]`
	if string(ops) != want {
		t.Errorf("patch %s\nwant  %s", ops, want)
	}
	if objs["v1/ConfigMap team/a"]["metadata"].(map[string]any)["labels"].(map[string]any)["stamped-by"] != nil {
		t.Error("the target as read was changed")
	}
	// No target: no result, as Kyverno.
	d, err = engine.New(engine.Options{Kinds: kindObjects{}}).Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team", Object: trigger})
	if err != nil || len(d.Trace) != 1 || len(kyverno.ResultsOf(d.Trace[0].Detail)) != 0 {
		t.Errorf("no target: %v %+v", err, d.Trace)
	}
}

// TestVPolAuditAnnotations: a ValidatingPolicy's audit annotations are
// evaluated after its validations (a null or empty value left out), go to
// the request's audit event keyed "policy/key" and into the result's
// properties; a value that is not a string is the policy's error; a key
// that is no qualified name is an error when the policy loads.
func TestVPolAuditAnnotations(t *testing.T) {
	policy := func(value string) string {
		return `
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: team}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations: [{expression: "has(object.metadata.labels)"}]
  auditAnnotations:
  - {key: owner, valueExpression: "` + value + `"}
  - {key: empty, valueExpression: "null"}
`
	}
	snap := snapshot(t, policy("object.metadata.?labels.team.orValue('none')"))
	for _, tc := range []struct{ labels, status, owner string }{{"{team: a}", "pass", "a"}, {"null", "fail", "none"}} {
		got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: `+tc.labels+`}}`)
		if !cmp.Equal([]string{"=" + tc.status}, got) {
			t.Errorf("%s: %v", tc.labels, got)
		}
		if len(d.AuditAnnotations) != 1 || d.AuditAnnotations[0].Key != "team/owner" || d.AuditAnnotations[0].Value != tc.owner {
			t.Errorf("%s: audit annotations %+v", tc.labels, d.AuditAnnotations)
		}
		if rs := kyverno.ResultsOf(d.Trace[0].Detail); len(rs) != 1 || rs[0].Properties["owner"] != tc.owner {
			t.Errorf("%s: properties %+v", tc.labels, rs)
		}
	}
	snap = snapshot(t, policy("1"))
	if got, _ := results(t, snap, rules.Create, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {a: b}}}`); !cmp.Equal([]string{"=error"}, got) {
		t.Errorf("a value that is not a string: %v", got)
	}
	if _, err := compileErr(t, strings.Replace(policy("'x'"), "key: owner", "key: 'bad key'", 1)); err == nil || !strings.Contains(err.Error(), "spec.auditAnnotations[0].key") {
		t.Errorf("a bad key: %v", err)
	}
}

// TestCELPolicyAuditAnnotations: a MutatingPolicy's and a
// GeneratingPolicy's audit annotations, as a ValidatingPolicy's.
func TestCELPolicyAuditAnnotations(t *testing.T) {
	for _, tc := range []struct{ kind, body string }{
		{"MutatingPolicy", `mutations: [{patchType: ApplyConfiguration, applyConfiguration: {expression: "Object{metadata: Object.metadata{labels: {'seen': 'yes'}}}"}}]`},
		{"GeneratingPolicy", `generate: [{expression: "generator.Apply('team', [{'apiVersion': dyn('v1'), 'kind': dyn('ConfigMap'), 'metadata': dyn({'name': 'x'})}])"}]`},
	} {
		snap := snapshot(t, `
apiVersion: policies.kyverno.io/v1
kind: `+tc.kind+`
metadata: {name: p}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  auditAnnotations: [{key: name, valueExpression: "object.metadata.name"}]
  `+tc.body)
		got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`)
		if !cmp.Equal([]string{"=pass"}, got) || len(d.AuditAnnotations) != 1 || d.AuditAnnotations[0].Key != "p/name" || d.AuditAnnotations[0].Value != "c" {
			t.Errorf("%s: %v, audit annotations %+v", tc.kind, got, d.AuditAnnotations)
		}
	}
}

// TestExistingRules: the rules that act on existing objects, as the
// engine's RuleInfo.Existing names them: generateExisting (the rule's,
// else the policy's), mutateExistingOnPolicyUpdate on a mutate of
// existing objects (the rule's, else the policy's); a GeneratingPolicy's
// evaluation.generateExisting.
func TestExistingRules(t *testing.T) {
	gen := func(name, flag string) string {
		return `
  - name: ` + name + `
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      ` + flag + `
      apiVersion: v1
      kind: ConfigMap
      name: x
      namespace: "{{ request.object.metadata.name }}"
      data: {data: {a: b}}`
	}
	mut := func(name, flag string) string {
		return `
  - name: ` + name + `
    match: {any: [{resources: {kinds: [Namespace]}}]}
    mutate:
      ` + flag + `
      targets: [{apiVersion: v1, kind: ConfigMap, name: s, namespace: "{{ request.object.metadata.name }}"}]
      patchStrategicMerge: {metadata: {labels: {a: b}}}`
	}
	for _, tc := range []struct {
		name, specFlags, rules string
		want                   []string
	}{
		{"by rule", "", gen("g1", "generateExisting: true") + gen("g2", "") + mut("m1", "mutateExistingOnPolicyUpdate: true") + mut("m2", ""), []string{"g1", "m1"}},
		{"by policy", "generateExisting: true\n  mutateExistingOnPolicyUpdate: true", gen("g1", "") + gen("g2", "generateExisting: false") + mut("m1", ""), []string{"g1", "m1"}},
		{"former name", "generateExistingOnPolicyUpdate: true", gen("g1", ""), []string{"g1"}},
		{"none", "", gen("g1", "") + mut("m1", ""), nil},
	} {
		snap := snapshot(t, "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec:\n  "+tc.specFlags+"\n  rules:"+tc.rules+"\n")
		if got := snap.Rules()[0].Info().Existing; !slices.Equal(got, tc.want) {
			t.Errorf("%s: Existing %v, want %v", tc.name, got, tc.want)
		}
	}
	down := snapshot(t, "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec:\n  rules:"+
		gen("synced", "synchronize: true")+gen("orphaned", "synchronize: true\n      orphanDownstreamOnPolicyDelete: true")+gen("once", "")+"\n")
	if got := down.Rules()[0].Info().Generates; !slices.Equal(got, []string{"synced", "orphaned", "once"}) {
		t.Errorf("Generates %v, want every generate rule", got)
	}
	if got := down.Rules()[0].Info().Downstream; !slices.Equal(got, []string{"synced"}) {
		t.Errorf("Downstream %v, want the synchronized rule not orphaning its objects", got)
	}
	gp := snapshot(t, `
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: g}
spec:
  evaluation: {generateExisting: {enabled: true}}
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}]
  generate:
  - expression: "generator.Apply(object.metadata.name, [{'apiVersion': dyn('v1'), 'kind': dyn('ConfigMap'), 'metadata': dyn({'name': 'x'})}])"
`)
	if got := gp.Rules()[0].Info().Existing; !slices.Equal(got, []string{""}) {
		t.Errorf("GeneratingPolicy: Existing %v", got)
	}
}

// TestGeneratingPolicyTemplateErrors: a template that cannot work is an
// error when the policy loads, naming the line.
func TestGeneratingPolicyTemplateErrors(t *testing.T) {
	for _, tc := range []struct{ tmpl, want string }{
		{"interpolate: cel\n      value: 'a: [b'", "the template is not YAML"},
		{"interpolate: cel\n      value: '[1, 2]'", "a document is an object to generate"},
		{"interpolate: cel\n      value: '---'", "at least one document"},
		{"interpolate: cel\n      value: '{\"((k))\": v}'", "placeholders are not allowed in keys"},
		{"interpolate: cel\n      value: 'a: (( object.metadata.name '", "no closing"},
		{"interpolate: cel\n      value: 'a: (( undefined.x ))'", "undeclared reference"},
		{"interpolate: jinja\n      value: 'a: b'", "spec.generate[0].template.interpolate"},
		// Aliases where placeholders are: refused (followed, nested ones
		// would grow the compiled template exponentially).
		{"interpolate: cel\n      value: \"a: &a ['(( 1 ))', '(( 2 ))']\\nb: &b [*a, *a]\\nc: [*b, *b]\"", "YAML aliases are not allowed where placeholders are"},
	} {
		_, err := compileErr(t, `
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: t}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}]
  generate:
  - template:
      `+tc.tmpl+`
`)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %s", tc.tmpl, err, tc.want)
		}
	}
}

// TestGeneratingPolicyTemplate: without interpolation a template is YAML
// as written ((( )) included); a placeholder within a string that gives a
// structure is the policy's error.
func TestGeneratingPolicyTemplate(t *testing.T) {
	policy := func(tmpl string) string {
		return `
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: t}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}]
  generate:
  - template:
      ` + tmpl + `
`
	}
	ns := `{apiVersion: v1, kind: Namespace, metadata: {name: team, labels: {a: b}}}`
	snap := snapshot(t, policy("value: |\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: c, namespace: team}\n        data: {x: '(( object.metadata.name ))', n: '1'}"))
	_, d := results(t, snap, rules.Create, ns)
	if len(d.Generated) != 1 || d.Generated[0].Object["data"].(map[string]any)["x"] != "(( object.metadata.name ))" {
		t.Errorf("a template without interpolation: %+v", d.Generated)
	}
	snap = snapshot(t, policy("interpolate: cel\n      value: |\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: c, namespace: team}\n        data: {x: 'labels: (( object.metadata.labels ))'}"))
	got, _ := results(t, snap, rules.Create, ns)
	if len(got) != 1 || !strings.HasSuffix(got[0], "=error") {
		t.Errorf("a structure within a string: %v", got)
	}
}

const mpolExisting = `
apiVersion: policies.kyverno.io/v1
kind: KIND
metadata: {name: restart, namespace: team}
spec:
  evaluation: {admission: {enabled: ADMISSION}, mutateExisting: {enabled: true}}
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  matchConditions:
  - {name: trigger, expression: "object.metadata.name.startsWith('restart-')"}
  targetMatchConditions:
  - {name: not-frozen, expression: "object.metadata.name != 'frozen'"}
  targetMatchConstraints:
    objectSelector: {matchLabels: {app: web}}
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [deployments]}]
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'restarted': 'yes'}}]"}
`

// TestMutatingPolicyExisting: an admitted trigger mutates the objects of
// targetMatchConstraints (those its targetMatchConditions hold for), each
// changed by the difference with its resourceVersion tested; a namespaced
// policy's targets are in its namespace; off at admission, the trigger
// itself is left alone.
func TestMutatingPolicyExisting(t *testing.T) {
	deploy := func(ns, name, app string) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": ns,
			"labels": map[string]any{"app": app}, "resourceVersion": "7"}}
	}
	objs := kindObjects{
		"apps/v1/Deployment team/web":    deploy("team", "web", "web"),
		"apps/v1/Deployment team/db":     deploy("team", "db", "db"),
		"apps/v1/Deployment team/frozen": deploy("team", "frozen", "web"),
		"apps/v1/Deployment other/web":   deploy("other", "web", "web"),
	}
	eng := engine.New(engine.Options{Kinds: objs, Authorizer: denyOtherNamespaces{}, RuleReader: "reader"})
	trigger := manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: restart-now, namespace: team}}`)[0].Object
	for _, tc := range []struct {
		kind, admission string
		changed         []string
	}{
		{"MutatingPolicy", "false", []string{"Deployment other/web", "Deployment team/web"}},
		{"NamespacedMutatingPolicy", "false", []string{"Deployment team/web"}},
		{"MutatingPolicy", "true", []string{"Deployment other/web", "Deployment team/web"}}, // the trigger patched too
	} {
		snap := snapshot(t, strings.NewReplacer("KIND", tc.kind, "ADMISSION", tc.admission).Replace(mpolExisting))
		d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team", Object: trigger})
		if err != nil {
			t.Fatal(err)
		}
		var changed []string
		for _, g := range d.Generated {
			if len(g.Patch) == 0 || g.Patch[0].Op != patch.Test {
				t.Errorf("%s: a change without its resourceVersion tested: %+v", tc.kind, g.Patch)
			}
			changed = append(changed, kyverno.TargetName(g.Object))
		}
		slices.Sort(changed)
		if !slices.Equal(changed, tc.changed) || (len(d.Patch) != 0) != (tc.admission == "true") {
			t.Errorf("%s, admission %s: changed %v (trigger patched: %v), want %v", tc.kind, tc.admission, changed, d.Patch, tc.changed)
		}
	}
	// A namespace selector: the targets of the namespaces it picks.
	objs["v1/Namespace /team"] = map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team", "labels": map[string]any{"env": "prod"}}}
	objs["v1/Namespace /other"] = map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "other"}}
	snapSel := snapshot(t, strings.Replace(strings.NewReplacer("KIND", "MutatingPolicy", "ADMISSION", "false").Replace(mpolExisting),
		"    objectSelector:", "    namespaceSelector: {matchLabels: {env: prod}}\n    objectSelector:", 1))
	d, err := eng.Evaluate(context.Background(), snapSel, engine.Request{Operation: rules.Create, Namespace: "team", Object: trigger})
	if err != nil || len(d.Generated) != 1 || kyverno.TargetName(d.Generated[0].Object) != "Deployment team/web" {
		t.Errorf("a namespace selector: %v, %v", d.Generated, err)
	}
	// Targets that cannot be listed: an error, and the trigger is not
	// refused (the work is after admission).
	snapNS := snapshot(t, strings.NewReplacer("KIND", "MutatingPolicy", "ADMISSION", "false").Replace(mpolExisting))
	failing := engine.New(engine.Options{Kinds: failingKinds{}})
	if d, err := failing.Evaluate(context.Background(), snapNS, engine.Request{Operation: rules.Create, Namespace: "team", Object: trigger}); err != nil || len(d.Rejections) != 0 || len(d.Errors) != 1 {
		t.Errorf("targets that cannot be listed: rejections %v, errors %v, %v", d.Rejections, d.Errors, err)
	}
	// Another trigger: nothing.
	snap := snapshot(t, strings.NewReplacer("KIND", "MutatingPolicy", "ADMISSION", "false").Replace(mpolExisting))
	other := manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: team}}`)[0].Object
	if d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team", Object: other}); err != nil || len(d.Generated) != 0 {
		t.Errorf("a ConfigMap that is no trigger: %v, %v", d.Generated, err)
	}
	for _, tc := range []struct{ spec, want string }{
		{"targetMatchConstraints: {expression: \"resource.List(\"}", "spec.targetMatchConstraints.expression"},
		{"targetMatchConstraints: {resourceRules: [{apiGroups: ['*'], apiVersions: [v1], operations: [UPDATE], resources: [deployments]}]}", "spec.targetMatchConstraints.resourceRules[0]"},
	} {
		policy := strings.Replace(strings.NewReplacer("KIND", "MutatingPolicy", "ADMISSION", "true").Replace(mpolExisting),
			"  targetMatchConstraints:\n    objectSelector: {matchLabels: {app: web}}\n    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [deployments]}]\n", "  "+tc.spec+"\n", 1)
		if _, err := compileErr(t, policy); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one at %s", tc.spec, err, tc.want)
		}
	}
}

// failingKinds is a KindReader whose reads fail.
type failingKinds struct{}

func (failingKinds) GetKind(context.Context, string, string, string, string) (map[string]any, error) {
	return nil, errors.New("the API server is away")
}

func (failingKinds) ListKind(context.Context, string, string, string, string, int) ([]map[string]any, error) {
	return nil, errors.New("the API server is away")
}

// TestMutatingPolicyTargetExpression: targetMatchConstraints.expression
// selects the targets over the trigger (its variables bound): a list's
// items or one object, read with Kyverno's resource library; what is no
// object is the policy's error; a namespaced policy's targets stay in its
// namespace.
func TestMutatingPolicyTargetExpression(t *testing.T) {
	policy := func(kind, expr string) string {
		return strings.Replace(strings.NewReplacer("KIND", kind, "ADMISSION", "false").Replace(mpolExisting),
			"  targetMatchConstraints:\n    objectSelector: {matchLabels: {app: web}}\n    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [deployments]}]\n",
			"  variables:\n  - {name: app, expression: \"object.metadata.name.substring(8)\"}\n  targetMatchConstraints:\n    expression: "+strconv.Quote(expr)+"\n", 1)
	}
	api := &listAPI{items: `[{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team", "resourceVersion": "3"}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "frozen", "namespace": "team"}}]`}
	stored := kindObjects{
		"apps/v1/Deployment team/web":    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "team", "resourceVersion": "3"}},
		"apps/v1/Deployment team/frozen": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "frozen", "namespace": "team"}},
		"v1/ConfigMap team/settings": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": "team",
			"labels": map[string]any{"stored": "yes"}}},
	}
	eng := engine.New(engine.Options{API: api, Kinds: stored})
	trigger := manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: restart-web, namespace: team}}`)[0].Object
	for _, tc := range []struct {
		name, kind, expr string
		changed          []string
		err              string
	}{
		{"list", "MutatingPolicy", "resource.List('apps/v1', 'deployments', object.metadata.namespace, {'app': variables.app})", []string{"Deployment team/web"}, ""},
		{"one object", "MutatingPolicy", "{'apiVersion': dyn('v1'), 'kind': dyn('ConfigMap'), 'metadata': dyn({'name': 'settings', 'namespace': 'team'})}", []string{"ConfigMap team/settings"}, ""},
		{"namespaced", "NamespacedMutatingPolicy", "resource.List(resource.ToGVR('apps/v1', 'Deployment'), {'app': variables.app})", []string{"Deployment team/web"}, ""},
		{"outside the namespace", "NamespacedMutatingPolicy", "{'apiVersion': dyn('v1'), 'kind': dyn('ConfigMap'), 'metadata': dyn({'name': 'settings', 'namespace': 'other'})}", nil, "outside the policy's namespace team"},
		{"not an object", "MutatingPolicy", "{'items': [1]}", nil, "item 0 is a number, not an object"},
		{"no kind", "MutatingPolicy", "{'metadata': {'name': 'x'}}", nil, "item 0 is no object"},
		// What the expression makes is not what is mutated: the stored object is.
		{"absent", "MutatingPolicy", "{'apiVersion': dyn('v1'), 'kind': dyn('ConfigMap'), 'metadata': dyn({'name': 'ghost', 'namespace': 'team'})}", nil, "ConfigMap team/ghost does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api.calls = nil
			snap := snapshot(t, policy(tc.kind, tc.expr))
			d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team", Object: trigger})
			if err != nil {
				t.Fatal(err)
			}
			var changed []string
			for _, g := range d.Generated {
				changed = append(changed, kyverno.TargetName(g.Object))
			}
			if !slices.Equal(changed, tc.changed) {
				t.Errorf("changed %v, want %v", changed, tc.changed)
			}
			if tc.err != "" && (len(d.Errors) != 1 || !strings.Contains(d.Errors[0].Error(), tc.err)) {
				t.Errorf("errors %v, want one saying %q", d.Errors, tc.err)
			}
			if tc.name == "list" && (len(api.calls) != 1 || api.calls[0].Path != "/apis/apps/v1/namespaces/team/deployments?labelSelector=app%3Dweb") {
				t.Errorf("calls %+v", api.calls)
			}
			if tc.name == "one object" && (len(d.Generated) != 1 || d.Generated[0].Object["metadata"].(map[string]any)["labels"] == nil) {
				t.Errorf("the stored object was not the one mutated: %+v", d.Generated)
			}
		})
	}
}

// listAPI answers every API read with a list of items, and records the
// calls.
type listAPI struct {
	items string
	calls []engine.APICall
}

func (a *listAPI) Call(_ context.Context, c engine.APICall) ([]byte, error) {
	a.calls = append(a.calls, c)
	return []byte(`{"apiVersion": "v1", "kind": "List", "items": ` + a.items + `}`), nil
}

// TestMutatingPolicyExistingTargets: when the policy comes, each existing
// object is evaluated (Request.Existing): one of its targets is mutated,
// trigger or not; another object, or a target its targetMatchConditions
// do not take, is left alone; the operator lists the targets' resources.
func TestMutatingPolicyExistingTargets(t *testing.T) {
	snap := snapshot(t, strings.NewReplacer("KIND", "MutatingPolicy", "ADMISSION", "true").Replace(mpolExisting))
	info := snap.Rules()[0].Info()
	if !slices.Equal(info.Existing, []string{""}) || !slices.Equal(info.ExistingResources, []engine.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "deployments"}}) {
		t.Errorf("existing %q, resources %v", info.Existing, info.ExistingResources)
	}
	eng := engine.New(engine.Options{})
	for _, tc := range []struct {
		obj, resource string
		changed       bool
	}{
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: team, labels: {app: web}}}`, "deployments", true},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: frozen, namespace: team, labels: {app: web}}}`, "deployments", false},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: db, namespace: team, labels: {app: db}}}`, "deployments", false},
		{`{apiVersion: v1, kind: ConfigMap, metadata: {name: restart-now, namespace: team, labels: {app: web}}}`, "configmaps", false},
	} {
		obj := manifests(t, tc.obj)[0].Object
		gv, err := schema.ParseGroupVersion(obj["apiVersion"].(string))
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team", Object: obj,
			Resource: engine.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: tc.resource}, Phases: engine.Validate, Existing: true})
		if err != nil {
			t.Fatal(err)
		}
		if changed := len(d.Generated) == 1 && d.Generated[0].Object["metadata"].(map[string]any)["annotations"] != nil; changed != tc.changed || len(d.Errors) > 0 {
			t.Errorf("%s: generated %+v, errors %v; want changed %v", tc.obj, d.Generated, d.Errors, tc.changed)
		}
	}
}

// TestMutatingPolicyTargetsBound: more targets than a policy mutates is
// its error, and the reader is asked for one more than the bound.
func TestMutatingPolicyTargetsBound(t *testing.T) {
	objs := &limitsAsked{kindObjects: kindObjects{}}
	for i := range 1200 {
		name := fmt.Sprintf("web-%04d", i)
		objs.kindObjects["apps/v1/Deployment team/"+name] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": "team", "labels": map[string]any{"app": "web"}}}
	}
	snap := snapshot(t, strings.NewReplacer("KIND", "MutatingPolicy", "ADMISSION", "false").Replace(mpolExisting))
	trigger := manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: restart-now, namespace: team}}`)[0].Object
	d, err := engine.New(engine.Options{Kinds: objs}).Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team", Object: trigger})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Generated) != 0 || len(d.Errors) != 1 || !strings.Contains(d.Errors[0].Error(), "more than 1000 objects to mutate") {
		t.Errorf("generated %d, errors %v", len(d.Generated), d.Errors)
	}
	if len(objs.limits) != 1 || objs.limits[0] != 1001 {
		t.Errorf("limits asked %v, want [1001]", objs.limits)
	}
}
