package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/translate"
)

// TestCompiledOldSelf: a Policy's scoped validation with oldSelf
// (examples/policies/immutable-images.yaml), compiled to a
// ValidatingAdmissionPolicy, answers UPDATEs on the real kube-apiserver
// as the Policy does offline: a changed image refused with the same
// message, a new container (oldSelf null) and an unchanged one admitted.
func TestCompiledOldSelf(t *testing.T) {
	cl := startCluster(t, false)
	ctx := context.Background()
	src, err := os.ReadFile("../../examples/policies/immutable-images.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, docs := loadPolicies(t, "immutable-images.yaml", src)
	offline := engine.New(engine.Options{})
	compiled := translate.Compile([]translate.Rule{{Kind: docs[0].Kind(), Origin: "immutable-images.yaml", Object: docs[0].Object}}, translate.Options{})
	if len(compiled.Skipped) > 0 || len(compiled.Translated) != 1 {
		t.Fatalf("compile: %+v", compiled.Skipped)
	}
	dyn, err := dynamic.NewForConfig(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ar := func(kind string) dynamic.ResourceInterface {
		return dyn.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: kind})
	}
	for _, o := range compiled.Translated[0].Objects {
		u := &unstructured.Unstructured{Object: o}
		res := "validatingadmissionpolicies"
		if u.GetKind() == "ValidatingAdmissionPolicyBinding" {
			res = "validatingadmissionpolicybindings"
		}
		if _, err := ar(res).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", u.GetName(), err)
		}
	}
	deployments := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("default")
	read := func(path string) map[string]any {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedField(m, "default", "metadata", "namespace")
		return m
	}
	stored, err := deployments.Create(ctx, &unstructured.Unstructured{Object: read("../../testdata/cli/policy/web-v1.yaml")}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withContainers := func(obj map[string]any, edit func(cs []any) []any) map[string]any {
		u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		_ = unstructured.SetNestedSlice(u.Object, edit(cs), "spec", "template", "spec", "containers")
		return u.Object
	}
	// The refusal first: once it comes, the policy is active for the
	// cases that are admitted.
	for _, c := range []struct {
		name string
		obj  map[string]any
		want string // part of the answer
	}{
		{"image changed", read("../../testdata/cli/policy/web-v2.yaml"), "container nginx: the image cannot change (was nginx:1.25.3)"},
		{"container added", withContainers(stored.Object, func(cs []any) []any {
			return append(cs, map[string]any{"name": "sidecar", "image": "envoy:1"})
		}), "admitted"},
		{"replicas only", func() map[string]any {
			u := stored.DeepCopy()
			_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "replicas")
			return u.Object
		}(), "admitted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dec, err := offline.Evaluate(ctx, snap, engine.Request{Operation: rules.Update, Namespace: "default", Object: c.obj, OldObject: stored.Object})
			if err != nil {
				t.Fatal(err)
			}
			want := "admitted"
			if !dec.Allowed() {
				want = dec.Rejections[0].Message
			}
			if !strings.Contains(want, c.want) {
				t.Fatalf("offline: %s, want %s", want, c.want)
			}
			u := &unstructured.Unstructured{Object: c.obj}
			u.SetResourceVersion(stored.GetResourceVersion())
			// The policy is active eventually.
			eventually(t, 30*time.Second, func() error {
				_, err := deployments.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
				got := "admitted"
				if err != nil {
					got = err.Error()
				}
				if want == "admitted" && got != want || want != "admitted" && !strings.HasSuffix(got, "denied request: "+want) {
					return fmt.Errorf("kube-apiserver: %s\noffline:        %s", got, want)
				}
				return nil
			})
		})
	}
}
