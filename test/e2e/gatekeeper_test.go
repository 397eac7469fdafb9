package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// gatekeeperRules is what the chart grants with gatekeeper.enabled.
var gatekeeperRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"mutations.gatekeeper.sh"}, Resources: []string{"assign", "assignmetadata", "modifyset", "assignimage"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"mutations.gatekeeper.sh"}, Resources: []string{"assign/status", "assignmetadata/status", "modifyset/status", "assignimage/status"}, Verbs: []string{"get", "update", "patch"}},
}

// TestGatekeeperMutators runs Gatekeeper's mutators, unchanged, on the real
// API server with the operator's --gatekeeper: their CRDs installed as
// Gatekeeper installs them, the Ready status, and an Assign, an
// AssignMetadata and an AssignImage mutating a Pod as it is created.
func TestGatekeeperMutators(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	if _, err := envtest.InstallCRDs(cl.cfg, envtest.CRDInstallOptions{Paths: []string{"testdata/gatekeeper-mutation-crds.yaml"}}); err != nil {
		t.Fatalf("installing Gatekeeper's mutator CRDs: %v", err)
	}
	ctx := context.Background()
	c := cl.c
	grant(t, c, "modwright-gatekeeper", gatekeeperRules...)
	a := cl.startOperator(t, "a", "--gatekeeper")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("gk")})

	mutators := []client.Object{kinitirasPolicy(t, `
apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata:
  name: no-privilege-escalation
spec:
  applyTo:
  - {groups: [""], kinds: [Pod], versions: [v1]}
  match:
    namespaces: [gk]
  location: "spec.containers[name: *].securityContext.allowPrivilegeEscalation"
  parameters:
    pathTests:
    - {subPath: "spec.containers[name: *].securityContext.allowPrivilegeEscalation", condition: MustNotExist}
    assign: {value: false}
`), kinitirasPolicy(t, `
apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata:
  name: owner
spec:
  match:
    kinds: [{apiGroups: [""], kinds: [Pod]}]
    namespaces: [gk]
  location: metadata.labels.owner
  parameters:
    assign: {fromMetadata: {field: namespace}}
`), kinitirasPolicy(t, `
apiVersion: mutations.gatekeeper.sh/v1
kind: AssignImage
metadata:
  name: mirror
spec:
  applyTo:
  - {groups: [""], kinds: [Pod], versions: [v1]}
  match:
    namespaces: [gk]
  location: "spec.containers[name: *].image"
  parameters:
    assignDomain: mirror.example.com
`)}
	for _, m := range mutators {
		create(t, c, m)
	}
	for _, m := range mutators {
		if cond := readyCondition(t, c, m); cond.Status != metav1.ConditionTrue {
			t.Fatalf("%s: Ready %s: %s", m.GetName(), cond.Status, cond.Message)
		}
	}
	eventually(t, 20*time.Second, func() error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "gk", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			return err
		}
		ctr := p.Spec.Containers[0]
		switch {
		case ctr.Image != "mirror.example.com/nginx:1.27":
			return fmt.Errorf("image %q", ctr.Image)
		case ctr.SecurityContext == nil || ctr.SecurityContext.AllowPrivilegeEscalation == nil || *ctr.SecurityContext.AllowPrivilegeEscalation:
			return fmt.Errorf("securityContext %+v", ctr.SecurityContext)
		case p.Labels["owner"] != "gk" || p.Labels["app"] != "web":
			return fmt.Errorf("labels %v", p.Labels)
		}
		return nil
	})
	// Outside the namespaces the mutators match, nothing changes.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	if err := c.Create(ctx, p, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Containers[0].Image != "nginx:1.27" || p.Labels["owner"] != "" {
		t.Errorf("a Pod in default was mutated: %+v", p)
	}
}
