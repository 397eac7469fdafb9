package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	policykind "github.com/modwright/modwright/internal/kinds/policy"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// TestCRDValidation: for objects of testdata/crd/widgets.yaml's kind, the
// real kube-apiserver's answer (a dry-run create or update, kubectl's
// strict field validation) and crdschema's are the same, error text
// included.
func TestCRDValidation(t *testing.T) {
	cl := startCluster(t, false)
	ctx := context.Background()
	set := installWidgets(t, cl)
	v := set.For("example.com/v1", "Widget")
	dyn, err := dynamic.NewForConfig(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	obj := func(name, spec string) map[string]any {
		var m map[string]any
		if err := yaml.Unmarshal([]byte("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: "+name+"}\nspec: "+spec), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// text is an answer: its message, or, with several causes (whose
	// order follows Go map iteration on both sides), the reason and the
	// sorted causes.
	text := func(err error) string {
		if err == nil {
			return "admitted"
		}
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) < 2 {
			return err.Error()
		}
		var causes []string
		for _, c := range se.ErrStatus.Details.Causes {
			causes = append(causes, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
		}
		slices.Sort(causes)
		return fmt.Sprintf("%s %d %s", se.ErrStatus.Reason, se.ErrStatus.Code, strings.Join(causes, "; "))
	}
	for _, c := range []struct{ name, spec, old string }{
		{"valid", "{size: small}", ""},
		{"enum", "{size: tiny}", ""},
		{"required", "{}", ""},
		{"object-rule", "{size: small, minReplicas: 5, maxReplicas: 2}", ""},
		{"message-expression", "{size: small, x-mode: fast}", ""},
		{"scalar-rule", "{size: medium, x-mode: warp}", ""},
		{"duplicate-key", "{size: small, ports: [{name: a, port: 2000}, {name: a, port: 8080}]}", ""},
		{"list-rule", "{size: small, ports: [{name: a, port: 80}]}", ""},
		{"set-duplicate", "{size: small, tags: [a, a]}", ""},
		{"bounds", "{size: small, minReplicas: -1, maxReplicas: 101}", ""},
		{"unknown-field", "{size: small, colour: red}", ""},
		{"bad-name", "{size: small}", "name"},
		{"transition", "{size: small}", "{size: large}"},
		{"transition-allowed", "{size: large}", "{size: small}"},
		{"update-invalid", "{size: large, maxReplicas: 500}", "{size: medium}"},
		{"update-unknown-field", "{size: large, colour: red}", "{size: medium}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := c.name
			if c.old == "name" {
				name, c.old = "Bad_Name", ""
			}
			u := &unstructured.Unstructured{Object: obj(name, c.spec)}
			var apiErr error
			var old map[string]any
			if c.old == "" {
				_, apiErr = res.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
			} else {
				old = obj(name, c.old)
				stored, err := createUnvalidated(ctx, res, old)
				if err != nil {
					t.Fatal(err)
				}
				old = stored.Object
				u.SetResourceVersion(stored.GetResourceVersion())
				_, apiErr = res.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
			}
			ours := v.Validate(ctx, u.Object, old, "default")
			if got, want := text(ours.Err(v)), text(apiErr); got != want {
				t.Errorf("modwright:      %s\nkube-apiserver: %s", got, want)
			}
		})
	}
}

// loadPolicies compiles Policies as modwright loads them: the snapshot the
// offline engine evaluates, and the documents.
func loadPolicies(t *testing.T, origin string, src []byte) (*engine.Snapshot, []source.Document) {
	t.Helper()
	docs, err := source.ParseManifest(origin, src)
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, kinds.NewRegistry(policykind.NewPolicyKind()))
	if len(res.Errors) > 0 || len(res.Skipped) > 0 {
		t.Fatalf("load: errors %v, skipped %v", res.Errors, res.Skipped)
	}
	return engine.NewSnapshot(res.Rules), docs
}

// installWidgets installs testdata/crd/widgets.yaml in the cluster and
// returns it as crdschema holds it.
func installWidgets(t *testing.T, cl *cluster) *crdschema.Set {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile("../../testdata/crd/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cl.cfg, envtest.CRDInstallOptions{CRDs: []*apiextv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatal(err)
	}
	var crdMap map[string]any
	if err := yaml.Unmarshal(data, &crdMap); err != nil {
		t.Fatal(err)
	}
	set := crdschema.NewSet()
	if err := set.Add(ctx, crdMap); err != nil {
		t.Fatal(err)
	}
	return set
}

// createUnvalidated stores an old object for an update case.
func createUnvalidated(ctx context.Context, res dynamic.ResourceInterface, obj map[string]any) (*unstructured.Unstructured, error) {
	return res.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
}

// scopeTypedPolicy validates Widgets with scoped CEL validations that hold
// only when self is typed by the CRD's schema (x-mode read as
// self.x__dash__mode, the set tags compared as a set).
const scopeTypedPolicy = `
apiVersion: modwright.io/v1alpha1
kind: ModwrightPolicy
metadata: {name: widgets, namespace: team-a}
spec:
  match:
    resources: [{apiGroups: [example.com], kinds: [Widget]}]
  validations:
  - scope: $.spec
    cel: "has(self.x__dash__mode) && self.tags == ['b', 'a']"
    message: a widget needs a mode and the tags a and b
  - scope: $.spec.ports[*]
    cel: "self.port >= 9000"
    messageExpression: "'port ' + self.name + ' must be 9000 or above'"
`

// TestPolicyScopeTypedByCRD: a Policy's scoped validations of a custom
// resource see self typed by the CRD's schema in the operator (its CRD
// informer; the CRD created after it started) as in `apply --crd`
// (crdschema.Set): the webhook's answers and the offline engine's are the
// same.
func TestPolicyScopeTypedByCRD(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	op := cl.startOperator(t, "a", "--target-resources=widgets.example.com")
	op.waitReady(t)
	cl.lb.add(op.webhook)
	eventually(t, 10*time.Second, func() error {
		// The first write waits for the caBundle the operator injects.
		return cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metaName("team-a")})
	})
	set := installWidgets(t, cl)
	pol := cl.manifests(t, []byte(scopeTypedPolicy))[0]
	if err := cl.c.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	snap, _ := loadPolicies(t, "policy.yaml", []byte(scopeTypedPolicy))
	offline := engine.New(engine.Options{Schemas: set})
	dyn, err := dynamic.NewForConfig(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("team-a")
	for _, c := range []struct{ name, spec, want string }{
		{"typed-admitted", "{size: medium, x-mode: fast, tags: [a, b], ports: [{name: admin, port: 9090}]}", "admitted"},
		{"typed-denied", "{size: medium, x-mode: fast, tags: [b, a], ports: [{name: http, port: 8080}, {name: admin, port: 9090}]}", "port http must be 9000 or above"},
		{"no-mode", "{size: medium, tags: [a, b]}", "a widget needs a mode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: "+c.name+", namespace: team-a}\nspec: "+c.spec), &obj); err != nil {
				t.Fatal(err)
			}
			dec, err := offline.Evaluate(ctx, snap, engine.Request{Operation: rules.Create, Namespace: "team-a", Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			want := "admitted"
			if !dec.Allowed() {
				want = dec.DenialMessage()
			}
			if !strings.Contains(want, c.want) {
				t.Fatalf("offline: %s, want %s", want, c.want)
			}
			// The policy and the CRD reach the operator's caches
			// eventually.
			eventually(t, 20*time.Second, func() error {
				_, err := widgets.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				got := "admitted"
				if err != nil {
					got = err.Error()
				}
				if got != want && !strings.HasSuffix(got, ": "+want) {
					return fmt.Errorf("kube-apiserver: %s\noffline:        %s", got, want)
				}
				return nil
			})
		})
	}
}
