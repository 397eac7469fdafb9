package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

const testRules = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: label, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /metadata/labels/seen, value: '"yes"'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: no-latest, namespace: ns1}
spec:
  type: Reject
  match: [{select: '$.spec.containers[*].image', matchRegex: ':latest$'}]
  rejectMessage: 'no latest in {{ .Namespace }}'
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: protect, namespace: ns1}
spec:
  type: Reject
  admissionOperations: [DELETE]
  match: [{select: '$.metadata.labels.protected', matchValue: 'true'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: fails, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.metadata.labels.fail', matchValue: 'yes'}]
  patch:
    - {op: replace, path: /spec/missing/deep, value: '1'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: team, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch:
    - op: add
      path: /metadata/labels/team
      value: '{{ .Target.syntheticRefs.namespace.metadata.labels.team | default "none" | quote }}'
`

// objects is an ObjectReader over a few objects, by kind and name.
type objects map[string]map[string]any

func (o objects) Get(_ context.Context, ref engine.ObjectRef) (map[string]any, error) {
	return o[ref.Kind+"/"+ref.Name], nil
}

var _ engine.ObjectReader = objects(nil)

func snapshot(t *testing.T) *engine.Snapshot {
	t.Helper()
	docs, err := source.ParseManifest("rules.yaml", []byte(testRules))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, kinds.NewRegistry(modrule.NewKind("")))
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	return engine.NewSnapshot(res.Rules)
}

func object(t *testing.T, text string) map[string]any {
	t.Helper()
	v, err := value.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

func pod(labels, image string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns1","labels":{` + labels + `}},"spec":{"containers":[{"name":"c","image":"` + image + `"}]}}`
}

const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns1"}}`

func TestDrivers(t *testing.T) {
	snap := snapshot(t)
	ctxObjects := objects{"Namespace/ns1": object(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1","labels":{"team":"blue"}}}`)}
	for _, tc := range []struct {
		name    string
		op      rules.Operation
		ns      string
		obj     string
		objects engine.ObjectReader
		// want: the result's object (JSON), "" when denied.
		want     string
		denial   string
		patchLen int
		warning  string // occurs in the only warning
	}{
		{
			name: "Patch rule", op: rules.Create, ns: "ns1", obj: pod(`"a":"b"`, "nginx:1"),
			want: pod(`"a":"b","seen":"yes"`, "nginx:1"), patchLen: 1,
		},
		{
			name: "Reject rule", op: rules.Create, ns: "ns1", obj: pod(``, "nginx:latest"),
			denial: `operation rejected by the following ModRule(s): ns1/no-latest: "no latest in ns1"`,
		},
		{
			name: "no candidate", op: rules.Create, ns: "other", obj: pod(``, "nginx:latest"),
			want: pod(``, "nginx:latest"),
		},
		{
			name: "rule error", op: rules.Create, ns: "ns1", obj: pod(`"fail":"yes"`, "nginx:1"),
			want: pod(`"fail":"yes","seen":"yes"`, "nginx:1"), patchLen: 1, warning: "ns1/fails spec.patch[0]",
		},
		{
			name: "context objects", op: rules.Create, ns: "ns1", obj: configMap, objects: ctxObjects,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns1","labels":{"team":"blue"}}}`, patchLen: 1,
		},
		{
			name: "no context objects", op: rules.Create, ns: "ns1", obj: configMap,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns1","labels":{"team":"none"}}}`, patchLen: 1,
		},
		{
			name: "DELETE rejected", op: rules.Delete, ns: "ns1", obj: pod(`"protected":"true"`, "nginx:1"),
			denial: `operation rejected by the following ModRule(s): ns1/protect`,
		},
		{
			name: "DELETE admitted", op: rules.Delete, ns: "ns1", obj: pod(`"protected":"false"`, "nginx:1"),
			want: pod(`"protected":"false"`, "nginx:1"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := object(t, tc.obj)
			orig := value.DeepCopy(in)
			req := runner.Request{Operation: tc.op, Namespace: tc.ns, Object: in}
			var results []*runner.Result
			for _, d := range []struct {
				name string
				drv  runner.Driver
			}{
				{"engine", runner.NewEngine(snap, tc.objects)},
				{"webhook", runner.NewWebhook(snap, tc.objects)},
			} {
				res, err := d.drv.Run(context.Background(), req)
				if err != nil {
					t.Fatalf("%s: %v", d.name, err)
				}
				if !value.Equal(in, orig) {
					t.Fatalf("%s modified the input", d.name)
				}
				if got := res.Allowed; got != (tc.denial == "") {
					t.Errorf("%s: allowed %v, want %v (%s)", d.name, got, !got, res.Denial)
				}
				if res.Denial != tc.denial {
					t.Errorf("%s: denial %q, want %q", d.name, res.Denial, tc.denial)
				}
				var want any
				if tc.want != "" {
					want = object(t, tc.want)
				}
				if !value.Equal(res.Object, want) {
					t.Errorf("%s: object differs (-want +got):\n%s", d.name, cmp.Diff(want, res.Object))
				}
				if len(res.Patch) != tc.patchLen {
					t.Errorf("%s: %d patch operations, want %d: %v", d.name, len(res.Patch), tc.patchLen, res.Patch)
				}
				switch {
				case tc.warning == "" && len(res.Warnings) > 0:
					t.Errorf("%s: unexpected warnings %q", d.name, res.Warnings)
				case tc.warning != "" && (len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tc.warning)):
					t.Errorf("%s: warnings %q, want one containing %q", d.name, res.Warnings, tc.warning)
				}
				results = append(results, res)
			}
			if diff := runner.Diff(results[0], results[1]); diff != "" {
				t.Errorf("the drivers disagree (engine != webhook): %s", diff)
			}
		})
	}
}

func TestAttributes(t *testing.T) {
	obj := object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`)
	for _, tc := range []struct {
		op   rules.Operation
		want engine.Request
	}{
		{rules.Create, engine.Request{Operation: rules.Create, Name: "web", Namespace: "ns", Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: obj}},
		{rules.Update, engine.Request{Operation: rules.Update, Name: "web", Namespace: "ns", Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: obj}},
		{rules.Delete, engine.Request{Operation: rules.Delete, Name: "web", Namespace: "ns", Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, OldObject: obj}},
	} {
		got := runner.Attributes(runner.Request{Operation: tc.op, Namespace: "ns", Object: obj})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.op, diff)
		}
	}
}

func TestDiff(t *testing.T) {
	base := func() *runner.Result {
		return &runner.Result{Allowed: true, Object: map[string]any{"a": "b"}, Warnings: []string{"ns/r: a long error"}}
	}
	for _, tc := range []struct {
		name   string
		change func(r *runner.Result)
		want   string // occurs in the diff; "" for none
	}{
		{"same", func(*runner.Result) {}, ""},
		{"truncated warning", func(r *runner.Result) { r.Warnings = []string{"ns/r: a lo…"} }, ""},
		{"allowed", func(r *runner.Result) { r.Allowed = false }, "allowed"},
		{"denial", func(r *runner.Result) { r.Denial = "x" }, "denial"},
		{"object", func(r *runner.Result) { r.Object = map[string]any{} }, "object"},
		{"warning", func(r *runner.Result) { r.Warnings = []string{"other"} }, "warnings"},
		{"warning count", func(r *runner.Result) { r.Warnings = nil }, "warnings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base()
			tc.change(b)
			got := runner.Diff(base(), b)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Diff = %q, want it to mention %q", got, tc.want)
			}
		})
	}
}
