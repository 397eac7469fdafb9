package modrule_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// snapshotOf compiles the ModRules in a YAML stream.
func snapshotOf(t testing.TB, manifests string) *engine.Snapshot {
	t.Helper()
	docs, err := source.ParseManifest("rules", []byte(manifests))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, registry())
	if len(res.Errors) > 0 {
		t.Fatal(errors.Join(res.Errors...))
	}
	return engine.NewSnapshot(res.Rules)
}

func object(t testing.TB, yamlText string) map[string]any {
	t.Helper()
	docs, err := source.ParseManifest("object", []byte(yamlText))
	if err != nil || len(docs) != 1 {
		t.Fatalf("object: %v (%d docs)", err, len(docs))
	}
	return docs[0].Object
}

// evaluate runs the engine and checks the invariants every decision must
// keep: the input is untouched and the patch turns the input into the result.
func evaluate(t testing.TB, eng *engine.Engine, snap *engine.Snapshot, req engine.Request) *engine.Decision {
	t.Helper()
	in := req.Object
	if req.Operation == rules.Delete {
		in = req.OldObject
	}
	before := value.DeepCopy(in)
	d, err := eng.Evaluate(context.Background(), snap, req)
	if err != nil {
		t.Fatal(err)
	}
	if !value.Equal(in, before) {
		t.Fatal("the engine modified its input")
	}
	got, err := patch.ApplyRFC6902(before, d.Patch)
	if err != nil {
		t.Fatalf("patch does not apply: %v\n%v", err, d.Patch)
	}
	if !value.Equal(got, d.Object) {
		t.Fatalf("patch does not reproduce the result:\n%s", cmp.Diff(d.Object, got))
	}
	return d
}

const pod = `
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ns1
  labels: {app: web}
  annotations:
    ref.kubemod.io/nodename: node-a
  managedFields:
    - manager: kubectl
      operation: Apply
spec:
  containers:
    - name: a
      image: nginx:1
    - name: b
      image: busybox
`

func TestAtomicRuleAndRejectStillRuns(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: a-broken, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /metadata/labels/first, value: x}
    - {op: replace, path: /spec/missing/field, value: 'z'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: b-good, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /metadata/labels/second, value: "y"}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: c-reject, namespace: ns1}
spec:
  type: Reject
  rejectMessage: 'no {{ .Target.metadata.labels.app }}'
  match: [{select: '$.metadata.labels.app', matchValue: web}]
`)
	d := evaluate(t, engine.New(engine.Options{}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, pod)})
	labels := d.Object.(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	if _, ok := labels["first"]; ok {
		t.Error("the failed rule was applied in part")
	}
	if labels["second"] != true {
		t.Errorf("the good rule did not apply (YAML 'y' is true): %v", labels)
	}
	if len(d.Errors) != 1 || d.Errors[0].Rule != "ns1/a-broken" || d.Errors[0].Field != "spec.patch[1]" || !errors.Is(d.Errors[0], patch.ErrPathNotFound) {
		t.Errorf("errors = %v", d.Errors)
	}
	if got, want := d.DenialText(), `ns1/c-reject: "no web"`; got != want {
		t.Errorf("denial %q, want %q", got, want)
	}
	if d.Trace[0].Outcome != engine.Failed || d.Trace[1].Outcome != engine.Matched || d.Trace[2].Outcome != engine.Matched {
		t.Errorf("trace outcomes: %+v", d.Trace)
	}
}

func TestTraceNamesFailingCriterion(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: ns1}
spec:
  type: Patch
  match:
    - select: '$.kind'
      matchValue: Pod
    - select: '$.spec.containers[*].image'
      matchValue: nginx:2
  patch: [{op: add, path: /x, value: "1"}]
`)
	d := evaluate(t, engine.New(engine.Options{}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, pod)})
	if len(d.Trace) != 1 {
		t.Fatalf("trace: %+v", d.Trace)
	}
	tr := d.Trace[0]
	mt := modrule.TraceOf(&tr)
	if tr.Outcome != engine.NotMatched || mt == nil || len(mt.Criteria) != 2 || mt.Criteria[1].Held || mt.Criteria[1].Criterion.Field != "spec.match[1]" {
		t.Fatalf("trace: %+v", tr)
	}
	if diff := cmp.Diff([]any{"nginx:1", "busybox"}, mt.Criteria[1].Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// refs is an ObjectReader holding a Namespace of every name and the Node
// node-a.
type refs struct{}

func (refs) Get(_ context.Context, ref engine.ObjectRef) (map[string]any, error) {
	switch {
	case ref.Group != "" || ref.Namespace != "":
	case ref.Kind == "Namespace":
		return map[string]any{"kind": "Namespace", "metadata": map[string]any{
			"name": ref.Name, "labels": map[string]any{"team": "blue"},
			"managedFields": []any{"x"},
			"annotations":   map[string]any{engine.LastAppliedAnnotation: "{}", "keep": "me"},
		}}, nil
	case ref.Kind == "Node" && ref.Name == "node-a":
		return map[string]any{"kind": "Node", "metadata": map[string]any{"name": ref.Name, "labels": map[string]any{"zone": "z1"}}}, nil
	}
	return nil, nil
}

func TestSyntheticRefsAndManagedFields(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: ns1}
spec:
  type: Patch
  match:
    - select: '$.syntheticRefs.namespace.metadata.labels.team'
      matchValue: blue
    - select: '$.syntheticRefs.node.metadata.labels.zone'
    - select: 'isUndefined($.metadata.managedFields)'
    - select: 'isUndefined($.syntheticRefs.namespace.metadata.managedFields) && isDefined($.syntheticRefs.namespace.metadata.annotations.keep)'
    - select: '$.syntheticRefs.namespace.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]'
      negate: true
  patch:
    - {op: add, path: /metadata/labels/zone, value: '{{ .Target.syntheticRefs.node.metadata.labels.zone }}'}
    - {op: remove, path: /metadata/managedFields}
`)
	obj := object(t, pod)
	d := evaluate(t, engine.New(engine.Options{Objects: refs{}}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: obj})
	if d.Trace[0].Outcome != engine.Matched {
		t.Fatalf("rule did not match: %+v", d.Trace[0])
	}
	want := []patch.Operation{{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "zone"}, Value: "z1"}}
	if diff := cmp.Diff(want, d.Patch); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
}

func TestNoCandidatesSkipsDecoding(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Service}]
  patch: [{op: add, path: /x, value: "1"}]
`)
	d, err := engine.New(engine.Options{}).Evaluate(context.Background(), snap, engine.Request{
		Operation: rules.Create, Namespace: "ns1", Kind: engine.GroupVersionKind{Kind: "Pod"}, ObjectJSON: []byte("not json at all"),
	})
	if err != nil || !d.Allowed() || d.Changed() {
		t.Fatalf("decision %+v, err %v", d, err)
	}
	_, err = engine.New(engine.Options{}).Evaluate(context.Background(), snap, engine.Request{
		Operation: rules.Create, Namespace: "ns1", Kind: engine.GroupVersionKind{Kind: "Service"}, ObjectJSON: []byte("not json at all"),
	})
	if !errors.Is(err, engine.ErrInvalidRequest) {
		t.Fatalf("want ErrInvalidRequest, got %v", err)
	}
}

// TestDecodeObject: the Decision gives the input object back even when it
// came as JSON text and no rule could apply, without Evaluate decoding it.
func TestDecodeObject(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Service}]
  patch: [{op: add, path: /x, value: "1"}]
`)
	eng := engine.New(engine.Options{})
	ctx := context.Background()
	pod := []byte(`{"kind":"Pod","metadata":{"name":"p"}}`)
	want := map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "p"}}
	for _, tt := range []struct {
		name string
		req  engine.Request
	}{
		{"json", engine.Request{Operation: rules.Create, Namespace: "ns1", Kind: engine.GroupVersionKind{Kind: "Pod"}, ObjectJSON: pod}},
		{"json without kind", engine.Request{Operation: rules.Create, Namespace: "ns1", ObjectJSON: pod}},
		{"decoded", engine.Request{Operation: rules.Create, Namespace: "ns1", Kind: engine.GroupVersionKind{Kind: "Pod"}, Object: want}},
		{"delete json", engine.Request{Operation: rules.Delete, Namespace: "ns1", Kind: engine.GroupVersionKind{Kind: "Pod"}, OldObjectJSON: pod}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := eng.Evaluate(ctx, snap, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.DecodeObject()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(any(want), got); diff != "" {
				t.Errorf("DecodeObject (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(any(want), d.Object); diff != "" || d.ObjectJSON != nil {
				t.Errorf("after DecodeObject: ObjectJSON %q, Object (-want +got):\n%s", d.ObjectJSON, diff)
			}
		})
	}

	d, err := eng.Evaluate(ctx, snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Kind: engine.GroupVersionKind{Kind: "Pod"}, ObjectJSON: []byte("not json")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.DecodeObject(); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("DecodeObject of invalid JSON: want ErrInvalidRequest, got %v", err)
	}

	// Evaluate itself still decodes nothing: the JSON request costs the
	// same allocations as the decoded one.
	allocs := func(req engine.Request) float64 {
		return testing.AllocsPerRun(100, func() {
			if _, err := eng.Evaluate(ctx, snap, req); err != nil {
				t.Fatal(err)
			}
		})
	}
	decoded := allocs(engine.Request{Operation: rules.Create, Namespace: "ns1", Kind: engine.GroupVersionKind{Kind: "Pod"}, Object: want})
	if got := allocs(engine.Request{Operation: rules.Create, Namespace: "ns1", Kind: engine.GroupVersionKind{Kind: "Pod"}, ObjectJSON: pod}); got != decoded {
		t.Errorf("Evaluate of JSON with no candidate rule: %v allocations, decoded input: %v", got, decoded)
	}
}

func TestDeadline(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$..*'}]
  patch: [{op: add, path: /x, value: "1"}]
`)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := engine.New(engine.Options{}).Evaluate(ctx, snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, pod)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
}

func TestDeleteRunsOnlyRejectRules(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: protect, namespace: ns1}
spec:
  type: Reject
  admissionOperations: [DELETE]
  match: [{select: '$.metadata.labels.app', matchValue: web}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: patch, namespace: ns1}
spec:
  type: Patch
  admissionOperations: [DELETE]
  match: [{select: '$.kind'}]
  patch: [{op: add, path: /x, value: "1"}]
`)
	d := evaluate(t, engine.New(engine.Options{}), snap, engine.Request{Operation: rules.Delete, Namespace: "ns1", OldObject: object(t, pod)})
	if d.DenialText() != "ns1/protect" || d.Changed() {
		t.Fatalf("denial %q, patch %v", d.DenialText(), d.Patch)
	}
	if d.Trace[0].Outcome != engine.Skipped || !strings.Contains(d.Trace[0].Reason, "DELETE") {
		t.Errorf("trace %+v", d.Trace[0])
	}
}

// propertyRules exercise every kind of operation on arbitrary objects.
const propertyRules = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: p1}
spec:
  type: Patch
  match: [{select: '$'}]
  patch:
    - {op: remove, select: '$.a[? @ == 1]', path: '/a/#0'}
    - {op: add, select: '$.*', path: '/#0/added', value: '{{ .Namespace }}'}
    - {op: replace, select: '$..b', path: '/#0/b', value: '[1, {"c": 2}]'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: p2}
spec:
  type: Patch
  executionTier: 1
  match: [{select: '$.a'}]
  patch:
    - {op: add, path: /a/-1, value: '{{ len .Target }}'}
    - {op: remove, path: /b/0}
    - {op: add, path: /new/-1/x, value: 'true'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: p3}
spec:
  type: Patch
  match: [{select: 'isDefined($.metadata)'}]
  patch:
    - {op: remove, path: /metadata}
    - {op: add, path: /status, value: 'x: [1, 2]'}
`

func randomTree(r *rand.Rand, depth int) any {
	keys := []string{"a", "b", "c", "metadata", "kind", "x/y", "~"}
	switch n := r.IntN(8); {
	case depth > 3 || n < 3:
		return []any{nil, true, "s", json.Number("1.5"), json.Number("1")}[r.IntN(5)]
	case n < 5:
		s := make([]any, r.IntN(4))
		for i := range s {
			s[i] = randomTree(r, depth+1)
		}
		return s
	default:
		m := map[string]any{}
		for range r.IntN(5) {
			m[keys[r.IntN(len(keys))]] = randomTree(r, depth+1)
		}
		return m
	}
}

// TestPatchProperty: for random objects, the engine never mutates its input
// and its patch always reproduces its result.
func TestPatchProperty(t *testing.T) {
	snap := snapshotOf(t, propertyRules)
	eng, quiet := engine.New(engine.Options{}), engine.New(engine.Options{NoTrace: true})
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		obj := map[string]any{"kind": "Thing"}
		for range r.IntN(5) {
			if m, ok := randomTree(r, 0).(map[string]any); ok {
				for k, v := range m {
					obj[k] = v
				}
			}
		}
		if r.IntN(2) == 0 {
			obj["a"] = []any{1, "x", 1, 2}
		}
		req := engine.Request{Operation: rules.Create, Namespace: "ns", Object: obj}
		sameWithoutTrace(t, quiet, evaluate(t, eng, snap, req), snap, req)
	}
}

// sameWithoutTrace checks that an engine without trace decides the same:
// a new one, and the engine reused from call to call (what an evaluation
// leaves in the storage it recycles must change nothing of the next).
func sameWithoutTrace(t *testing.T, reused *engine.Engine, want *engine.Decision, snap *engine.Snapshot, req engine.Request) {
	t.Helper()
	want.Trace = nil
	for name, eng := range map[string]*engine.Engine{"a new engine": engine.New(engine.Options{NoTrace: true}), "the reused engine": reused} {
		got, err := eng.Evaluate(context.Background(), snap, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Trace) != 0 {
			t.Fatalf("NoTrace kept %d trace entries", len(got.Trace))
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b || (a != nil && b != nil && a.Error() == b.Error()) })); diff != "" {
			t.Fatalf("NoTrace, %s, decides differently (-trace +notrace):\n%s", name, diff)
		}
	}
}

func FuzzEngine(f *testing.F) {
	f.Add([]byte(`{"kind":"Thing","a":[1,2,1],"b":[{"b":1}],"metadata":{"x":1}}`))
	f.Add([]byte(`{"kind":"Pod","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"a\":[1]}"}},"a":[1]}`))
	f.Add([]byte(`{"kind":"Pod","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"[1]"}}}`))
	snap := snapshotOf(f, propertyRules)
	eng, quiet := engine.New(engine.Options{}), engine.New(engine.Options{NoTrace: true})
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := value.Decode(data)
		if err != nil {
			return
		}
		m, ok := obj.(map[string]any)
		if !ok {
			return
		}
		req := engine.Request{Operation: rules.Create, Namespace: "ns", Object: m}
		sameWithoutTrace(t, quiet, evaluate(t, eng, snap, req), snap, req)
	})
}

// Decision.Applied names the Patch rules whose operations applied, with or
// without a trace (the webhook names them when their patch cannot be
// returned): not the ones that did not match or failed.
func TestDecisionApplied(t *testing.T) {
	rule := func(name, kind, path string) string {
		return "apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: " + name + ", namespace: ns1}\nspec:\n  type: Patch\n" +
			"  match: [{select: '$.kind', matchValue: " + kind + "}]\n  patch: [{op: replace, path: '" + path + "', value: '\"v\"'}]\n---\n"
	}
	snap := snapshotOf(t, rule("a", "Pod", "/metadata/name")+rule("b", "Service", "/metadata/name")+
		rule("c", "Pod", "/spec/missing")+rule("d", "Pod", "/metadata/labels/x"))
	obj := object(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns1, labels: {x: v}}\n")
	for _, noTrace := range []bool{false, true} {
		d := evaluate(t, engine.New(engine.Options{NoTrace: noTrace}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: obj})
		if want := []engine.RuleRef{{Kind: "ModRule", Key: "ns1/a"}, {Kind: "ModRule", Key: "ns1/d"}}; !slices.Equal(d.Applied, want) {
			t.Errorf("NoTrace %v: Applied = %v, want %v", noTrace, d.Applied, want)
		}
	}
}

// TestDenialMessage: the one definition of KubeMod's denial message, which
// the webhook, apply, explain and krm print.
func TestDenialMessage(t *testing.T) {
	for _, tt := range []struct {
		rejections []engine.Rejection
		want       string
	}{
		{[]engine.Rejection{{Kind: "ModRule", Rule: "ns1/protect"}}, `operation rejected by the following ModRule(s): ns1/protect`},
		{[]engine.Rejection{{Kind: "ModRule", Rule: "ns1/a", Message: `no "latest"`}, {Kind: "ModRule", Rule: "ns2/b"}},
			`operation rejected by the following ModRule(s): ns1/a: "no \"latest\"",ns2/b`},
	} {
		d := engine.Decision{Rejections: tt.rejections}
		if got := d.DenialMessage(); got != tt.want {
			t.Errorf("DenialMessage() = %q, want %q", got, tt.want)
		}
	}
}

// crossGraph gives every object an incoming edge from team-a and one from
// team-b.
type crossGraph struct{}

func (crossGraph) Edges(context.Context, engine.ObjectRef, map[string]any) ([]any, []any, error) {
	edge := func(ns string) any {
		return map[string]any{"type": "USES_SECRET", "from": map[string]any{"kind": "Pod", "namespace": ns, "name": "p"},
			"to": map[string]any{"kind": "Secret", "namespace": "team-a", "name": "db"}}
	}
	return []any{edge("team-a"), edge("team-b")}, nil, nil
}

// TestEdgesConfined: a ModRule of a namespace sees under
// syntheticRefs.edges only the edges within its namespace; one of the
// cluster-rules namespace sees every edge, in the same review.
func TestEdgesConfined(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: count, namespace: team-a}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Secret}]
  patch:
  - {op: add, path: /metadata/labels/team-edges, value: '"{{ len .Target.syntheticRefs.edges.incoming }}"'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: count, namespace: kubemod-system}
spec:
  type: Patch
  targetNamespaceRegex: '.*'
  match: [{select: '$.kind', matchValue: Secret}]
  patch:
  - {op: add, path: /metadata/labels/cluster-edges, value: '"{{ len .Target.syntheticRefs.edges.incoming }}"'}
`)
	obj := object(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: team-a, labels: {a: b}}\n")
	dec := evaluate(t, engine.New(engine.Options{Graph: crossGraph{}}), snap, engine.Request{Operation: rules.Create, Namespace: "team-a", Object: obj})
	labels, _ := dec.Object.(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["team-edges"] != "1" || labels["cluster-edges"] != "2" {
		t.Errorf("labels %v: want team-edges 1 (its namespace's), cluster-edges 2 (all)", labels)
	}
	if _, ok := dec.Object.(map[string]any)["syntheticRefs"]; ok {
		t.Error("syntheticRefs left in the result")
	}
}
