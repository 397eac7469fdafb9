package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKyvernoExisting runs Kyverno's rules that act on existing objects
// on the real API server: a ClusterPolicy added after its triggers exist
// generates for them (generateExisting) and mutates their targets
// (mutateExistingOnPolicyUpdate), with no admission of any trigger; a
// rule without the flag does nothing to them; a deleted policy's
// synchronized objects go with it, unless orphanDownstreamOnPolicyDelete.
func TestKyvernoExisting(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	grant(t, c, "modwright-kyverno", kyvernoRules...)
	grant(t, c, "modwright-generate", kyvernoGenerateRules...)
	a := cl.startOperator(t, "a", "--kyverno", "--generate-resource", "v1/configmaps")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	// The triggers and the target exist before the policy.
	for _, ns := range []string{"old-a", "old-b"} {
		create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "yes"}}})
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"k": "v"}})
	}
	policy := kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-existing
spec:
  rules:
  - name: defaults
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector: {matchLabels: {team: "yes"}}
    generate:
      generateExisting: true
      apiVersion: v1
      kind: ConfigMap
      name: team-defaults
      namespace: "{{ request.object.metadata.name }}"
      data:
        data: {team: "{{ request.object.metadata.name }}"}
  - name: not-existing
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector: {matchLabels: {team: "yes"}}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: only-new
      namespace: "{{ request.object.metadata.name }}"
      data:
        data: {new: "yes"}
  - name: stamp
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector: {matchLabels: {team: "yes"}}
    mutate:
      mutateExistingOnPolicyUpdate: true
      targets:
      - apiVersion: v1
        kind: ConfigMap
        name: settings
        namespace: "{{ request.object.metadata.name }}"
      patchStrategicMerge:
        metadata:
          labels:
            stamped: "yes"
`)
	create(t, c, policy)
	if cond := readyCondition(t, c, policy); cond.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", cond.Status, cond.Message)
	}
	logs := func() string { return a.log.tail(30) }
	for _, ns := range []string{"old-a", "old-b"} {
		eventually(t, 30*time.Second, func() error {
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-defaults"}, cm); err != nil {
				return err
			}
			if cm.Data["team"] != ns {
				return fmt.Errorf("generated %v", cm.Data)
			}
			target := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, target); err != nil {
				return err
			}
			if target.Labels["stamped"] != "yes" || target.Data["k"] != "v" {
				return fmt.Errorf("target %v %v", target.Labels, target.Data)
			}
			return nil
		}, logs)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "only-new"}, &corev1.ConfigMap{}); err == nil {
			t.Errorf("%s: a rule without generateExisting generated for an existing trigger", ns)
		}
	}

	// A synchronized object goes with its policy, unless the rule orphans
	// it.
	synced := func(name, orphan string) *unstructured.Unstructured {
		return kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: `+name+`
spec:
  rules:
  - name: synced
    match:
      any:
      - resources:
          kinds: [Namespace]
          names: [old-a]
    generate:
      generateExisting: true
      synchronize: true
      orphanDownstreamOnPolicyDelete: `+orphan+`
      apiVersion: v1
      kind: ConfigMap
      name: `+name+`
      namespace: old-a
      data:
        data: {policy: `+name+`}
`)
	}
	withPolicy, orphaned := synced("with-policy", "false"), synced("orphaned", "true")
	create(t, c, withPolicy)
	create(t, c, orphaned)
	for _, name := range []string{"with-policy", "orphaned"} {
		eventually(t, 30*time.Second, func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: "old-a", Name: name}, &corev1.ConfigMap{})
		}, logs)
	}
	for _, p := range []*unstructured.Unstructured{withPolicy, orphaned} {
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "old-a", Name: "with-policy"}, &corev1.ConfigMap{}); err == nil {
			return fmt.Errorf("the synchronized object of a deleted policy is still there")
		}
		return nil
	}, logs)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "old-a", Name: "orphaned"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the object of a rule with orphanDownstreamOnPolicyDelete: %v", err)
	}
}
