package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// gatekeeperRules is what the chart grants with gatekeeper.enabled.
var gatekeeperRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"mutations.gatekeeper.sh"}, Resources: []string{"assign", "assignmetadata", "modifyset", "assignimage"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"mutations.gatekeeper.sh"}, Resources: []string{"assign/status", "assignmetadata/status", "modifyset/status", "assignimage/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"templates.gatekeeper.sh"}, Resources: []string{"constrainttemplates"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"templates.gatekeeper.sh"}, Resources: []string{"constrainttemplates/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"constraints.gatekeeper.sh"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"config.gatekeeper.sh"}, Resources: []string{"configs"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"syncset.gatekeeper.sh"}, Resources: []string{"syncsets"}, Verbs: []string{"get", "list", "watch"}},
}

// installGatekeeperCRDs installs the CRDs Gatekeeper installs for its
// templates and mutators.
func installGatekeeperCRDs(t *testing.T, cl *cluster) {
	t.Helper()
	if _, err := envtest.InstallCRDs(cl.cfg, envtest.CRDInstallOptions{Paths: []string{"testdata/gatekeeper-mutation-crds.yaml", "testdata/gatekeeper-crds.yaml"}}); err != nil {
		t.Fatalf("installing Gatekeeper's CRDs: %v", err)
	}
}

const requiredLabelsTemplate = `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata:
  name: k8srequiredlabels
spec:
  crd:
    spec:
      names:
        kind: K8sRequiredLabels
      validation:
        openAPIV3Schema:
          type: object
          properties:
            labels:
              type: array
              items: {type: string}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8srequiredlabels

      violation[{"msg": msg, "details": {"missing_labels": missing}}] {
        provided := {label | input.review.object.metadata.labels[label]}
        required := {label | label := input.parameters.labels[_]}
        missing := required - provided
        count(missing) > 0
        msg := sprintf("you must provide labels: %v", [missing])
      }
`

const uniqueHostTemplate = `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata:
  name: k8suniqueingresshost
spec:
  crd:
    spec:
      names:
        kind: K8sUniqueIngressHost
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8suniqueingresshost

      identical(obj, review) {
        obj.metadata.namespace == review.object.metadata.namespace
        obj.metadata.name == review.object.metadata.name
      }

      violation[{"msg": msg}] {
        input.review.kind.kind == "Ingress"
        host := input.review.object.spec.rules[_].host
        other := data.inventory.namespace[_][_]["Ingress"][_]
        other.spec.rules[_].host == host
        not identical(other, input.review)
        msg := sprintf("ingress host conflicts with an existing ingress <%v>", [host])
      }
`

// TestGatekeeperConstraints runs Gatekeeper's templates and constraints,
// unchanged, on the real API server with the operator's --gatekeeper: the
// template's constraint CRD installed by the operator and the template's
// status; each constraint's status (enforced, or why not); a violating
// object denied with Gatekeeper's message; dryrun
// admits and the audit lists the violation in the constraint's status; a
// broken template's errors in its status; a referential template reading
// the inventory the Config syncs; the CRD deleted with its template.
func TestGatekeeperConstraints(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	installGatekeeperCRDs(t, cl)
	ctx := context.Background()
	c := cl.c
	grant(t, c, "modwright-gatekeeper", gatekeeperRules...)
	grant(t, c, "modwright-audit",
		rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"wgpolicyk8s.io"}, Resources: []string{"policyreports", "clusterpolicyreports"}, Verbs: []string{"get", "list", "create", "update", "delete"}})
	a := cl.startOperator(t, "a", "--gatekeeper", "--audit", "--audit-interval", "1h")
	a.waitReady(t)
	cl.lb.add(a.webhook)

	template := kinitirasPolicy(t, requiredLabelsTemplate)
	create(t, c, template)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	eventually(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: "k8srequiredlabels.constraints.gatekeeper.sh"}, crd); err != nil {
			return err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD not established: %v", crd.Status.Conditions)
	})
	if crd.Spec.Scope != apiextensionsv1.ClusterScoped || crd.Spec.Names.Kind != "K8sRequiredLabels" || crd.Labels["gatekeeper.sh/constraint"] != "yes" ||
		len(crd.OwnerReferences) != 1 || crd.OwnerReferences[0].Name != "k8srequiredlabels" {
		t.Errorf("constraint CRD: scope %s, kind %s, labels %v, owners %v", crd.Spec.Scope, crd.Spec.Names.Kind, crd.Labels, crd.OwnerReferences)
	}
	eventually(t, 30*time.Second, func() error {
		got := getUnstructured(t, c, template)
		created, _, _ := unstructured.NestedBool(got.Object, "status", "created")
		pods, _, _ := unstructured.NestedSlice(got.Object, "status", "byPod")
		if !created || len(pods) != 1 || pods[0].(map[string]any)["errors"] != nil {
			return fmt.Errorf("template status %v", got.Object["status"])
		}
		return nil
	})

	constraint := kinitirasPolicy(t, `
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata:
  name: ns-must-have-owner
spec:
  match:
    kinds:
    - apiGroups: [""]
      kinds: [Namespace]
    labelSelector:
      matchLabels: {e2e: gatekeeper}
  parameters:
    labels: [owner]
`)
	create(t, c, constraint)
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": "gatekeeper"}}}
	}
	eventually(t, 30*time.Second, func() error {
		err := c.Create(ctx, ns("no-owner"), client.DryRunAll)
		if err == nil {
			return errors.New("a Namespace without the owner label was admitted")
		}
		if want := `[ns-must-have-owner] you must provide labels: {"owner"}`; !strings.Contains(err.Error(), want) {
			return fmt.Errorf("denied with %q, want %q in it", err, want)
		}
		return nil
	})
	enforced := func(obj client.Object) (bool, []any, error) {
		got := getUnstructured(t, c, obj)
		pods, _, _ := unstructured.NestedSlice(got.Object, "status", "byPod")
		if len(pods) != 1 {
			return false, nil, fmt.Errorf("constraint status %v", got.Object["status"])
		}
		pod := pods[0].(map[string]any)
		errs, _ := pod["errors"].([]any)
		return pod["enforced"] == true, errs, nil
	}
	eventually(t, 30*time.Second, func() error {
		ok, errs, err := enforced(constraint)
		if err == nil && (!ok || len(errs) > 0) {
			err = fmt.Errorf("not enforced: %v", errs)
		}
		return err
	})
	// A constraint modwright refuses (the API server takes it): its
	// status says why.
	bogus := kinitirasPolicy(t, `
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata:
  name: bogus-action
spec:
  enforcementAction: bogus
`)
	create(t, c, bogus)
	eventually(t, 30*time.Second, func() error {
		ok, errs, err := enforced(bogus)
		if err != nil {
			return err
		}
		if ok || len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]), "must be deny, dryrun, warn or scoped") ||
			errs[0].(map[string]any)["location"] != "spec.enforcementAction" {
			return fmt.Errorf("enforced %v, errors %v", ok, errs)
		}
		return nil
	})
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "with-owner", Labels: map[string]string{"e2e": "gatekeeper", "owner": "me"}}}, client.DryRunAll); err != nil {
		t.Errorf("a Namespace with the owner label: %v", err)
	}

	// dryrun admits; the audit counts the violation in the constraint's status.
	patchSpec(t, c, constraint, map[string]any{"enforcementAction": "dryrun"})
	eventually(t, 30*time.Second, func() error { return c.Create(ctx, ns("no-owner")) })
	eventually(t, 60*time.Second, func() error {
		got := getUnstructured(t, c, constraint)
		n, _, _ := unstructured.NestedInt64(got.Object, "status", "totalViolations")
		vs, _, _ := unstructured.NestedSlice(got.Object, "status", "violations")
		if n != 1 || len(vs) != 1 {
			return fmt.Errorf("constraint status %v, want totalViolations 1 and one violation", got.Object["status"])
		}
		want := map[string]any{"enforcementAction": "dryrun", "group": "", "version": "v1", "kind": "Namespace", "name": "no-owner",
			"message": `you must provide labels: {"owner"}`}
		if diff := cmp.Diff(want, vs[0]); diff != "" {
			t.Errorf("status.violations[0] (-want +got):\n%s", diff)
		}
		return nil
	})

	// A broken template: its errors in its status, by Gatekeeper's codes.
	broken := kinitirasPolicy(t, strings.NewReplacer("k8srequiredlabels", "k8sbroken", "K8sRequiredLabels", "K8sBroken", "count(missing) > 0", "count(missing) >").Replace(requiredLabelsTemplate))
	create(t, c, broken)
	eventually(t, 30*time.Second, func() error {
		got := getUnstructured(t, c, broken)
		pods, _, _ := unstructured.NestedSlice(got.Object, "status", "byPod")
		if len(pods) != 1 {
			return fmt.Errorf("template status %v", got.Object["status"])
		}
		errs, _ := pods[0].(map[string]any)["errors"].([]any)
		if len(errs) == 0 || errs[0].(map[string]any)["code"] != "ingest_error" {
			return fmt.Errorf("template status %v, want an ingest_error", got.Object["status"])
		}
		return nil
	})
	if err := c.Get(ctx, client.ObjectKey{Name: "k8sbroken.constraints.gatekeeper.sh"}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("the broken template's CRD: %v, want none", err)
	}

	t.Run("a referential template reads the synced inventory", func(t *testing.T) {
		create(t, c, &corev1.Namespace{ObjectMeta: metaName("gatekeeper-system")})
		create(t, c, kinitirasPolicy(t, `
apiVersion: config.gatekeeper.sh/v1alpha1
kind: Config
metadata:
  name: config
  namespace: gatekeeper-system
spec:
  sync:
    syncOnly:
    - {group: networking.k8s.io, version: v1, kind: Ingress}
  match:
  - excludedNamespaces: ["excluded-*"]
    processes: ["sync"]
  - excludedNamespaces: ["exempt-*"]
    processes: ["webhook"]
`))
		create(t, c, kinitirasPolicy(t, uniqueHostTemplate))
		create(t, c, kinitirasPolicy(t, `
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sUniqueIngressHost
metadata:
  name: unique-ingress-host
spec:
  match:
    kinds:
    - apiGroups: [networking.k8s.io]
      kinds: [Ingress]
`))
		ingress := func(ns, name, host string) *networkingv1.Ingress {
			return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}}}}
		}
		for _, ns := range []string{"team-a", "team-b", "excluded-c", "exempt-d"} {
			create(t, c, &corev1.Namespace{ObjectMeta: metaName(ns)})
		}
		create(t, c, ingress("team-a", "shop", "shop.example.com"))
		create(t, c, ingress("excluded-c", "blog", "blog.example.com"))
		eventually(t, 30*time.Second, func() error {
			err := c.Create(ctx, ingress("team-b", "shop", "shop.example.com"), client.DryRunAll)
			if err == nil {
				return errors.New("an Ingress whose host another Ingress has was admitted")
			}
			if want := "[unique-ingress-host] ingress host conflicts with an existing ingress <shop.example.com>"; !strings.Contains(err.Error(), want) {
				return fmt.Errorf("denied with %q, want %q in it", err, want)
			}
			return nil
		})
		// Another host, or the host of an Ingress the Config keeps out of
		// the sync, is admitted.
		for _, host := range []string{"cart.example.com", "blog.example.com"} {
			if err := c.Create(ctx, ingress("team-b", "other", host), client.DryRunAll); err != nil {
				t.Errorf("an Ingress of host %s: %v", host, err)
			}
		}
		// A namespace the Config exempts from the webhook is not reviewed.
		if err := c.Create(ctx, ingress("exempt-d", "shop", "shop.example.com"), client.DryRunAll); err != nil {
			t.Errorf("an Ingress in a namespace exempt from the webhook: %v", err)
		}
	})

	// Deleting the template deletes its CRD (and with it the constraints).
	if err := c.Delete(ctx, template); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		err := c.Get(ctx, client.ObjectKey{Name: "k8srequiredlabels.constraints.gatekeeper.sh"}, &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the CRD of a deleted template is still there (%v)", err)
	})
}

// TestGatekeeperMutators runs Gatekeeper's mutators, unchanged, on the real
// API server with the operator's --gatekeeper: their CRDs installed as
// Gatekeeper installs them, the Ready status, and an Assign, an
// AssignMetadata and an AssignImage mutating a Pod as it is created.
func TestGatekeeperMutators(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	installGatekeeperCRDs(t, cl)
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

// getUnstructured reads obj as it is stored now.
func getUnstructured(t *testing.T, c client.Client, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// patchSpec merges fields into obj's spec.
func patchSpec(t *testing.T, c client.Client, obj client.Object, fields map[string]any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": fields})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	if err := c.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}
