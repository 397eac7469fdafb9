package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKyvernoGlobalContext runs Kyverno's GlobalContextEntries on the real
// API server: an entry keeping the ConfigMaps of one namespace, with a
// projection, read by a ClusterPolicy's globalReference context entry and
// a ValidatingPolicy's globalContext.Get; the entry's Ready condition; a
// new ConfigMap changes what both admit.
func TestKyvernoGlobalContext(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	grant(t, c, "modwright-kyverno", kyvernoRules...)
	grant(t, c, "modwright-kyverno-cel", kyvernoCELRules...)
	// What kyverno.globalContextRules grants for this entry.
	grant(t, c, "modwright-global-context", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}})
	a := cl.startOperator(t, "a", "--kyverno", "--kyverno-cel")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	for _, ns := range []string{"gctx", "gctx-teams"} {
		create(t, c, &corev1.Namespace{ObjectMeta: metaName(ns)})
	}
	team := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gctx-teams"}, Data: map[string]string{"team": name}}
	}
	create(t, c, team("payments"))
	create(t, c, team("search"))
	for _, doc := range []string{`
apiVersion: kyverno.io/v2
kind: GlobalContextEntry
metadata:
  name: teams
spec:
  kubernetesResource:
    version: v1
    resource: configmaps
    namespace: gctx-teams
  projections:
  - name: names
    jmesPath: "[].data.team"
`, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: known-team
  annotations:
    pod-policies.kyverno.io/autogen-controllers: none
spec:
  validationFailureAction: Enforce
  rules:
  - name: team
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [gctx]
    context:
    - name: teams
      globalReference:
        name: teams.names
    validate:
      message: "{{ request.object.metadata.labels.team }} is not one of {{ teams | sort(@) | join(', ', @) }}"
      deny:
        conditions:
          any:
          - key: "{{ request.object.metadata.labels.team }}"
            operator: AnyNotIn
            value: "{{ teams }}"
`, `
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: known-team-deployments
spec:
  validationActions: [Deny]
  matchConstraints:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: gctx
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: "object.metadata.labels.team in globalContext.Get('teams', 'names')"
    messageExpression: "'unknown team ' + object.metadata.labels.team"
`} {
		create(t, c, kinitirasPolicy(t, doc))
	}
	pod := func(teamName string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + teamName, Namespace: "gctx", Labels: map[string]string{"team": teamName}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	}
	deploy := func(teamName string) *appsv1.Deployment {
		d := deployment("gctx", "d-"+teamName, "nginx:1.27", false)
		d.Labels = map[string]string{"team": teamName}
		return d
	}
	// The entry is kept once its informer has listed the ConfigMaps: until
	// then a read is an error (the policies deny).
	eventually(t, 30*time.Second, func() error {
		if err := c.Create(ctx, pod("payments"), client.DryRunAll); err != nil {
			return err
		}
		return c.Create(ctx, deploy("search"), client.DryRunAll)
	})
	// The leader writes the entry's Ready condition.
	eventually(t, 20*time.Second, func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kyverno.io/v2")
		u.SetKind("GlobalContextEntry")
		if err := c.Get(ctx, client.ObjectKey{Name: "teams"}, u); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		if len(conds) != 1 || conds[0].(map[string]any)["status"] != "True" {
			return fmt.Errorf("conditions %v", conds)
		}
		return nil
	})
	err := c.Create(ctx, pod("billing"), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "billing is not one of payments, search") {
		t.Errorf("a Pod of a team the entry does not hold: %v", err)
	}
	err = c.Create(ctx, deploy("billing"), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "unknown team billing") {
		t.Errorf("a Deployment of a team the entry does not hold: %v", err)
	}
	// A new team: the entry follows its ConfigMaps.
	create(t, c, team("billing"))
	eventually(t, 20*time.Second, func() error {
		if err := c.Create(ctx, pod("billing"), client.DryRunAll); err != nil {
			return fmt.Errorf("the Pod: %w", err)
		}
		if err := c.Create(ctx, deploy("billing"), client.DryRunAll); err != nil {
			return fmt.Errorf("the Deployment: %w", err)
		}
		return nil
	})
}
