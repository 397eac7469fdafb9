package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestCompileNative: the operator with --compile-native installs the
// admission policies of the rules that translate, stops serving those
// rules itself once the API server holds them (a refusal then comes from
// the ValidatingAdmissionPolicy, not the webhook), says so in each rule's
// NativeAdmission condition, keeps serving a rule that does not translate
// (and, beside it, the rules that run faster in the webhook), and follows a
// rule's deletion.
func TestCompileNative(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	op := cl.startOperator(t, "a", "--compile-native")
	op.waitReady(t)
	cl.lb.add(op.webhook)
	// What the chart grants with compileNative: true.
	create(t, c, &rbacv1.ClusterRole{ObjectMeta: metaName("modwright-compile-native"), Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"admissionregistration.k8s.io"},
		Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
		Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}})
	create(t, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metaName("modwright-compile-native"),
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "modwright-compile-native"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: operatorNS, Name: "modwright"}}})
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "bench"}}}
	create(t, c, ns)
	data, err := os.ReadFile(compiledRules)
	if err != nil {
		t.Fatal(err)
	}
	var rules []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		rules = append(rules, u)
		create(t, c, u.DeepCopy())
	}
	// A rule that does not translate (a template), served by the webhook:
	// first in bench, where the webhook is then called for every request
	// anyway, so the ten are kept there, faster (--compile-native-placement
	// fastest, the default); then in another namespace.
	templated := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: frozen, namespace: bench}
spec:
  type: Reject
  match: [{select: "$.metadata.labels.frozen", matchValue: "true"}]
  rejectMessage: '{{ .Target.metadata.name }} is frozen'
`), &templated.Object); err != nil {
		t.Fatal(err)
	}
	create(t, c, templated.DeepCopy())

	dyn, err := dynamic.NewForConfig(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	deploymentsIn := func(ns string) dynamic.ResourceInterface {
		return dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns)
	}
	objects := compiledObjects(t)
	dryRunIn := func(ns string, obj map[string]any) (*unstructured.Unstructured, error) {
		u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
		u.SetNamespace(ns)
		return deploymentsIn(ns).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	dryRun := func(obj map[string]any) (*unstructured.Unstructured, error) { return dryRunIn("bench", obj) }
	frozenGood := func() map[string]any {
		frozen := compiledObjects(t)["good"]
		frozen["metadata"].(map[string]any)["labels"].(map[string]any)["frozen"] = "true"
		return frozen
	}
	// wherever checks each rule's NativeAdmission condition: want gives
	// the status, reason and a part of the message for a rule.
	wherever := func(t *testing.T, rules []*unstructured.Unstructured, want func(name string) (metav1.ConditionStatus, string, string)) {
		t.Helper()
		for _, r := range rules {
			status, reason, says := want(r.GetName())
			eventually(t, 30*time.Second, func() error {
				cond, err := nativeCondition(ctx, c, r)
				if err != nil {
					return err
				}
				if cond.Status != status || cond.Reason != reason || !strings.Contains(cond.Message, says) {
					return fmt.Errorf("%s: %s %s: %s (want %s %s, saying %q)", r.GetName(), cond.Status, cond.Reason, cond.Message, status, reason, says)
				}
				return nil
			}, func() string { return op.log.tail(20) })
		}
	}
	webhookCondition := func() (string, error) {
		var mw admissionregv1.MutatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: "modwright"}, &mw); err != nil {
			return "", err
		}
		for _, w := range mw.Webhooks {
			if w.Name != "dragnet.modwright.io" {
				continue
			}
			for _, mc := range w.MatchConditions {
				if mc.Name == "modwright-rules-left" {
					return mc.Expression, nil
				}
			}
		}
		return "", fmt.Errorf("no modwright-rules-left condition on the dragnet")
	}
	narrowedTo := func(t *testing.T, suffix string) {
		t.Helper()
		eventually(t, 30*time.Second, func() error {
			expr, err := webhookCondition()
			if err != nil {
				return err
			}
			if !strings.HasSuffix(expr, suffix) {
				return fmt.Errorf("condition %s", expr)
			}
			return nil
		})
	}

	t.Run("kept in the webhook beside a rule that does not translate, faster there", func(t *testing.T) {
		wherever(t, append(rules, templated), func(name string) (metav1.ConditionStatus, string, string) {
			if name == "frozen" {
				return metav1.ConditionFalse, "Webhook", "Go template"
			}
			return metav1.ConditionFalse, "WebhookFaster", "faster there: the webhook is called for every request it may concern anyway (ModRule bench/frozen runs there"
		})
		// The rules were compiled to a policy as they arrived, before the
		// one that does not translate: the API server may still hold that
		// policy for a moment after its deletion (its informer's lag).
		eventually(t, 30*time.Second, func() error {
			if _, err := dryRun(objects["latest"]); err == nil || !strings.Contains(err.Error(), "bench/no-latest") {
				return fmt.Errorf("not refused by the webhook: %v", err)
			}
			return nil
		}, func() string { return op.log.tail(20) })
		narrowedTo(t, `in ["bench"]`)
	})

	// The rule that does not translate moves to another namespace.
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "other"}}}
	create(t, c, other)
	if err := c.Delete(ctx, templated.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	templated.SetNamespace("other")
	create(t, c, templated.DeepCopy())

	t.Run("refused by the API server's policy, not the webhook", func(t *testing.T) {
		eventually(t, 60*time.Second, func() error {
			_, err := dryRun(objects["latest"])
			if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'modwright.modrules.bench.reject-") {
				return fmt.Errorf("not yet refused by the compiled policy: %v", err)
			}
			if !strings.Contains(err.Error(), "images must not use the latest tag") {
				t.Fatalf("the refusal lacks the rule's message: %v", err)
			}
			return nil
		}, func() string { return op.log.tail(20) })
	})
	t.Run("patched by the policy", func(t *testing.T) {
		u, err := dryRun(objects["good"])
		if err != nil {
			t.Fatal(err)
		}
		if u.GetLabels()["team"] != "platform" || u.GetAnnotations()["owner"] != "web-team" {
			t.Errorf("labels %v, annotations %v", u.GetLabels(), u.GetAnnotations())
		}
	})
	t.Run("the rule that does not translate, by the webhook", func(t *testing.T) {
		eventually(t, 30*time.Second, func() error {
			_, err := dryRunIn("other", frozenGood())
			if err == nil || !strings.Contains(err.Error(), `operation rejected by the following ModRule(s): other/frozen: "web is frozen"`) {
				return fmt.Errorf("not refused by the webhook: %v", err)
			}
			return nil
		})
	})
	t.Run("each rule says where it runs", func(t *testing.T) {
		wherever(t, append(rules, templated), func(name string) (metav1.ConditionStatus, string, string) {
			if name == "frozen" {
				return metav1.ConditionFalse, "Webhook", "Go template"
			}
			return metav1.ConditionTrue, "AdmissionPolicy", "runs in the API server: "
		})
	})
	t.Run("the webhook narrowed to the namespaces of the rules left to it", func(t *testing.T) {
		narrowedTo(t, `in ["other"]`)
		// A request in other still reaches the webhook, one in bench not.
		if _, err := dryRunIn("other", frozenGood()); err == nil || !strings.Contains(err.Error(), "other/frozen") {
			t.Errorf("other's request: %v", err)
		}
		if _, err := dryRun(frozenGood()); err != nil {
			t.Errorf("bench's request: %v", err)
		}
	})
	t.Run("no rule left to the webhook: it is not called", func(t *testing.T) {
		if err := c.Delete(ctx, templated.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		narrowedTo(t, "false")
	})
	t.Run("a deleted rule leaves the policy", func(t *testing.T) {
		for _, r := range rules {
			if r.GetName() == "privileged" {
				if err := c.Delete(ctx, r.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
		}
		eventually(t, 30*time.Second, func() error {
			if _, err := dryRun(objects["privileged"]); err != nil {
				return fmt.Errorf("still refused: %v", err)
			}
			return nil
		})
		if _, err := dryRun(objects["latest"]); err == nil {
			t.Error("the other Reject rules went too")
		}
	})
}

// nativeCondition reads a rule's NativeAdmission condition.
func nativeCondition(ctx context.Context, c client.Client, rule *unstructured.Unstructured) (metav1.Condition, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rule.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(rule), u); err != nil {
		return metav1.Condition{}, err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		m, _ := raw.(map[string]any)
		if m["type"] == "NativeAdmission" {
			status, _ := m["status"].(string)
			reason, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return metav1.Condition{Type: "NativeAdmission", Status: metav1.ConditionStatus(status), Reason: reason, Message: msg}, nil
		}
	}
	return metav1.Condition{}, fmt.Errorf("%s has no NativeAdmission condition yet", rule.GetName())
}
