package policy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// TestMutateDirect: a Policy's lone CEL JSONPatch is applied to the
// engine's document directly when the engine keeps no trace
// (mutateDirect) and through a working copy and its difference when it
// does; both give the same patch, the same object and the same errors,
// whether the fast path takes the operations, they fail on the document
// (a replace of a missing member: json-patch v4's add), a test fails or
// holds, a value does not fit its Go type, or the object has a
// last-applied configuration the operations are repeated on.
func TestMutateDirect(t *testing.T) {
	deployment := benchObject(t, false) // with a last-applied configuration
	bare := withoutLastApplied(deployment)
	custom := map[string]any{"apiVersion": "example.com/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "nginx-deployment", "namespace": benchNS}, "spec": map[string]any{"replicas": int64(1)}}
	patches := map[string]string{
		"test, replace, add":         `JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'nginx'}, JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: 8080}, JSONPatch{op: 'add', path: '/metadata/labels/p', value: object.metadata.name + '-x'}`,
		"a test that fails":          `JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'other'}, JSONPatch{op: 'add', path: '/metadata/labels/p', value: 'x'}`,
		"a test after an edit":       `JSONPatch{op: 'add', path: '/metadata/labels/p', value: 'x'}, JSONPatch{op: 'test', path: '/metadata/labels/p', value: 'x'}`,
		"an edit, a test apart":      `JSONPatch{op: 'add', path: '/metadata/labels/p', value: 'x'}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'nginx'}, JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: 8080}`,
		"an edit, a test that fails": `JSONPatch{op: 'add', path: '/metadata/labels/p', value: 'x'}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'other'}`,
		"an insert, a test moved":    `JSONPatch{op: 'add', path: '/spec/template/spec/containers/0', value: {'name': 'c', 'image': 'i'}}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/1/name', value: 'nginx'}`,
		"replace a missing member":   `JSONPatch{op: 'replace', path: '/metadata/labels/missing', value: 'x'}`,
		"add under a missing one":    `JSONPatch{op: 'add', path: '/spec/missing/deeper', value: 'x'}`,
		"remove and append":          `JSONPatch{op: 'remove', path: '/spec/template/spec/containers/0/ports'}, JSONPatch{op: 'add', path: '/spec/template/spec/containers/-', value: {'name': 'sidecar', 'image': 'busybox'}}`,
		"a value of the wrong type":  `JSONPatch{op: 'replace', path: '/spec/replicas', value: 'three'}`,
		"an index out of range":      `JSONPatch{op: 'add', path: '/spec/template/spec/containers/5', value: {'name': 'x'}}`,
		"the same value again":       `JSONPatch{op: 'replace', path: '/spec/replicas', value: object.spec.replicas}`,
	}
	objects := map[string]map[string]any{"with last-applied": deployment, "without": bare, "custom kind": custom}
	// An engine without trace reused by every case: what one evaluation
	// leaves in the storage the Policies recycle (cel.PatchStorage) must
	// change nothing of the next.
	reused := engine.New(engine.Options{NoTrace: true})
	for pname, ops := range patches {
		yaml := fmt.Sprintf("apiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata:\n  name: p\n  namespace: %s\nspec:\n  mutations:\n  - jsonPatch: %q\n", benchNS, "["+ops+"]")
		snap := benchLoad(t, yaml)
		for oname, obj := range objects {
			t.Run(strings.ReplaceAll(pname+"/"+oname, " ", "_"), func(t *testing.T) {
				req := engine.Request{Operation: rules.Create, Namespace: benchNS, Name: "nginx-deployment",
					Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: obj}
				if oname == "custom kind" {
					req.Kind = engine.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Deployment"}
				}
				decide := func(eng *engine.Engine) (string, []string) {
					d, err := eng.Evaluate(context.Background(), snap, req)
					if err != nil { // the rule failed: its failure policy is Fail
						return "", []string{err.Error()}
					}
					var errs []string
					for _, e := range d.Errors {
						errs = append(errs, e.Error())
					}
					b, err := value.AppendJSON(nil, d.Object)
					if err != nil {
						t.Fatal(err)
					}
					return string(b), errs
				}
				viaDiff, diffErrs := decide(engine.New(engine.Options{}))
				for name, eng := range map[string]*engine.Engine{"a new engine": engine.New(engine.Options{NoTrace: true}), "the reused engine": reused} {
					direct, directErrs := decide(eng)
					if d := cmp.Diff(viaDiff, direct); d != "" {
						t.Errorf("%s: object (-through the difference +direct):\n%s", name, d)
					}
					if d := cmp.Diff(diffErrs, directErrs); d != "" {
						t.Errorf("%s: errors (-through the difference +direct):\n%s", name, d)
					}
				}
			})
		}
	}
}
