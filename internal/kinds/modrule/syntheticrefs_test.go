package modrule_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// privilegedGuard is a cluster Reject rule that lets privileged pods only
// into namespaces labelled privileged-allowed=true.
const privilegedGuard = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: privileged-guard, namespace: kubemod-system}
spec:
  type: Reject
  targetNamespaceRegex: '.*'
  rejectMessage: privileged pods need a namespace labelled privileged-allowed=true
  match:
    - select: '$.kind'
      matchValue: Pod
    - select: '$.spec.containers[*].securityContext.privileged'
      matchValue: 'true'
    - select: '$.syntheticRefs.namespace.metadata.labels["privileged-allowed"]'
      matchValue: 'true'
      negate: true
`

const privilegedPod = `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns1}
spec:
  containers:
    - name: a
      image: busybox
      securityContext: {privileged: true}
`

// forgingRules are namespace Patch rules that try to make the guard see a
// forged label: statically (a load error), through a key captured at run
// time, and by replacing the whole object ('$..apiVersion' selects the
// object's own member only, with an empty '..' path: /#0 is the root).
var forgingRules = []struct {
	name, rule string
	loads      bool
}{
	{"static path", `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: forge, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - op: add
      path: /syntheticRefs/namespace/metadata/labels/privileged-allowed
      value: '"true"'
`, false},
	{"captured key", `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: forge, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - op: add
      select: '$[?(@.namespace.metadata)]'
      path: /#0/namespace/metadata/labels/privileged-allowed
      value: '"true"'
`, true},
	{"whole object", `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: forge, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - op: replace
      select: '$..apiVersion'
      path: /#0
      value: |
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns1"},
         "spec": {"containers": [{"name": "a", "image": "busybox", "securityContext": {"privileged": true}}]},
         "syntheticRefs": {"namespace": {"metadata": {"labels": {"privileged-allowed": "true"}}}}}
`, true},
}

// TestSyntheticRefsCannotBeForged: a namespace's Patch rule must not disable
// a cluster Reject rule by writing into syntheticRefs (it did, and the forged
// value was stripped from the output, so nothing showed).
func TestSyntheticRefsCannotBeForged(t *testing.T) {
	for _, tt := range forgingRules {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := source.ParseManifest("rules", []byte(privilegedGuard+"---"+tt.rule))
			if err != nil {
				t.Fatal(err)
			}
			res := source.LoadRules(docs, registry())
			if loaded := len(res.Errors) == 0; loaded != tt.loads {
				t.Fatalf("load errors: %v", res.Errors)
			}
			if !tt.loads {
				var ce *rules.CompileError
				if !errors.As(res.Errors[0], &ce) || ce.Rule != "ns1/forge" || ce.Errors[0].Field != "spec.patch[0].path" {
					t.Errorf("load error: %v", res.Errors[0])
				}
			}
			// A rule that does not load is kept, never evaluated (serve).
			snap := engine.NewSnapshot(res.Rules)
			d := evaluate(t, engine.New(engine.Options{Objects: refs{}}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, privilegedPod)})
			if d.Allowed() {
				t.Fatalf("admitted; trace %+v", d.Trace)
			}
			if tt.loads {
				if tt.name == "captured key" {
					if len(d.Errors) != 1 || d.Errors[0].Field != "spec.patch[0].path" || !errors.Is(d.Errors[0], engine.ErrInput) {
						t.Fatalf("errors: %v", d.Errors)
					}
					// Without a trace the rule reuses its paths' storage:
					// the error must name the path all the same.
					nd := evaluate(t, engine.New(engine.Options{Objects: refs{}, NoTrace: true}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, privilegedPod)})
					want := "the path /syntheticRefs/namespace/metadata/labels/privileged-allowed is under /syntheticRefs"
					for _, e := range []error{d.Errors[0], nd.Errors[0]} {
						if !strings.Contains(e.Error(), want) {
							t.Errorf("error %q, want it to say %q", e, want)
						}
					}
				}
				if _, ok := d.Object.(map[string]any)["syntheticRefs"]; ok {
					t.Error("syntheticRefs left in the object")
				}
			}
		})
	}
}

// TestWholeObjectReplacedByAScalar: a rule replacing the object with a
// non-object fails.
func TestWholeObjectReplacedByAScalar(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch: [{op: replace, select: '$..apiVersion', path: '/#0', value: '"gone"'}]
`)
	d := evaluate(t, engine.New(engine.Options{}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, privilegedPod)})
	if len(d.Errors) != 1 || d.Errors[0].Field != "spec.patch[0].path" || d.Changed() {
		t.Fatalf("errors %v, patch %v", d.Errors, d.Patch)
	}
}

// recordingReader records the references it is asked for; it serves refs'
// objects, or fails with err.
type recordingReader struct {
	asked []engine.ObjectRef
	err   error
}

func (r *recordingReader) Get(ctx context.Context, ref engine.ObjectRef) (map[string]any, error) {
	r.asked = append(r.asked, ref)
	if r.err != nil {
		return nil, r.err
	}
	return refs{}.Get(ctx, ref)
}

// TestSyntheticRefsByReference: the engine reads the namespace and the
// node of an annotated Pod through the ObjectReader by reference, and a
// reader's error is reported against the ref it concerns (errors.Is holds),
// leaving that ref out.
func TestSyntheticRefsByReference(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch: [{op: add, path: /metadata/labels/zone, value: '{{ .Target.syntheticRefs.node.metadata.labels.zone | default "none" }}'}]
`)
	pod := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns1", "labels": {},
	  "annotations": {"ref.kubemod.io/nodename": "node-a"}}}`
	wantAsked := []engine.ObjectRef{{Kind: "Namespace", Name: "ns1"}, {Kind: "Node", Name: "node-a"}}

	r := &recordingReader{}
	d := evaluate(t, engine.New(engine.Options{Objects: r}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, pod)})
	if diff := cmp.Diff(wantAsked, r.asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
	if len(d.Errors) != 0 || len(d.Patch) != 1 || d.Patch[0].Value != "z1" {
		t.Errorf("errors %v, patch %v", d.Errors, d.Patch)
	}

	injected := fmt.Errorf("reading: %w", engine.ErrKindNotServed)
	r = &recordingReader{err: injected}
	d = evaluate(t, engine.New(engine.Options{Objects: r}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, pod)})
	if diff := cmp.Diff(wantAsked, r.asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
	if len(d.Errors) != 2 || d.Errors[0].Field != "syntheticRefs.namespace" || d.Errors[1].Field != "syntheticRefs.node" ||
		!errors.Is(d.Errors[0], engine.ErrKindNotServed) || d.Patch[0].Value != "none" {
		t.Errorf("errors %v, patch %v", d.Errors, d.Patch)
	}
}
