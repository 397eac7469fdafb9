package modrule_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/template"
)

// TestTemplateBounds: a Patch rule whose template exceeds a bound fails as a
// whole and is reported, the other rules still apply, and a Reject rule whose
// rejectMessage exceeds a bound still rejects. The arguments are just past
// each bound: without the bounds the templates run (and the rules apply).
func TestTemplateBounds(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: a-generator, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /metadata/labels/first, value: x}
    - {op: add, path: /metadata/labels/count, value: '{{ len (until 10000000) }}'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: b-loops, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /metadata/labels/loops, value: '{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}done'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: c-deep-value, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /spec/deep, value: '{{ repeat 1001 "[" }}{{ repeat 1001 "]" }}'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: d-good, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /metadata/labels/second, value: '{{ len (until 3) }}-{{ .Target.metadata.name }}'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: e-reject, namespace: ns1}
spec:
  type: Reject
  rejectMessage: '{{ range until 20000 }}x{{ end }}'
  match: [{select: '$.metadata.labels.app', matchValue: web}]
`)
	d := evaluate(t, engine.New(engine.Options{}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: object(t, pod)})
	obj := d.Object.(map[string]any)
	labels := obj["metadata"].(map[string]any)["labels"].(map[string]any)
	for _, l := range []string{"first", "count", "loops"} {
		if _, ok := labels[l]; ok {
			t.Errorf("label %s: a rule that exceeded a bound was applied (in part)", l)
		}
	}
	if _, ok := obj["spec"].(map[string]any)["deep"]; ok {
		t.Error("a value deeper than MaxValueDepth was applied")
	}
	if labels["second"] != "3-p" {
		t.Errorf("the good rule did not apply: %v", labels)
	}
	want := map[string]string{"ns1/a-generator": "MaxList", "ns1/b-loops": "MaxSteps", "ns1/c-deep-value": "MaxValueDepth"}
	if len(d.Errors) != len(want) {
		t.Errorf("errors = %v, want one per bounded rule", d.Errors)
	}
	for _, e := range d.Errors {
		if !errors.Is(e, template.ErrLimit) || want[e.Rule] == "" || !strings.Contains(e.Error(), want[e.Rule]) {
			t.Errorf("error %v: want ErrLimit naming %q", e, want[e.Rule])
		}
	}
	if d.Allowed() || len(d.Rejections) != 1 || d.Rejections[0].Rule != "ns1/e-reject" {
		t.Fatalf("the Reject rule did not reject: %+v", d.Rejections)
	}
	if err := d.Rejections[0].MessageError; !errors.Is(err, template.ErrLimit) || !strings.Contains(err.Error(), "spec.rejectMessage") {
		t.Errorf("rejectMessage error = %v, want ErrLimit naming the field", err)
	}
}

// TestTemplateRangeDepthIsALoadError: a template nesting range too deep is a
// rule load error naming the rule, the field and the position.
func TestTemplateRangeDepthIsALoadError(t *testing.T) {
	docs, err := source.ParseManifest("rules", []byte(`
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: nested, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /metadata/labels/x, value: '{{ range until 2 }}{{ range until 2 }}{{ range until 2 }}{{ range until 2 }}{{ range until 2 }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}'}
`))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, registry())
	if len(res.Errors) != 1 {
		t.Fatalf("errors = %v, want one", res.Errors)
	}
	msg := res.Errors[0].Error()
	for _, s := range []string{"ns1/nested", "spec.patch[0].value", "MaxRangeDepth = 4", ":1:"} {
		if !strings.Contains(msg, s) {
			t.Errorf("load error %q does not contain %q", msg, s)
		}
	}
}
