package cluster_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/gatekeeper"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/source/cluster"
)

const testTemplate = `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8srequiredlabels, uid: t-1, generation: 1}
spec:
  crd:
    spec:
      names: {kind: K8sRequiredLabels}
      validation:
        openAPIV3Schema:
          type: object
          properties:
            labels: {type: array, items: {type: string}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8srequiredlabels
      violation[{"msg": msg}] {
        l := input.parameters.labels[_]
        not input.review.object.metadata.labels[l]
        msg := sprintf("MSG %v", [l])
      }
`

const testConstraint = `
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: owner, uid: c-1, generation: 1}
spec:
  match:
    kinds: [{apiGroups: [""], kinds: [Namespace]}]
  parameters: {labels: [owner]}
`

// TestRuleSourceDefinitions: the rule source watches the definitions of a
// kinds.Stored kind (ConstraintTemplates), watches the kinds they define,
// compiles their rules against them, again when a definition gets a new
// generation (not on a status change), and drops the rules of a kind no
// definition defines any more.
func TestRuleSourceDefinitions(t *testing.T) {
	cl := fake.NewClientBuilder().WithScheme(newRuleScheme(t)).Build()
	c, _ := newTestCache(newScheme(t), cl, true)
	templateGVK := schema.GroupVersionKind{Group: "templates.gatekeeper.sh", Version: "v1", Kind: "ConstraintTemplate"}
	constraintGVK := schema.GroupVersionKind{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Kind: "K8sRequiredLabels"}
	templates := controllertest.NewFakeInformer(controllertest.Synced)
	constraints := controllertest.NewFakeInformer(controllertest.Synced)
	c.InformersByGVK[templateGVK] = templates
	c.InformersByGVK[constraintGVK] = constraints
	store := &source.Store{}
	var defsChanged atomic.Int32
	src := &cluster.RuleSource{Cache: c, Store: store, Kinds: kinds.NewRegistry(modrule.NewKind(clusterRulesNS), gatekeeper.NewKind()),
		Log: logr.Discard(), OnDefinitions: func() { defsChanged.Add(1) }, RetryDelay: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		receive(t, "Start to return", done)
		if live := c.liveHandlers(); len(live) != 0 {
			t.Errorf("%d event handlers left registered", len(live))
		}
	})
	receive(t, "a handler", c.registered)
	receive(t, "the other handler", c.registered)
	eventually(t, "Synced()", src.Synced)

	obj := func(text string) *unstructured.Unstructured {
		t.Helper()
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	tmpl := obj(testTemplate)
	if err := cl.Create(ctx, tmpl.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	templates.Add(tmpl)
	receive(t, "the constraint kind's handler", c.registered)
	eventually(t, "OnDefinitions", func() bool { return defsChanged.Load() > 0 })
	defs := src.Definitions()
	if len(defs) != 1 || len(defs[0].Manifests) != 1 || defs[0].Errs[0] != nil {
		t.Fatalf("Definitions() = %+v", defs)
	}
	if d := defs[0].Kind.(kinds.Defining).Defined(); len(d) != 1 || d[0].Kind != "K8sRequiredLabels" || d[0].UID != "t-1" || d[0].CRD == nil {
		t.Errorf("Defined() = %+v", d)
	}

	con := obj(testConstraint)
	if err := cl.Create(ctx, con.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	constraints.Add(con)
	conID := cluster.RuleID{Kind: "K8sRequiredLabels", Key: "owner", Group: "constraints.gatekeeper.sh"}
	var first engine.Rule
	eventually(t, "the constraint to be compiled", func() bool {
		got, ok := src.Compiled(conID, "c-1", 1)
		first = got.Rule
		return ok && got.Err == nil && got.Rule != nil
	})
	eventually(t, "the constraint to be served", func() bool { return ruleByKey(store.Current(), "owner") == first })
	deny := func() string {
		d, err := engine.New(engine.Options{}).Evaluate(ctx, store.Current(), engine.Request{Operation: "CREATE",
			Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		return d.DenialMessage()
	}
	if got := deny(); got != "[owner] MSG owner" {
		t.Errorf("denial %q", got)
	}

	// A status change of the template: nothing is compiled again.
	before := defsChanged.Load()
	withStatus := tmpl.DeepCopy()
	withStatus.Object["status"] = map[string]any{"created": true}
	templates.Update(tmpl, withStatus)
	// A new generation: the constraint compiles against it.
	next := withStatus.DeepCopy()
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(templateGVK)
	if err := cl.Get(ctx, types.NamespacedName{Name: "k8srequiredlabels"}, stored); err != nil {
		t.Fatal(err)
	}
	next.SetResourceVersion(stored.GetResourceVersion())
	next.SetGeneration(2)
	targets, _, _ := unstructured.NestedSlice(next.Object, "spec", "targets")
	tg := targets[0].(map[string]any)
	tg["rego"] = strings.ReplaceAll(tg["rego"].(string), "MSG", "NEW")
	if err := unstructured.SetNestedSlice(next.Object, targets, "spec", "targets"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Update(ctx, next.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	templates.Update(withStatus, next)
	eventually(t, "the constraint to be compiled again", func() bool {
		got, ok := src.Compiled(conID, "c-1", 1)
		return ok && got.Rule != nil && got.Rule != first && ruleByKey(store.Current(), "owner") == got.Rule
	})
	if got := deny(); got != "[owner] NEW owner" {
		t.Errorf("denial after the template changed: %q", got)
	}
	if n := defsChanged.Load() - before; n != 1 {
		t.Errorf("OnDefinitions called %d times for a status change and a new generation, want 1", n)
	}

	// The template gone: its kind is no longer watched, its constraint not served.
	if err := cl.Delete(ctx, next.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	templates.Delete(next)
	eventually(t, "the constraint to be dropped", func() bool { return ruleByKey(store.Current(), "owner") == nil })
	eventually(t, "the constraint kind's handler to be removed", func() bool { return len(c.liveHandlers()) == 2 })
}
