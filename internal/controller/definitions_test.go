package controller

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/gatekeeper"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/source/cluster"
)

// fixedDefinitions are the rule source's definitions, fixed.
type fixedDefinitions []cluster.Definitions

func (f fixedDefinitions) Definitions() []cluster.Definitions { return f }

const testTemplate = `apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8sowner, uid: t-1, generation: 2}
spec:
  crd: {spec: {names: {kind: K8sOwner}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8sowner
      violation[{"msg": "no owner"}] { not input.review.object.metadata.labels.owner }
`

// TestDefinitionInstaller: the CRD of a template's kind is installed,
// owned by and labeled with the template; the template's status says so;
// a broken template's status has its errors; the CRD of a template gone is
// deleted, a CRD of another's left alone.
func TestDefinitionInstaller(t *testing.T) {
	templateGVK := schema.GroupVersionKind{Group: "templates.gatekeeper.sh", Version: "v1", Kind: "ConstraintTemplate"}
	docs, err := source.ParseManifest("t.yaml", []byte(testTemplate+"---\n"+
		"apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata: {name: k8sbroken, uid: t-2, generation: 1}\nspec: {crd: {spec: {names: {kind: K8sBroken}}}, targets: []}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ms := []*kinds.Manifest{&docs[0], &docs[1]}
	k, errs := gatekeeper.NewKind().WithDefinitions(ms)
	if errs[0] != nil || errs[1] == nil {
		t.Fatalf("compile errors %v", errs)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stale := &apiextensionsv1.CustomResourceDefinition{}
	stale.Name = "k8sold.constraints.gatekeeper.sh"
	stale.Labels = map[string]string{LabelDefinitionGroup: templateGVK.Group, LabelDefinition: "k8sold"}
	foreign := &apiextensionsv1.CustomResourceDefinition{}
	foreign.Name = "widgets.example.io"
	var objs []client.Object
	for _, m := range ms {
		u := &unstructured.Unstructured{Object: m.Object}
		objs = append(objs, u.DeepCopy())
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objs, stale, foreign)...).WithStatusSubresource(objs...).Build()
	d := &DefinitionInstaller{Client: cl, Source: fixedDefinitions{{Kind: k, GVK: templateGVK, Manifests: ms, Errs: errs}}, ID: "pod-a", Log: logr.Discard()}
	if err := d.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "k8sowner.constraints.gatekeeper.sh"}, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Names.Kind != "K8sOwner" || crd.Labels[LabelDefinition] != "k8sowner" || crd.Labels["gatekeeper.sh/constraint"] != "yes" ||
		len(crd.OwnerReferences) != 1 || crd.OwnerReferences[0].UID != "t-1" || crd.OwnerReferences[0].Kind != "ConstraintTemplate" {
		t.Errorf("CRD: kind %s, labels %v, owners %v", crd.Spec.Names.Kind, crd.Labels, crd.OwnerReferences)
	}
	status := func(name string) map[string]any {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(templateGVK)
		if err := cl.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
			t.Fatal(err)
		}
		st, _ := u.Object["status"].(map[string]any)
		return st
	}
	if st := status("k8sowner"); st["created"] != true {
		t.Errorf("status of the template installed: %v", st)
	}
	st := status("k8sbroken")
	pods, _ := st["byPod"].([]any)
	if st["created"] != nil || len(pods) != 1 || pods[0].(map[string]any)["errors"] == nil {
		t.Errorf("status of the broken template: %v", st)
	}
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "k8sbroken.constraints.gatekeeper.sh"}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("the broken template's CRD: %v, want none", err)
	}
	if err := cl.Get(context.Background(), client.ObjectKey{Name: stale.Name}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("the CRD of a template gone: %v, want it deleted", err)
	}
	if err := cl.Get(context.Background(), client.ObjectKey{Name: foreign.Name}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Errorf("a CRD of no definition: %v, want it left alone", err)
	}
}
