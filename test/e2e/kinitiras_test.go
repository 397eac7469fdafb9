package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// kinitirasLabel is the label kinitiras' webhook configuration selects.
const kinitirasLabel = "kinitiras.kcloudlabs.io/webhook"

// kinitirasPolicy is a kinitiras policy as its users write it (YAML).
func kinitirasPolicy(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestKinitiras runs kinitiras' policies, unchanged, on the real API
// server: the three kinds installed, the policy webhook filling
// renderedCue (and refusing a template that does not render), a label
// override, an oversell template, a DELETE protection and a k8s valueRef
// read through the operator's cache.
func TestKinitiras(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	a := cl.startOperator(t, "a")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	// What kinitiras.referenceRules would grant: the Deployments k8s
	// references read.
	create(t, c, &rbacv1.ClusterRole{ObjectMeta: metaName("kinitiras-references"), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}}}})
	create(t, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metaName("kinitiras-references"),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kinitiras-references"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: operatorUser}}})
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("kin")})

	t.Run("label override, renderedCue filled", func(t *testing.T) {
		op := kinitirasPolicy(t, `
apiVersion: policy.kcloudlabs.io/v1alpha1
kind: OverridePolicy
metadata:
  name: add-team
  namespace: kin
spec:
  resourceSelectors:
  - apiVersion: v1
    kind: ConfigMap
    labelSelector:
      matchLabels: {kinitiras.kcloudlabs.io/webhook: enabled}
  overrideRules:
  - targetOperations: [CREATE]
    overriders:
      template:
        type: labels
        operation: add
        path: team
        value: {string: payments}
`)
		create(t, c, op)
		rendered, _, _ := unstructured.NestedSlice(op.Object, "spec", "overrideRules")
		cue, _, _ := unstructured.NestedString(rendered[0].(map[string]any), "overriders", "renderedCue")
		if !strings.Contains(cue, "patches:") || !strings.Contains(cue, "@tag(data)") {
			t.Errorf("renderedCue not filled by the policy webhook:\n%s", cue)
		}
		if cond := readyCondition(t, c, op); cond.Status != metav1.ConditionTrue {
			t.Errorf("Ready: %+v", cond)
		}
		waitLabel(t, c, func() client.Object {
			return configMap("kin", "probe", map[string]string{kinitirasLabel: "enabled"})
		}, "team", "payments")
		if got, err := dryRunLabel(ctx, c, configMap("kin", "other", nil), "team"); err != nil || got != "" {
			t.Errorf("an unselected ConfigMap: label %q, %v", got, err)
		}
		// kinitiras' webhook configuration, which the chart installs,
		// sends it the labeled objects only: a policy without selectors
		// leaves the others alone, as in kinitiras.
		create(t, c, kinitirasPolicy(t, `
apiVersion: policy.kcloudlabs.io/v1alpha1
kind: OverridePolicy
metadata:
  name: everything
  namespace: kin
spec:
  overrideRules:
  - overriders:
      plaintext:
      - {op: add, path: /metadata/labels/seen, value: "yes"}
`))
		eventually(t, 10*time.Second, func() error {
			cm := configMap("kin", "labeled", map[string]string{kinitirasLabel: "enabled"})
			if err := c.Create(ctx, cm, client.DryRunAll); err != nil {
				return err
			}
			if cm.Labels["seen"] != "yes" {
				return errors.New("the labeled ConfigMap was not overridden")
			}
			return nil
		})
		unlabeled := configMap("kin", "unlabeled", nil)
		if err := c.Create(ctx, unlabeled, client.DryRunAll); err != nil || unlabeled.Labels["seen"] != "" {
			t.Errorf("an unlabeled ConfigMap: labels %v, %v", unlabeled.Labels, err)
		}
	})

	t.Run("a template that does not render is refused", func(t *testing.T) {
		bad := kinitirasPolicy(t, `
apiVersion: policy.kcloudlabs.io/v1alpha1
kind: ClusterOverridePolicy
metadata:
  name: bad-factor
spec:
  overrideRules:
  - overriders:
      template:
        type: resourcesOversell
        operation: replace
        resourcesOversell: {cpuFactor: "0.5", memoryFactor: half}
`)
		err := c.Create(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), `memoryFactor: "half" is not a number`) {
			t.Errorf("create: %v", err)
		}
	})

	t.Run("oversell template", func(t *testing.T) {
		create(t, c, kinitirasPolicy(t, `
apiVersion: policy.kcloudlabs.io/v1alpha1
kind: ClusterOverridePolicy
metadata:
  name: oversell
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    namespace: kin
    name: web
  overrideRules:
  - targetOperations: [CREATE]
    overriders:
      template:
        type: resourcesOversell
        operation: replace
        resourcesOversell: {cpuFactor: "0.5", memoryFactor: "0.25"}
`))
		eventually(t, 10*time.Second, func() error {
			d := deployment("kin", "web", "nginx", false)
			d.Labels[kinitirasLabel] = "enabled"
			d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
			if err := c.Create(ctx, d, client.DryRunAll); err != nil {
				return err
			}
			req := d.Spec.Template.Spec.Containers[0].Resources.Requests
			if cpu, mem := req.Cpu().String(), req.Memory().Value(); cpu != "1" || mem != 256<<20 {
				return errors.New("requests " + cpu + ", " + req.Memory().String() + "; want 1 CPU and 256Mi")
			}
			return nil
		})
	})

	t.Run("DELETE protection", func(t *testing.T) {
		create(t, c, kinitirasPolicy(t, `
apiVersion: policy.kcloudlabs.io/v1alpha1
kind: ClusterValidatePolicy
metadata:
  name: no-delete
spec:
  resourceSelectors:
  - apiVersion: v1
    kind: ConfigMap
  validateRules:
  - targetOperations: [DELETE]
    template:
      type: condition
      condition:
        cond: Exist
        message: cannot delete this
        dataRef: {from: current, path: /metadata/annotations/no-delete}
`))
		kept := configMap("kin", "kept", map[string]string{kinitirasLabel: "enabled"})
		kept.Annotations = map[string]string{"no-delete": "true"}
		create(t, c, kept)
		gone := configMap("kin", "gone", map[string]string{kinitirasLabel: "enabled"})
		create(t, c, gone)
		eventually(t, 10*time.Second, func() error {
			err := c.Delete(ctx, kept.DeepCopy(), client.DryRunAll)
			if err == nil {
				return errors.New("a protected ConfigMap was deleted (dry run)")
			}
			if !strings.Contains(err.Error(), "cannot delete this") {
				t.Fatalf("denial: %v", err)
			}
			return nil
		})
		if err := c.Delete(ctx, gone); err != nil {
			t.Errorf("an unprotected ConfigMap: %v", err)
		}
	})

	t.Run("k8s valueRef", func(t *testing.T) {
		d := deployment("kin", "api", "nginx", false)
		d.Labels["team"] = "checkout"
		create(t, c, d)
		create(t, c, kinitirasPolicy(t, `
apiVersion: policy.kcloudlabs.io/v1alpha1
kind: ClusterOverridePolicy
metadata:
  name: team-from-deployment
spec:
  resourceSelectors:
  - apiVersion: v1
    kind: ConfigMap
    namespace: kin
  overrideRules:
  - targetOperations: [CREATE]
    overriders:
      template:
        type: labels
        operation: add
        path: owner-team
        valueRef:
          from: k8s
          path: /metadata/labels/team
          k8s:
            apiVersion: apps/v1
            kind: Deployment
            namespace: "{{metadata.namespace}}"
            name: "{{metadata.annotations.deployment}}"
`))
		waitLabel(t, c, func() client.Object {
			cm := configMap("kin", "api-settings", map[string]string{kinitirasLabel: "enabled"})
			cm.Annotations = map[string]string{"deployment": "api"}
			return cm
		}, "owner-team", "checkout")
	})
}
