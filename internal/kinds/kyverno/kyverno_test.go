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
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

func manifests(t testing.TB, text string) []source.Document {
	t.Helper()
	docs, err := source.ParseManifest("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func snapshot(t testing.TB, policy string, opts ...kyverno.Option) *engine.Snapshot {
	t.Helper()
	res := source.LoadRules(manifests(t, policy), kinds.NewRegistry(append(kyverno.NewKinds(opts...), kyverno.NewCELKinds(opts...)...)...))
	if len(res.Errors) > 0 {
		t.Fatal(errors.Join(res.Errors...))
	}
	for _, r := range res.Rules {
		if err := r.Info().Err; err != nil {
			t.Fatal(err)
		}
	}
	return engine.NewSnapshot(res.Rules)
}

// results evaluates obj and returns "rule=status" for every rule result.
func results(t testing.TB, snap *engine.Snapshot, op rules.Operation, obj string) ([]string, *engine.Decision) {
	t.Helper()
	o := manifests(t, obj)[0].Object
	ns := "default"
	if md, _ := o["metadata"].(map[string]any); md["namespace"] != nil {
		ns, _ = md["namespace"].(string)
	}
	if o["kind"] == "Namespace" {
		ns = ""
	}
	req := engine.Request{Operation: op, Namespace: ns, Object: o}
	switch op {
	case rules.Update:
		req.OldObject = o
	case rules.Delete:
		req.Object, req.OldObject = nil, o
	}
	d, err := engine.New(engine.Options{}).Evaluate(context.Background(), snap, req)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tr := range d.Trace {
		for _, r := range kyverno.ResultsOf(tr.Detail) {
			out = append(out, r.Rule+"="+string(r.Status))
		}
	}
	return out, d
}

const podPolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pods}
spec:
  validationFailureAction: Enforce
  rules:
  - name: labels
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "label team is required"
      pattern: {metadata: {labels: {team: "?*"}}}
  - name: no-host
    match: {resources: {kinds: [Pod], namespaces: ["prod-*"]}}
    validate:
      pattern: {spec: {=(hostNetwork): false}}
  - name: only-sa
    match: {any: [{resources: {kinds: [Pod]}}]}
    exclude: {any: [{resources: {namespaces: ["kube-*"]}}]}
    preconditions:
      all: [{key: "{{ request.object.spec.serviceAccountName || '' }}", operator: NotEquals, value: ""}]
    validate:
      deny:
        conditions:
          any: [{key: "{{ request.object.spec.serviceAccountName }}", operator: Equals, value: default}]
`

func TestRules(t *testing.T) {
	snap := snapshot(t, podPolicy)
	for _, tc := range []struct {
		name, obj string
		want      []string
	}{
		{"passes", `{apiVersion: v1, kind: Pod, metadata: {name: a, labels: {team: x}}, spec: {serviceAccountName: app}}`,
			[]string{"labels=pass", "only-sa=pass"}},
		{"fails and skips", `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {}}`,
			[]string{"labels=fail", "only-sa=skip"}},
		{"deny", `{apiVersion: v1, kind: Pod, metadata: {name: a, labels: {team: x}}, spec: {serviceAccountName: default}}`,
			[]string{"labels=pass", "only-sa=fail"}},
		{"excluded", `{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: kube-system, labels: {team: x}}, spec: {serviceAccountName: default}}`,
			[]string{"labels=pass"}},
		{"autogen", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {metadata: {labels: {team: x}}, spec: {serviceAccountName: default}}}}`,
			[]string{"autogen-labels=pass", "autogen-only-sa=fail"}},
		{"autogen cronjob", `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {template: {metadata: {}, spec: {}}}}}}`,
			[]string{"autogen-cronjob-labels=fail", "autogen-cronjob-only-sa=skip"}},
		{"other kinds", `{apiVersion: v1, kind: Service, metadata: {name: s}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := results(t, snap, rules.Create, tc.obj)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("results (-want +got):\n%s", d)
			}
		})
	}
}

func TestMessagesAndActions(t *testing.T) {
	snap := snapshot(t, podPolicy)
	_, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {}}`)
	if len(d.Rejections) != 1 {
		t.Fatalf("rejections: %+v", d.Rejections)
	}
	want := "labels: validation error: label team is required. rule labels failed at path /metadata/labels/"
	if d.Rejections[0].Message != want {
		t.Errorf("rejection %q, want %q", d.Rejections[0].Message, want)
	}
	audit := snapshot(t, strings.Replace(podPolicy, "Enforce", "Audit", 1))
	_, d = results(t, audit, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {}}`)
	if len(d.Rejections) != 0 || len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0].Message, "rule labels (Audit)") {
		t.Errorf("Audit: rejections %+v, warnings %+v", d.Rejections, d.Warnings)
	}
}

func TestExistingViolations(t *testing.T) {
	snap := snapshot(t, podPolicy)
	got, d := results(t, snap, rules.Update, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {}}`)
	if d := cmp.Diff([]string{"labels=skip", "only-sa=skip"}, got); d != "" {
		t.Errorf("an UPDATE keeping a violation (-want +got):\n%s", d)
	}
	if len(d.Rejections) != 0 {
		t.Errorf("rejections: %+v", d.Rejections)
	}
}

func TestForeachAndCEL(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: images}
spec:
  rules:
  - name: registry
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "images must come from registry.example.com"
      foreach:
      - list: request.object.spec.containers
        pattern: {image: "registry.example.com/*"}
  - name: cel
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      cel:
        variables: [{name: count, expression: "size(object.spec.containers)"}]
        expressions:
        - expression: "variables.count <= 1"
          messageExpression: "'too many containers: ' + string(variables.count)"
`)
	got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: a, image: registry.example.com/a}, {name: b, image: docker.io/b}]}}`)
	if d := cmp.Diff([]string{"registry=fail", "cel=fail"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	msgs := map[string]string{}
	for _, tr := range d.Trace {
		for _, r := range kyverno.ResultsOf(tr.Detail) {
			msgs[r.Rule] = r.Message
		}
	}
	if want := "validation failure: validation error: images must come from registry.example.com. rule registry failed at path /image/"; msgs["registry"] != want {
		t.Errorf("foreach message %q, want %q", msgs["registry"], want)
	}
	if msgs["cel"] != "too many containers: 2" {
		t.Errorf("cel message %q", msgs["cel"])
	}
}

func TestNotYet(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: add-label}
spec:
  rules:
  - name: add
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      manifests:
        attestors: [{entries: [{keys: {publicKeys: "-----BEGIN PUBLIC KEY-----"}}]}]
`)
	got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}}`)
	if d := cmp.Diff([]string{"add=error"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(d.Rejections) != 1 || !strings.Contains(d.Rejections[0].Message, "validate.manifests needs signatures") {
		t.Errorf("a rule not evaluated under failurePolicy Fail must reject: %+v", d.Rejections)
	}
	// Signatures are refused with their reason, never skipped.
	snap = snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: signed}
spec:
  failurePolicy: Ignore
  rules:
  - name: verify
    match: {any: [{resources: {kinds: [Pod]}}]}
    verifyImages:
    - imageReferences: ["ghcr.io/acme/*"]
      attestors: [{entries: [{keys: {publicKeys: "-----BEGIN PUBLIC KEY-----"}}]}]
`)
	got, d = results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}}`)
	if diff := cmp.Diff([]string{"verify=error"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(d.Rejections) != 0 || len(d.Errors) != 1 || !strings.Contains(d.Errors[0].Error(), "need image registries and signatures") {
		t.Errorf("verifyImages under failurePolicy Ignore: rejections %+v, errors %v", d.Rejections, d.Errors)
	}
}

func TestCompileErrors(t *testing.T) {
	res := source.LoadRules(manifests(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: bad}
spec:
  validationFailureAction: Enforce
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}], all: [{resources: {kinds: [Pod]}}]}
    validate:
      pattnern: {a: b}
`), kinds.NewRegistry(kyverno.NewKinds()...))
	var msgs []string
	for _, r := range res.Rules {
		if err := r.Info().Err; err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	for _, e := range res.Errors {
		msgs = append(msgs, e.Error())
	}
	if got := strings.Join(msgs, "\n"); !strings.Contains(got, "pattnern") {
		t.Errorf("a misspelled field must be named: %q", got)
	}
}

func TestValues(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: ops}
spec:
  rules:
  - name: updates
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      deny:
        conditions:
          all: [{key: "{{ limit }}", operator: LessThan, value: 3}]
`, kyverno.WithValues(&kyverno.Values{Policies: []kyverno.PolicyValues{{Name: "ops",
		Resources: []kyverno.ResourceValues{{Name: "a", Values: []kyverno.NameValue{{Name: "limit", Value: 2}}}}}}}))
	got, _ := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}}`)
	if d := cmp.Diff([]string{"updates=fail"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	got, _ = results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: b}}`)
	if d := cmp.Diff([]string{"updates=error"}, got); d != "" {
		t.Errorf("an undefined variable (-want +got):\n%s", d)
	}
}

// TestAutogenOff: a name in a match or exclude turns autogen off for the
// whole policy, as in Kyverno.
func TestAutogenOff(t *testing.T) {
	snap := snapshot(t, strings.Replace(podPolicy, `namespaces: ["kube-*"]`, `names: ["system-*"]`, 1))
	got, _ := results(t, snap, rules.Create, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {metadata: {}, spec: {}}}}`)
	if got != nil {
		t.Errorf("autogen rules ran: %v", got)
	}
	got, _ = results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: system-a, labels: {team: x}}, spec: {serviceAccountName: default}}`)
	if d := cmp.Diff([]string{"labels=pass"}, got); d != "" {
		t.Errorf("excluded by name (-want +got):\n%s", d)
	}
}

func TestPodSecurity(t *testing.T) {
	policy := `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pss}
spec:
  rules:
  - name: baseline
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity: {level: baseline, version: latest}
  - name: baseline-but-nginx
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: baseline
        exclude: [{controlName: Privileged Containers, images: ["nginx*"]}]
  - name: restricted
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity: {level: restricted, version: v1.30}
  - name: restricted-but-nginx-capabilities
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: restricted
        exclude: [{controlName: Capabilities, images: ["nginx*"]}]
`
	snap := snapshot(t, policy)
	for _, tc := range []struct {
		name, obj string
		want      []string
	}{
		{"privileged nginx", `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: a, image: nginx, securityContext: {privileged: true}}]}}`,
			[]string{"baseline=fail", "baseline-but-nginx=pass", "restricted=fail", "restricted-but-nginx-capabilities=fail"}},
		{"privileged redis", `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: a, image: redis, securityContext: {privileged: true}}]}}`,
			[]string{"baseline=fail", "baseline-but-nginx=fail", "restricted=fail", "restricted-but-nginx-capabilities=fail"}},
		{"restricted", `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}},
  containers: [{name: a, image: redis, securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}]}}`,
			[]string{"baseline=pass", "baseline-but-nginx=pass", "restricted=pass", "restricted-but-nginx-capabilities=pass"}},
		// The only container is excluded from the Capabilities control:
		// its added capability no longer counts, at either level.
		{"capabilities of an excluded image", `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: a, image: nginx:1.27,
  securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}, capabilities: {add: [SYS_ADMIN], drop: [ALL]}}}]}}`,
			[]string{"baseline=fail", "baseline-but-nginx=fail", "restricted=fail", "restricted-but-nginx-capabilities=pass"}},
		{"autogen", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {spec: {containers: [{name: a, image: redis, securityContext: {privileged: true}}]}}}}`,
			[]string{"autogen-baseline=fail", "autogen-baseline-but-nginx=fail", "autogen-restricted=fail", "autogen-restricted-but-nginx-capabilities=fail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := results(t, snap, rules.Create, tc.obj)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("results (-want +got):\n%s", d)
			}
		})
	}
}

func TestExceptions(t *testing.T) {
	docs := manifests(t, `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: legacy, namespace: kyverno}
spec:
  exceptions:
  - policyName: pods
    ruleNames: [labels, "autogen-*"]
  match:
    any:
    - resources: {kinds: [Pod, Deployment], names: ["legacy-*"]}
  conditions:
    all: [{key: "{{ request.object.metadata.annotations.exempt || '' }}", operator: Equals, value: "yes"}]
`)
	ex, err := kyverno.CompileException(&docs[0])
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, podPolicy, kyverno.WithExceptions(ex))
	for _, tc := range []struct {
		name, obj string
		want      []string
	}{
		{"exempt", `{apiVersion: v1, kind: Pod, metadata: {name: legacy-a, annotations: {exempt: "yes"}}, spec: {}}`,
			[]string{"labels=skip", "only-sa=skip"}},
		{"conditions do not hold", `{apiVersion: v1, kind: Pod, metadata: {name: legacy-a}, spec: {}}`,
			[]string{"labels=fail", "only-sa=skip"}},
		{"not matched", `{apiVersion: v1, kind: Pod, metadata: {name: new-a, annotations: {exempt: "yes"}}, spec: {}}`,
			[]string{"labels=fail", "only-sa=skip"}},
		{"autogen rules by wildcard", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: legacy-d, annotations: {exempt: "yes"}}, spec: {template: {metadata: {}, spec: {}}}}`,
			[]string{"autogen-labels=skip", "autogen-only-sa=skip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, d := results(t, snap, rules.Create, tc.obj)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if tc.name == "exempt" && len(d.Rejections) != 0 {
				t.Errorf("an exempted object is rejected: %+v", d.Rejections)
			}
		})
	}
	if _, err := kyverno.CompileException(&manifests(t, `{apiVersion: kyverno.io/v2, kind: PolicyException, metadata: {name: x}, spec: {match: {}, exceptions: [{policyName: p, ruleNames: [r]}], extra: 1}}`)[0]); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Errorf("an unknown field: %v", err)
	}
}

// fakeAPI answers calls from a map of paths, recording them.
type fakeAPI struct {
	responses map[string]string
	calls     []engine.APICall
}

func (f *fakeAPI) Call(_ context.Context, c engine.APICall) ([]byte, error) {
	f.calls = append(f.calls, c)
	if r, ok := f.responses[c.Path]; ok {
		return []byte(r), nil
	}
	return nil, errors.New("not found")
}

func TestAPICall(t *testing.T) {
	api := &fakeAPI{responses: map[string]string{
		"/api/v1/namespaces/default/configmaps/limits": `{"data": {"max": "2"}}`,
	}}
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: limits, namespace: default}
spec:
  rules:
  - name: replicas
    match: {any: [{resources: {kinds: [Deployment]}}]}
    context:
    - name: max
      apiCall:
        urlPath: "/api/v1/namespaces/{{ request.namespace }}/configmaps/limits"
        jmesPath: "data.max"
    - name: other
      apiCall:
        urlPath: "/api/v1/namespaces/kube-system/configmaps/x"
        default: "none"
    validate:
      deny:
        conditions:
          all: [{key: "{{ request.object.spec.replicas }}", operator: GreaterThan, value: "{{ max }}"}]
`)
	o := manifests(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: default}, spec: {replicas: 3}}`)[0].Object
	d, err := engine.New(engine.Options{API: api}).Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "default", Object: o})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range d.Trace {
		for _, r := range kyverno.ResultsOf(tr.Detail) {
			got = append(got, r.Rule+"="+string(r.Status))
		}
	}
	if diff := cmp.Diff([]string{"replicas=fail"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The Policy's calls stay in its namespace, made as its owner: the
	// call outside it is refused before it reaches the reader (its
	// default stands in).
	if len(api.calls) != 1 || api.calls[0].Owner != "default" {
		t.Errorf("calls %+v, want the one in the Policy's namespace, owned by it", api.calls)
	}
}

type cmReader map[string]map[string]any

func (r cmReader) Get(_ context.Context, ref engine.ObjectRef) (map[string]any, error) {
	return r[ref.Namespace+"/"+ref.Name], nil
}

// denyOtherNamespaces lets a rule reader read its own namespace only.
type denyOtherNamespaces struct{}

func (denyOtherNamespaces) Authorize(_ context.Context, a engine.AuthzAttributes) (bool, string, error) {
	return a.User.Username == "system:serviceaccount:"+a.Namespace+":reader", "", nil
}

// TestConfigMapConfined: a namespaced Policy reads a ConfigMap as its
// namespace's rule reader could; one in another namespace is refused.
func TestConfigMapConfined(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: p, namespace: team-a}
spec:
  rules:
  - name: own
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    context:
    - name: cm
      configMap: {name: settings, namespace: "{{ request.object.data.from }}"}
    validate:
      deny:
        conditions:
          all: [{key: "{{ cm.data.mode }}", operator: Equals, value: strict}]
`)
	objs := cmReader{
		"team-a/settings": {"data": map[string]any{"mode": "strict"}},
		"team-b/settings": {"data": map[string]any{"mode": "strict"}},
	}
	eng := engine.New(engine.Options{Objects: objs, Authorizer: denyOtherNamespaces{}, RuleReader: "reader"})
	for _, tc := range []struct{ from, want string }{{"team-a", "fail"}, {"team-b", "error"}} {
		o := manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: team-a}, data: {from: `+tc.from+`}}`)[0].Object
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
		if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) || tc.want == "error" && !strings.Contains(got[0], "may not get configmaps in team-b") {
			t.Errorf("from %s: %v, want %s", tc.from, got, tc.want)
		}
	}
}

// TestDenyMessageNotResubstituted: a condition's message, rendered with an
// object's values, is not read as variables again (an object's text
// cannot make the rule read other data).
func TestDenyMessageNotResubstituted(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: notes}
spec:
  rules:
  - name: note
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      message: "{{ request.object.metadata.name }} is refused"
      deny:
        conditions:
          any:
          - key: "{{ request.object.data.note }}"
            operator: NotEquals
            value: ""
            message: "note: {{ request.object.data.note }}"
`)
	_, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {note: "{{ request.object.metadata.uid }}"}}`)
	var msgs []string
	for _, tr := range d.Trace {
		for _, r := range kyverno.ResultsOf(tr.Detail) {
			msgs = append(msgs, r.Message)
		}
	}
	if want := []string{"x is refused; note: {{ request.object.metadata.uid }}"}; !cmp.Equal(want, msgs) {
		t.Errorf("messages %q, want %q", msgs, want)
	}
}

type fakeHTTP struct {
	status int
	body   string
	reqs   []engine.HTTPRequest
}

func (f *fakeHTTP) Fetch(_ context.Context, r engine.HTTPRequest) (*engine.HTTPResponse, error) {
	f.reqs = append(f.reqs, r)
	return &engine.HTTPResponse{Status: f.status, Body: []byte(f.body)}, nil
}

// TestServiceCall: an apiCall's service is called through the engine's
// HTTPReader with its rendered URL, headers, CA bundle and JSON body; a
// status outside 2xx is the rule's error with the response's text.
func TestServiceCall(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: registry-check}
spec:
  rules:
  - name: allowed
    match: {any: [{resources: {kinds: [Pod]}}]}
    context:
    - name: verdict
      apiCall:
        method: POST
        service:
          url: "https://checker.example/check/{{ request.namespace }}"
          headers: [{key: X-Team, value: "{{ request.object.metadata.labels.team }}"}]
        data: [{key: image, value: "{{ request.object.spec.containers[0].image }}"}]
        jmesPath: allowed
    validate:
      message: "{{ request.object.spec.containers[0].image }} is not allowed"
      deny:
        conditions:
          all: [{key: "{{ verdict }}", operator: Equals, value: false}]
`)
	o := manifests(t, `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: shop, labels: {team: web}}, spec: {containers: [{name: c, image: evil:1}]}}`)[0].Object
	req := engine.Request{Operation: rules.Create, Namespace: "shop", Object: o}
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"denied", `{"allowed": false}`, 200, "allowed=fail"},
		{"allowed", `{"allowed": true}`, 200, "allowed=pass"},
		{"service error", `no such team`, 404, "allowed=error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := &fakeHTTP{status: tc.status, body: tc.body}
			d, err := engine.New(engine.Options{HTTP: web}).Evaluate(context.Background(), snap, req)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var msg string
			for _, tr := range d.Trace {
				for _, r := range kyverno.ResultsOf(tr.Detail) {
					got, msg = append(got, r.Rule+"="+string(r.Status)), r.Message
				}
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.status == 404 && !strings.Contains(msg, "HTTP 404 Not Found: no such team") {
				t.Errorf("message %q, want the status and the response's text", msg)
			}
			if len(web.reqs) != 1 {
				t.Fatalf("requests %+v, want one", web.reqs)
			}
			r := web.reqs[0]
			want := engine.HTTPRequest{Method: "POST", URL: "https://checker.example/check/shop",
				Header: map[string]string{"X-Team": "web", "Content-Type": "application/json"}, Body: []byte(`{"image":"evil:1"}`)}
			if diff := cmp.Diff(want, r); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
	// A CA bundle that holds no certificate is the rule's load error.
	res := source.LoadRules(manifests(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: bad-ca}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    context:
    - name: v
      apiCall: {service: {url: "https://x.example", caBundle: "not a pem"}}
    validate: {deny: {}}
`), kinds.NewRegistry(kyverno.NewKinds()...))
	if len(res.Rules) != 1 || res.Rules[0].Info().Err == nil || !strings.Contains(res.Rules[0].Info().Err.Error(), "spec.rules[0].context[0].apiCall.service.caBundle") {
		t.Errorf("want the caBundle's positioned error, got %+v", res.Rules)
	}
}

// TestMetrics: once a server takes the collectors, every rule result is
// counted under Kyverno's metric and labels, and the served rules
// (autogen rules among them) are listed.
func TestMetrics(t *testing.T) {
	ks := kyverno.NewKinds()
	ob := ks[0].(kinds.Observed).Observer()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(ob.Collectors()...)
	res := source.LoadRules(manifests(t, podPolicy), kinds.NewRegistry(ks...))
	snap := engine.NewSnapshot(res.Rules)
	ob.Published(snap)
	o := manifests(t, `{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: shop}, spec: {serviceAccountName: default}}`)[0].Object
	req := engine.Request{Operation: rules.Create, Namespace: "shop", Object: o, Kind: engine.GroupVersionKind{Version: "v1", Kind: "Pod"}}
	if _, err := engine.New(engine.Options{NoTrace: true}).Evaluate(context.Background(), snap, req); err != nil {
		t.Fatal(err)
	}
	const results = `
# HELP kyverno_policy_results_total Results of Kyverno policies' rules on objects (Kyverno's name and labels), by policy, rule, result and resource.
# TYPE kyverno_policy_results_total counter
kyverno_policy_results_total{dry_run="false",policy_background_mode="true",policy_name="pods",policy_namespace="-",policy_type="cluster",policy_validation_mode="enforce",resource_kind="Pod",resource_namespace="shop",resource_request_operation="create",rule_execution_cause="admission_request",rule_name="labels",rule_result="fail",rule_type="validate"} 1
kyverno_policy_results_total{dry_run="false",policy_background_mode="true",policy_name="pods",policy_namespace="-",policy_type="cluster",policy_validation_mode="enforce",resource_kind="Pod",resource_namespace="shop",resource_request_operation="create",rule_execution_cause="admission_request",rule_name="only-sa",rule_result="fail",rule_type="validate"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(results), "kyverno_policy_results_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "kyverno_policy_rule_info_total"); n != 9 {
		t.Errorf("kyverno_policy_rule_info_total has %d series, want 9 (3 rules, their autogen- and autogen-cronjob- rules)", n)
	}
}

// TestMutate: mutate rules run first (Kyverno's mutating webhook), each
// on the object as the rules before it left it; validate rules then check
// the mutated object; the patch is the difference.
func TestMutate(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: team}
spec:
  validationFailureAction: Enforce
  rules:
  - name: require-team
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      pattern: {metadata: {labels: {team: "?*"}}}
  - name: default-team
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchStrategicMerge: {metadata: {labels: {+(team): platform}}}
  - name: owner-from-team
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchesJson6902: |-
        - {op: add, path: /metadata/annotations, value: {owner: "{{ request.object.metadata.labels.team }}-owners"}}
`)
	got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}}`)
	if diff := cmp.Diff([]string{"default-team=pass", "owner-from-team=pass", "require-team=pass"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(d.Rejections) != 0 {
		t.Errorf("rejected: %+v", d.Rejections)
	}
	want := `[{"op":"add","path":"/metadata/annotations","value":{"owner":"platform-owners"}},{"op":"add","path":"/metadata/labels","value":{"team":"platform"}}]`
	if b, _ := json.Marshal(d.Patch); string(b) != want {
		t.Errorf("patch %s, want %s", b, want)
	}
	// A Pod with its team: nothing to add, the annotation from its team.
	got, d = results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a, labels: {team: web}}}`)
	if diff := cmp.Diff([]string{"default-team=skip", "owner-from-team=pass", "require-team=pass"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	want = `[{"op":"add","path":"/metadata/annotations","value":{"owner":"web-owners"}}]`
	if b, _ := json.Marshal(d.Patch); string(b) != want {
		t.Errorf("patch %s, want %s", b, want)
	}
}

// TestMutateErrors: a patch that cannot apply is the rule's error (and,
// under failurePolicy Fail, a rejection); nothing changes.
func TestMutateErrors(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: broken}
spec:
  rules:
  - name: bad-path
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchesJson6902: |-
        - {op: replace, path: /spec/nothing/here, value: 1}
`)
	got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}}`)
	if diff := cmp.Diff([]string{"bad-path=error"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(d.Patch) != 0 || len(d.Rejections) != 1 || !strings.Contains(d.Rejections[0].Message, "failed to patch resource") {
		t.Errorf("patch %v, rejections %+v", d.Patch, d.Rejections)
	}
	// Copies that double the object are bounded (patch.MaxCopyBytes): the
	// rule's error, not an object of a terabyte.
	var bomb strings.Builder
	for i := range 60 {
		// /spec into /spec/a, then into /spec/b: the object grows as
		// Fibonacci's numbers.
		fmt.Fprintf(&bomb, "        - {op: copy, from: /spec, path: /spec/%c}\n", 'a'+i%2)
	}
	snap = snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: copies}
spec:
  rules:
  - name: double
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchesJson6902: |-
`+bomb.String())
	got, d = results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}`)
	if diff := cmp.Diff([]string{"double=error"}, got); diff != "" || len(d.Patch) != 0 ||
		len(d.Rejections) != 1 || !strings.Contains(d.Rejections[0].Message, "exceeding the limit 1048576") {
		t.Errorf("(-want +got):\n%s; patch %v; rejections %v", diff, d.Patch, d.Rejections)
	}
	// Errors when the policy loads: a JSON patch that does not parse, both
	// patch forms, an order that is not one.
	for _, tc := range []struct{ mutate, field string }{
		{`{patchesJson6902: "- op: [unclosed"}`, "spec.rules[0].mutate.patchesJson6902"},
		{`{patchesJson6902: "[]", patchStrategicMerge: {a: b}}`, "spec.rules[0].mutate"},
		{`{foreach: [{list: request.object.spec.containers, order: Sideways, patchStrategicMerge: {a: b}}]}`, "spec.rules[0].mutate.foreach[0].order"},
		{`{}`, "spec.rules[0].mutate"},
	} {
		_, err := compileErr(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: broken}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate: `+tc.mutate)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one at %s", tc.mutate, err, tc.field)
		}
	}
}

// compileErr loads one policy and returns its compile error.
func compileErr(t testing.TB, policy string) (engine.Rule, error) {
	t.Helper()
	res := source.LoadRules(manifests(t, policy), kinds.NewRegistry(append(kyverno.NewKinds(), kyverno.NewCELKinds()...)...))
	if len(res.Errors) > 0 {
		return nil, errors.Join(res.Errors...)
	}
	if len(res.Rules) != 1 {
		t.Fatalf("%d rules", len(res.Rules))
	}
	return res.Rules[0], res.Rules[0].Info().Err
}

const vpolTeam = `
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: team}
spec:
  validationActions: [ACTIONS]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: not-host, expression: "!object.spec.?hostNetwork.orValue(false)"}
  variables:
  - {name: team, expression: "object.metadata.?labels.team.orValue('')"}
  validations:
  - expression: variables.team != ''
    messageExpression: "'pod ' + object.metadata.?name.orValue('template') + ' needs a team'"
`

// TestValidatingPolicy: Kyverno's ValidatingPolicy: match constraints,
// conditions (skip), variables, the first failing validation's message,
// the validation actions at admission, autogen for pod controllers.
func TestValidatingPolicy(t *testing.T) {
	deny := snapshot(t, strings.ReplaceAll(vpolTeam, "ACTIONS", "Deny"))
	for _, tc := range []struct{ obj, want string }{
		{`{apiVersion: v1, kind: Pod, metadata: {name: a, labels: {team: x}}, spec: {containers: [{name: c, image: i}]}}`, "=pass"},
		{`{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}`, "=fail"},
		{`{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {hostNetwork: true, containers: [{name: c, image: i}]}}`, "=skip"},
		{`{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`, ""},
		// Autogen: the same checks over the pod template.
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {metadata: {labels: {team: x}}, spec: {containers: [{name: c, image: i}]}}}}`, "=pass"},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, labels: {team: x}}, spec: {template: {metadata: {}, spec: {containers: [{name: c, image: i}]}}}}`, "=fail"},
		{`{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {template: {metadata: {labels: {team: x}}, spec: {containers: [{name: c, image: i}]}}}}}}`, "=pass"},
	} {
		got, d := results(t, deny, rules.Create, tc.obj)
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s: results %v, want %q", tc.obj, got, tc.want)
		}
		if rejected := len(d.Rejections) > 0; rejected != (tc.want == "=fail") {
			t.Errorf("%s: rejections %+v", tc.obj, d.Rejections)
		}
		if tc.want == "=fail" && !strings.Contains(d.Rejections[0].Message, "needs a team") {
			t.Errorf("%s: message %q", tc.obj, d.Rejections[0].Message)
		}
	}
	// Warn warns, Audit only reports.
	for actions, warns := range map[string]bool{"Warn": true, "Audit": false} {
		snap := snapshot(t, strings.ReplaceAll(vpolTeam, "ACTIONS", actions))
		got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}`)
		if strings.Join(got, ",") != "=fail" || len(d.Rejections) != 0 || (len(d.Warnings) > 0) != warns {
			t.Errorf("%s: results %v, rejections %v, warnings %v", actions, got, d.Rejections, d.Warnings)
		}
	}
	// Kyverno's CEL libraries not declared (the generator outside a
	// GeneratingPolicy) load and give an error saying so.
	lib := snapshot(t, strings.ReplaceAll(strings.ReplaceAll(vpolTeam, "ACTIONS", "Deny"), "variables.team != ''", "generator.Apply('x', [])"))
	got, d := results(t, lib, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}`)
	if strings.Join(got, ",") != "=error" || len(d.Rejections) != 1 || !strings.Contains(d.Rejections[0].Message, "Kyverno's CEL library generator is not evaluated yet") {
		t.Errorf("library: results %v, rejections %+v", got, d.Rejections)
	}
}

// celAPI answers API reads with ConfigMaps named after their path (404
// for "missing") and records the calls.
type celAPI struct{ calls []engine.APICall }

func (f *celAPI) Call(_ context.Context, c engine.APICall) ([]byte, error) {
	f.calls = append(f.calls, c)
	if strings.HasSuffix(c.Path, "/missing") {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "missing")
	}
	if strings.Contains(c.Path, "/configmaps?") || strings.HasSuffix(c.Path, "/configmaps") {
		return []byte(`{"apiVersion": "v1", "kind": "ConfigMapList", "items": [{"metadata": {"name": "a"}, "data": {"a": "b"}}]}`), nil
	}
	return []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b", "path": "` + c.Path + `"}}`), nil
}

func (f *celAPI) ImageData(_ context.Context, ref string) (map[string]any, error) {
	return map[string]any{"image": ref, "config": map[string]any{"config": map[string]any{"User": "1000"}}}, nil
}

// TestCELData: Kyverno's data libraries in CEL policies read through the
// engine's readers: a namespaced policy in its own namespace, as its
// owner; a missing object is null; names are checked before a path is
// made; offline without a reader the result is an error but no
// rejection (the input is incomplete).
func TestCELData(t *testing.T) {
	const pod = `{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: team-a, annotations: {cm: ANNOTATION}}, spec: {containers: [{name: c, image: ghcr.io/a/b:v1}]}}`
	vpol := func(kind, expr string) string {
		p := strings.ReplaceAll(strings.ReplaceAll(vpolTeam, "ACTIONS", "Deny"), "variables.team != ''", strconv.Quote(expr))
		p = strings.Replace(p, "kind: ValidatingPolicy", "kind: "+kind, 1)
		if kind == "NamespacedValidatingPolicy" {
			p = strings.Replace(p, "metadata: {name: team}", "metadata: {name: team, namespace: team-a}", 1)
		}
		return p
	}
	for _, tc := range []struct {
		name, kind, expr, annotation string
		want                         string // the result
		calls                        []engine.APICall
		msg                          string // in the result's message
	}{
		{"get", "ValidatingPolicy", "resource.Get('v1', 'configmaps', 'platform', 'x').data.a == 'b'", "x", "=pass",
			[]engine.APICall{{Method: "GET", Path: "/api/v1/namespaces/platform/configmaps/x"}}, ""},
		{"namespaced", "NamespacedValidatingPolicy", "resource.Get('v1', 'configmaps', 'x').data.path == '/api/v1/namespaces/team-a/configmaps/x'", "x", "=pass",
			[]engine.APICall{{Method: "GET", Path: "/api/v1/namespaces/team-a/configmaps/x", Owner: "team-a"}}, ""},
		{"list", "ValidatingPolicy", "resource.List('v1', 'configmaps', 'team-a', {'b': '2', 'a': '1'}).items.all(i, i.kind == 'ConfigMap' && i.apiVersion == 'v1')", "x", "=pass",
			[]engine.APICall{{Method: "GET", Path: "/api/v1/namespaces/team-a/configmaps?labelSelector=a%3D1%2Cb%3D2"}}, ""},
		{"missing", "ValidatingPolicy", "resource.Get('apps/v1', 'deployments', object.metadata.namespace, object.metadata.annotations.cm).orValue(null) == null", "missing", "=pass",
			[]engine.APICall{{Method: "GET", Path: "/apis/apps/v1/namespaces/team-a/deployments/missing"}}, ""},
		{"climb", "ValidatingPolicy", "resource.Get('v1', 'configmaps', 'team-a', object.metadata.annotations.cm).data.a == 'b'", "../../secrets", "=error", nil, "names no object"},
		{"image", "ValidatingPolicy", "object.spec.containers.all(c, image.GetMetadata(c.image).config.config.User == '1000')", "x", "=pass", nil, ""},
		{"togvr", "ValidatingPolicy", "resource.Get(resource.ToGVR('v1', 'ConfigMap'), 'platform', 'x').data.a == 'b'", "x", "=pass",
			[]engine.APICall{{Method: "GET", Path: "/api/v1/namespaces/platform/configmaps/x"}}, ""},
		{"togvr namespaced", "NamespacedValidatingPolicy", "resource.Get(resource.ToGVR('networking.k8s.io/v1', 'Ingress'), 'x').data.a == 'b'", "x", "=pass",
			[]engine.APICall{{Method: "GET", Path: "/apis/networking.k8s.io/v1/namespaces/team-a/ingresses/x", Owner: "team-a"}}, ""},
		{"togvr unknown", "ValidatingPolicy", "resource.ToGVR('example.com/v1', 'Widget') != null", "x", "=error", nil, "no resource is known for the kind: example.com/v1, Kind=Widget"},
		{"togvr bad kind", "ValidatingPolicy", "resource.ToGVR('v1', object.metadata.annotations.cm) != null", "../secrets", "=error", nil, "is not a kind"},
		{"long name", "ValidatingPolicy", "resource.Get('v1', 'configmaps', 'team-a', object.metadata.annotations.cm).data.a == 'b'", strings.Repeat("n", 254), "=error", nil, "names no object"},
		{"long resource", "ValidatingPolicy", "resource.Get('v1', object.metadata.annotations.cm, 'team-a', 'x').data.a == 'b'", strings.Repeat("r", 600), "=error", nil, "is not a resource"},
		{"long selector", "ValidatingPolicy", "resource.List('v1', 'configmaps', 'team-a', {'a': object.metadata.annotations.cm}).items.size() == 1", strings.Repeat("v", 9000), "=error", nil, "invalid urlPath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(t, vpol(tc.kind, tc.expr))
			api := &celAPI{}
			d, err := engine.New(engine.Options{API: api, Images: api}).Evaluate(context.Background(), snap,
				engine.Request{Operation: rules.Create, Namespace: "team-a", Object: manifests(t, strings.ReplaceAll(pod, "ANNOTATION", strconv.Quote(tc.annotation)))[0].Object})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var msg string
			for _, tr := range d.Trace {
				for _, r := range kyverno.ResultsOf(tr.Detail) {
					got = append(got, r.Rule+"="+string(r.Status))
					msg += r.Message
				}
			}
			if strings.Join(got, ",") != tc.want || !strings.Contains(msg, tc.msg) {
				t.Errorf("results %v (%s), want %s saying %q", got, msg, tc.want, tc.msg)
			}
			if diff := cmp.Diff(tc.calls, api.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
	// Without a reader: an error naming what to give, no rejection.
	snap := snapshot(t, vpol("ValidatingPolicy", "resource.Get('v1', 'configmaps', 'platform', 'x').data.a == 'b'"))
	got, d := results(t, snap, rules.Create, strings.ReplaceAll(pod, "ANNOTATION", "x"))
	if strings.Join(got, ",") != "=error" || len(d.Rejections) != 0 || len(d.Errors) != 1 || !errors.Is(d.Errors[0], lang.ErrNoReader) {
		t.Errorf("no reader: results %v, rejections %+v, errors %v", got, d.Rejections, d.Errors)
	}
}

// TestValidatingPolicyErrors: positioned errors when a policy loads.
func TestValidatingPolicyErrors(t *testing.T) {
	for _, tc := range []struct{ from, to, field string }{
		{"[Deny]", "[Block]", "spec.validationActions[0]"},
		{"variables.team != ''", "variables.team !=", "spec.validations[0].expression"},
		{"resources: [pods]}", "resources: [pods]}\n    objectSelector: {matchExpressions: [{key: a, operator: Bogus}]}", "spec.matchConstraints.objectSelector"},
	} {
		_, err := compileErr(t, strings.Replace(strings.ReplaceAll(vpolTeam, "ACTIONS", "Deny"), tc.from, tc.to, 1))
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s -> %s: error %v, want one at %s", tc.from, tc.to, err, tc.field)
		}
	}
}

// TestValidatingPolicyJSON: a ValidatingPolicy of evaluation.mode JSON
// evaluates JSON payloads (its matchConstraints unread, no request or
// namespace bound) and never a Kubernetes object; a policy of Kubernetes
// objects never sees a payload; without validationActions a failure is
// denied (Kyverno's default); a mode other than Kubernetes or JSON is an
// error at its field.
func TestValidatingPolicyJSON(t *testing.T) {
	const jsonPolicy = `
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: plan}
spec:
  evaluation: {mode: MODE}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: has-changes, expression: "has(object.changes)"}
  validations:
  - expression: "object.changes.all(c, c.action != 'delete') && request == null && namespaceObject == null"
    message: no deletions
`
	snap := snapshot(t, strings.ReplaceAll(jsonPolicy, "MODE", "JSON")+"---\n"+strings.ReplaceAll(vpolTeam, "ACTIONS", "Deny"))
	eng := engine.New(engine.Options{})
	payload := func(doc string) []string {
		d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Object: manifests(t, "kind: x\n"+doc)[0].Object, Payload: true})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range d.Trace {
			for _, r := range kyverno.ResultsOf(tr.Detail) {
				got = append(got, r.Policy+"="+string(r.Status))
			}
		}
		if denied := len(d.Rejections) > 0; denied != slices.Contains(got, "plan=fail") {
			t.Errorf("%s: rejections %+v", doc, d.Rejections)
		}
		return got
	}
	for doc, want := range map[string]string{
		"changes: [{action: create}]": "plan=pass",
		"changes: [{action: delete}]": "plan=fail",
		"other: 1":                    "plan=skip",
		// Members of a Kubernetes object make no object of a payload.
		"apiVersion: v1\nmetadata: {name: a, namespace: ns}\nchanges: []": "plan=pass",
	} {
		if got := payload(doc); strings.Join(got, ",") != want {
			t.Errorf("%s: results %v, want %s", doc, got, want)
		}
	}
	got, _ := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a, labels: {team: x}}, changes: [{action: delete}], spec: {containers: [{name: c, image: i}]}}`)
	if strings.Join(got, ",") != "=pass" {
		t.Errorf("a Pod: results %v, want the Kubernetes policy's pass alone", got)
	}
	if _, err := compileErr(t, strings.ReplaceAll(jsonPolicy, "MODE", "Terraform")); err == nil || !strings.Contains(err.Error(), "spec.evaluation.mode") {
		t.Errorf("an unknown mode: error %v", err)
	}
}

const mpolDefaults = `
apiVersion: policies.kyverno.io/v1beta1
kind: MutatingPolicy
metadata: {name: defaults}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  variables:
  - {name: host, expression: "object.spec.?hostNetwork.orValue(false)"}
  matchConditions:
  - {name: not-host, expression: "!variables.host"}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{spec: Object.spec{priorityClassName: 'low'}}"
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'priority': object.spec.?priorityClassName.orValue('none')}}]"
`

// TestMutatingPolicy: Kyverno's MutatingPolicy: an ApplyConfiguration and
// a JSONPatch in order, skip when a match condition (reading a variable,
// as Kyverno binds a MutatingPolicy's first) does not hold, autogen
// for a Deployment (ApplyConfiguration under the pod template).
func TestMutatingPolicy(t *testing.T) {
	snap := snapshot(t, mpolDefaults)
	got, d := results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}`)
	if strings.Join(got, ",") != "=pass" {
		t.Errorf("results %v", got)
	}
	want := `[{"op":"add","path":"/metadata/annotations","value":{"priority":"low"}},{"op":"add","path":"/spec/priorityClassName","value":"low"}]`
	if b, _ := json.Marshal(d.Patch); string(b) != want {
		t.Errorf("patch %s, want %s", b, want)
	}
	got, d = results(t, snap, rules.Create, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {hostNetwork: true, containers: [{name: c, image: i}]}}`)
	if strings.Join(got, ",") != "=skip" || len(d.Patch) != 0 {
		t.Errorf("results %v, patch %v", got, d.Patch)
	}
	got, d = results(t, snap, rules.Create, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}}`)
	if strings.Join(got, ",") != "=pass" {
		t.Errorf("Deployment: results %v", got)
	}
	b, _ := json.Marshal(d.Patch)
	// A deletion has no object to mutate: the kernel runs no mutating
	// rule then (no result, no patch).
	del := snapshot(t, strings.Replace(mpolDefaults, "operations: [CREATE]", "operations: [\"*\"]", 1))
	old := manifests(t, `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}`)[0].Object
	d, err := engine.New(engine.Options{}).Evaluate(context.Background(), del, engine.Request{Operation: rules.Delete, Namespace: "default", OldObject: old})
	if err != nil {
		t.Fatal(err)
	}
	var res []string
	for _, tr := range d.Trace {
		for _, r := range kyverno.ResultsOf(tr.Detail) {
			res = append(res, r.Rule+"="+string(r.Status))
		}
	}
	if len(res) != 0 || len(d.Patch) != 0 || len(d.Errors) != 0 {
		t.Errorf("DELETE: results %v, patch %v, errors %v", res, d.Patch, d.Errors)
	}
	// JSONPatch expressions are not rewritten by autogen (as in Kyverno):
	// the annotation goes on the Deployment, from its own spec.
	if !strings.Contains(string(b), `"path":"/spec/template/spec/priorityClassName","value":"low"`) || !strings.Contains(string(b), `{"op":"add","path":"/metadata/annotations","value":{"priority":"none"}}`) {
		t.Errorf("Deployment: patch %s: want priorityClassName under the pod template and the annotation", b)
	}
}

// TestCELExceptions: policies.kyverno.io PolicyExceptions of Kyverno's CEL
// policies: a full exemption skips (or passes) naming the exception; one
// past its expiry, with validations (not evaluated yet), naming another
// kind or, for a namespaced policy, in another namespace is not granted;
// one whose condition fails makes the policy's error.
func TestCELExceptions(t *testing.T) {
	const pod = `{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: team-a}, spec: {containers: [{name: c, image: i}]}}`
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, policyKind, refKind, ns, extra, want, msg string
	}{
		{"skip", "ValidatingPolicy", "ValidatingPolicy", "platform", "", "=skip", "rule is skipped due to policy exception: platform/ex"},
		{"pass", "ValidatingPolicy", "ValidatingPolicy", "platform", "reportResult: pass", "=pass", "rule is passed due to policy exception: platform/ex"},
		{"expired", "ValidatingPolicy", "ValidatingPolicy", "platform", "expiresAt: '2026-11-28T00:00:00Z'", "=fail", "needs a team"},
		{"not expired", "ValidatingPolicy", "ValidatingPolicy", "platform", "expiresAt: '2026-11-30T00:00:00Z'", "=skip", "platform/ex"},
		{"validations", "ValidatingPolicy", "ValidatingPolicy", "platform", "validations: [{expression: 'true'}]", "=fail", "needs a team"},
		{"another kind", "ValidatingPolicy", "MutatingPolicy", "platform", "", "=fail", "needs a team"},
		{"broken condition", "ValidatingPolicy", "ValidatingPolicy", "platform", "matchConditions: [{name: c, expression: \"object.metadata.labels.x == 'a'\"}]", "=error", "PolicyException platform/ex"},
		{"namespaced, same namespace", "NamespacedValidatingPolicy", "NamespacedValidatingPolicy", "team-a", "", "=skip", "team-a/ex"},
		{"namespaced, another namespace", "NamespacedValidatingPolicy", "NamespacedValidatingPolicy", "platform", "", "=fail", "needs a team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := strings.Replace(strings.ReplaceAll(vpolTeam, "ACTIONS", "Deny"), "kind: ValidatingPolicy", "kind: "+tc.policyKind, 1)
			if tc.policyKind == "NamespacedValidatingPolicy" {
				p = strings.Replace(p, "metadata: {name: team}", "metadata: {name: team, namespace: team-a}", 1)
			}
			spec := "  policyRefs: [{name: team, kind: " + tc.refKind + "}]\n"
			if !strings.HasPrefix(tc.extra, "matchConditions") {
				spec += "  matchConditions: [{name: c, expression: \"object.metadata.name == 'a'\"}]\n"
			}
			if tc.extra != "" {
				spec += "  " + tc.extra + "\n"
			}
			docs := manifests(t, "apiVersion: policies.kyverno.io/v1\nkind: PolicyException\nmetadata: {name: ex, namespace: "+tc.ns+"}\nspec:\n"+spec)
			ex, err := kyverno.CompileException(&docs[0])
			if err != nil {
				t.Fatal(err)
			}
			snap := snapshot(t, p, kyverno.WithExceptions(ex), kyverno.WithClock(func() time.Time { return now }))
			got, d := results(t, snap, rules.Create, pod)
			var msg string
			for _, tr := range d.Trace {
				for _, r := range kyverno.ResultsOf(tr.Detail) {
					msg += r.Message
				}
			}
			if strings.Join(got, ",") != tc.want || !strings.Contains(msg, tc.msg) {
				t.Errorf("results %v (%s), want %s saying %q", got, msg, tc.want, tc.msg)
			}
		})
	}
}

// TestValidateCELOrValue: a ClusterPolicy's validate.cel reads
// x.orValue(y) on an x that is not optional as Kyverno's policy library
// expects (x itself), as the CEL policies do.
func TestValidateCELOrValue(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: mounts}
spec:
  validationFailureAction: Enforce
  rules:
  - name: read-only
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      cel:
        expressions:
        - expression: "object.spec.containers.all(c, c.volumeMounts.orValue([]).all(m, m.?readOnly.orValue(false)))"
          message: mounts must be read-only
`)
	for obj, want := range map[string]string{
		`{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, readOnly: true}]}]}}`: "read-only=pass",
		`{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v}]}]}}`:                 "read-only=fail",
	} {
		if got, _ := results(t, snap, rules.Create, obj); strings.Join(got, ",") != want {
			t.Errorf("%s: %v, want %s", obj, got, want)
		}
	}
}
