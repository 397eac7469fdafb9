package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/controller"
)

// TestInstallNeverLocks (issue 28, item 11): the install never makes the
// cluster's writes depend on a modwright that does not answer. With the
// bundle applied and no operator running (an image that cannot be
// pulled), a Namespace and a Pod in kube-system are created; the dragnet
// is Ignore, not yet armed, in the mutating and the validating
// configuration. Once a replica is ready, the leader arms both
// (failurePolicy Fail, modwright.io/armed "true"); with every replica
// gone, a ConfigMap in a tenant's namespace is then refused (Fail), while
// kube-system and the release's own namespace never go through the
// webhook.
func TestInstallNeverLocks(t *testing.T) {
	cl := startCluster(t, true)
	ctx := context.Background()
	c := cl.c
	// dragnet is the dragnet's failure policy and armed annotation in the
	// mutating and the validating configuration, which must agree.
	dragnet := func() (admissionregv1.FailurePolicyType, string, error) {
		var mw admissionregv1.MutatingWebhookConfiguration
		var vw admissionregv1.ValidatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: "modwright"}, &mw); err != nil {
			return "", "", err
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "modwright"}, &vw); err != nil {
			return "", "", err
		}
		var mp, vp admissionregv1.FailurePolicyType
		for _, w := range mw.Webhooks {
			if w.Name == dragnetWebhook && w.FailurePolicy != nil {
				mp = *w.FailurePolicy
			}
		}
		for _, w := range vw.Webhooks {
			if w.Name == dragnetWebhook && w.FailurePolicy != nil {
				vp = *w.FailurePolicy
			}
		}
		ma, va := mw.Annotations[controller.ArmedAnnotation], vw.Annotations[controller.ArmedAnnotation]
		if mp == "" || mp != vp || ma != va {
			return "", "", fmt.Errorf("mutating dragnet %q (armed %q), validating %q (armed %q)", mp, ma, vp, va)
		}
		return mp, ma, nil
	}
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	}

	t.Run("without the operator", func(t *testing.T) {
		policy, armed, err := dragnet()
		if err != nil || policy != admissionregv1.Ignore || armed != "false" {
			t.Fatalf("installed dragnet: policy %q, armed %q, %v; want Ignore, not armed", policy, armed, err)
		}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}); err != nil {
			t.Errorf("creating a Namespace with no replica running: %v", err)
		}
		eventually(t, 30*time.Second, func() error {
			return c.Get(ctx, client.ObjectKey{Name: "kube-system"}, &corev1.Namespace{})
		})
		if err := c.Create(ctx, pod("kube-system", "before")); err != nil {
			t.Errorf("creating a Pod in kube-system with no replica running: %v", err)
		}
		if err := c.Create(ctx, configMap("fresh", "before", nil)); err != nil {
			t.Errorf("creating a ConfigMap with no replica running, before arming: %v", err)
		}
	})

	cl.installCRDs(t)
	a := cl.startOperator(t, "a")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	t.Run("armed once a replica is ready", func(t *testing.T) {
		eventually(t, 30*time.Second, func() error {
			policy, armed, err := dragnet()
			if err != nil {
				return err
			}
			if policy != admissionregv1.Fail || armed != "true" {
				return fmt.Errorf("dragnet policy %q, armed %q", policy, armed)
			}
			return nil
		}, func() string { return a.log.tail(20) })
	})
	a.stop(t)
	cl.lb.remove(a.webhook)
	t.Run("armed, every replica gone", func(t *testing.T) {
		if err := c.Create(ctx, configMap("fresh", "after", nil)); err == nil {
			t.Error("a ConfigMap was admitted with the dragnet armed (Fail) and no replica")
		}
		if err := c.Create(ctx, pod("kube-system", "after")); err != nil {
			t.Errorf("a Pod in kube-system with the dragnet armed and no replica: %v", err)
		}
		if err := c.Create(ctx, configMap(operatorNS, "after", nil)); err != nil {
			t.Errorf("a ConfigMap in the release's namespace with the dragnet armed and no replica: %v", err)
		}
	})
}
