package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestCompileNativeKyverno: with --compile-native and --kyverno-cel, a
// Kyverno ValidatingPolicy that translates exactly runs in the API
// server as its ValidatingAdmissionPolicy (kyverno-vpol-NAME: the refusal
// comes from it), and says so; one a trusted PolicyException names stays
// in the webhook (the API server's policies know no exceptions) until the
// exception goes.
func TestCompileNativeKyverno(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	grant(t, c, "modwright-kyverno-cel", append(kyvernoCELRules,
		rbacv1.PolicyRule{APIGroups: []string{"policies.kyverno.io"}, Resources: []string{"policyexceptions"}, Verbs: []string{"get", "list", "watch"}},
		// What the chart grants with compileNative: true.
		rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"},
			Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"}})...)
	// Placed natively: the excepted policy, left to the webhook and
	// cluster-wide, would keep the other there too, faster (TestCompileNative).
	a := cl.startOperator(t, "a", "--compile-native", "--compile-native-placement=native", "--kyverno-cel", "--kyverno-exception-namespace=native-exceptions")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("native-kyverno")})
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("native-exceptions")})
	vpol := func(name, expr, msg string) string {
		return `
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: ` + name + `
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: native-kyverno}
  validations:
  - expression: "` + expr + `"
    message: ` + msg + `
`
	}
	owner := kinitirasPolicy(t, vpol("needs-owner", "has(object.data) && 'owner' in object.data", "an owner is required"))
	tier := kinitirasPolicy(t, vpol("needs-tier", "object.metadata.?labels.tier.orValue('') != ''", "a tier label is required"))
	exception := kinitirasPolicy(t, `
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata:
  name: legacy
  namespace: native-exceptions
spec:
  policyRefs: [{name: needs-tier, kind: ValidatingPolicy}]
  matchConditions:
  - {name: legacy, expression: "object.metadata.name.startsWith('legacy-')"}
`)
	create(t, c, exception)
	create(t, c, owner)
	create(t, c, tier)
	cm := func(name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "native-kyverno", Labels: labels}, Data: data}
	}
	t.Run("refused by the API server's policy", func(t *testing.T) {
		eventually(t, 60*time.Second, func() error {
			err := c.Create(ctx, cm("x", map[string]string{"tier": "gold"}, nil), client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'kyverno-vpol-needs-owner'") {
				return fmt.Errorf("not yet refused by the compiled policy: %v", err)
			}
			if !strings.Contains(err.Error(), "an owner is required") {
				t.Fatalf("the refusal lacks the policy's message: %v", err)
			}
			return nil
		}, func() string { return a.log.tail(20) })
		eventually(t, 30*time.Second, func() error {
			cond, err := nativeCondition(ctx, c, owner)
			if err != nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "ValidatingAdmissionPolicy kyverno-vpol-needs-owner") {
				return fmt.Errorf("condition %+v, %v", cond, err)
			}
			return nil
		})
	})
	t.Run("a policy an exception names stays in the webhook", func(t *testing.T) {
		eventually(t, 30*time.Second, func() error {
			cond, err := nativeCondition(ctx, c, tier)
			if err != nil {
				return err
			}
			if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "the PolicyException native-exceptions/legacy names it") {
				return fmt.Errorf("condition %+v", cond)
			}
			return nil
		})
		var vap admissionregv1.ValidatingAdmissionPolicy
		if err := c.Get(ctx, client.ObjectKey{Name: "kyverno-vpol-needs-tier"}, &vap); err == nil {
			t.Errorf("the excepted policy was installed")
		}
		owned := map[string]string{"owner": "web-team"}
		if err := c.Create(ctx, cm("legacy-settings", nil, owned), client.DryRunAll); err != nil {
			t.Errorf("the exception's object: %v", err)
		}
		if err := c.Create(ctx, cm("settings", nil, owned), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "a tier label is required") ||
			strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			t.Errorf("not refused by the webhook: %v", err)
		}
	})
	t.Run("without the exception, compiled too", func(t *testing.T) {
		if err := c.Delete(ctx, exception); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, func() error {
			err := c.Create(ctx, cm("legacy-settings", nil, map[string]string{"owner": "web-team"}), client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'kyverno-vpol-needs-tier'") {
				return fmt.Errorf("not refused by the compiled policy: %v", err)
			}
			return nil
		})
	})
}
