package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKyvernoMutatingPolicyExisting: a MutatingPolicy with
// evaluation.mutateExisting, off at admission, on the real API server:
// when it comes, the operator patches the targets that exist; later, an
// admitted trigger has it patch the existing objects its
// targetMatchConstraints pick, and no other; the trigger is left alone.
func TestKyvernoMutatingPolicyExisting(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	grant(t, c, "modwright-kyverno-cel", kyvernoCELRules...)
	// What kyverno.generateResources would grant for the targets, and the
	// records of the work.
	grant(t, c, "modwright-generate", rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{"modwright.io"}, Resources: []string{"generaterequests"}, Verbs: []string{"get", "list", "create", "delete"}})
	a := cl.startOperator(t, "a", "--kyverno-cel", "--generate-resource", "apps/v1/deployments")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("mpol-existing")})
	web, db := deployment("mpol-existing", "web", "nginx:1.27", false), deployment("mpol-existing", "db", "postgres:17", false)
	create(t, c, web)
	create(t, c, db)
	policy := kinitirasPolicy(t, `
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: restart-on-config
spec:
  evaluation:
    admission: {enabled: false}
    mutateExisting: {enabled: true}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  matchConditions:
  - name: trigger
    expression: "object.metadata.name.startsWith('restart-')"
  targetMatchConditions:
  - name: not-paused
    expression: "!object.spec.?paused.orValue(false)"
  targetMatchConstraints:
    objectSelector: {matchLabels: {app: web}}
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [deployments]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/spec/template/metadata/annotations', value: {'example.com/restart': 'requested'}}]"
`)
	create(t, c, policy)
	if cond := readyCondition(t, c, policy); cond.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", cond.Status, cond.Message)
	}
	annotation := func(name string) string {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "mpol-existing", Name: name}, d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations["example.com/restart"]
	}
	// The policy came: the targets that exist are mutated, trigger or
	// not, as Kyverno's policy controller does.
	eventually(t, 30*time.Second, func() error {
		if got := annotation("web"); got != "requested" {
			return fmt.Errorf("the existing target's annotation %q", got)
		}
		return nil
	})
	// A target created since waits for a trigger; a ConfigMap that is no
	// trigger changes nothing.
	api := deployment("mpol-existing", "api", "nginx:1.27", false)
	api.Labels["app"] = "web"
	create(t, c, api)
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "mpol-existing"}})
	time.Sleep(2 * time.Second)
	if got := annotation("api"); got != "" {
		t.Errorf("a target was patched before any trigger: %q", got)
	}
	trigger := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "restart-now", Namespace: "mpol-existing"}}
	eventually(t, 30*time.Second, func() error {
		if err := c.Create(ctx, trigger.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if got := annotation("api"); got != "requested" {
			return fmt.Errorf("the target's annotation %q", got)
		}
		return nil
	})
	if got := annotation("db"); got != "" {
		t.Errorf("a Deployment that is no target was patched: %q", got)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(trigger), cm); err != nil || len(cm.Annotations)+len(cm.Labels) != 0 {
		t.Errorf("the trigger: %v, %v", cm.ObjectMeta, err)
	}
}
