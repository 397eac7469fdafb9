package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/api/v1alpha1"
)

// configMaps is the match of a policy on ConfigMaps (YAML).
const configMaps = `
match:
  resources:
  - apiGroups: [""]
    kinds: [ConfigMap]
`

func policySpec(t *testing.T, name, spec string) v1alpha1.PolicySpec {
	t.Helper()
	var s v1alpha1.PolicySpec
	if err := yaml.UnmarshalStrict([]byte(spec), &s); err != nil {
		t.Fatalf("policy %s: %v", name, err)
	}
	return s
}

func policy(t *testing.T, namespace, name, spec string) *v1alpha1.ModwrightPolicy {
	t.Helper()
	return &v1alpha1.ModwrightPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: policySpec(t, name, spec)}
}

func clusterPolicy(t *testing.T, name, spec string) *v1alpha1.ClusterModwrightPolicy {
	t.Helper()
	return &v1alpha1.ClusterModwrightPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policySpec(t, name, spec)}
}

// create creates obj, retrying while the API server cannot reach the
// validating webhook yet (the caBundle is injected after the operator
// starts).
func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		err := c.Create(context.Background(), obj)
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
		return client.IgnoreAlreadyExists(err)
	})
}

// warnings collects the admission warnings a client receives.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

var _ rest.WarningHandlerWithContext = (*warnings)(nil)

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// TestPolicy: Policies and ClusterPolicies created on the API server take
// effect through the operator: a patch, a denial, a warning, the validating
// webhook refusing a Policy that does not compile, the status of one stored
// anyway, and a ClusterPolicy across namespaces.
func TestPolicy(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	a := cl.startOperator(t, "a")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	// The first writes wait for the caBundle the operator injects.
	for _, ns := range []string{"team-a", "team-b", "other"} {
		create(t, c, &corev1.Namespace{ObjectMeta: metaName(ns)})
	}
	labelled := func(ns, name string) func() client.Object {
		return func() client.Object { return configMap(ns, name, map[string]string{"app": name}) }
	}

	t.Run("caBundle in every validating webhook", func(t *testing.T) {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: "modwright-webhook-cert"}, &s); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			var vw admissionregv1.ValidatingWebhookConfiguration
			if err := c.Get(ctx, client.ObjectKey{Name: "modwright"}, &vw); err != nil {
				return err
			}
			var names []string
			for _, w := range vw.Webhooks {
				if string(w.ClientConfig.CABundle) != string(s.Data["ca.crt"]) {
					return fmt.Errorf("webhook %s has another caBundle", w.Name)
				}
				names = append(names, w.Name)
			}
			if want := "dragnet.modwright.io modrules.modwright.io modwrightpolicies.modwright.io clustermodwrightpolicies.modwright.io kinitiras-policies.modwright.io kinitiras.modwright.io"; strings.Join(names, " ") != want {
				t.Fatalf("validating webhooks %q, want %s", names, want)
			}
			return nil
		})
	})

	t.Run("the CRD's rules", func(t *testing.T) {
		// The API server's own validation (the CRD's CEL rules), before
		// any webhook.
		err := c.Create(ctx, policy(t, "team-a", "namespaces", `
validations:
- cel: "true"
match:
  resources:
  - kinds: [ConfigMap]
    namespaces: [team-*]
`))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "namespaces is for ClusterModwrightPolicies") {
			t.Errorf("a Policy with namespaces: %v", err)
		}
		err = c.Create(ctx, clusterPolicy(t, "deny-and-warn", `
validationActions: [Deny, Warn]
validations:
- cel: "true"
`))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must not contain both Deny and Warn") {
			t.Errorf("a ClusterPolicy with Deny and Warn: %v", err)
		}
		err = c.Create(ctx, policy(t, "team-a", "nothing", `failurePolicy: Ignore`))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "a policy needs at least one of validations, mutations and auditAnnotations") {
			t.Errorf("a Policy that does nothing: %v", err)
		}
	})

	t.Run("patch", func(t *testing.T) {
		create(t, c, policy(t, "team-a", "checked", configMaps+`
mutations:
- jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/checked', value: 'yes'}]"
`))
		waitLabel(t, c, labelled("team-a", "probe"), "checked", "yes")
		cm := configMap("team-a", "patched", map[string]string{"app": "patched"})
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		var stored corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &stored); err != nil {
			t.Fatal(err)
		}
		if stored.Labels["checked"] != "yes" {
			t.Errorf("stored labels = %v", stored.Labels)
		}
		// A Policy applies to objects of its own namespace only.
		if got, err := dryRunLabel(ctx, c, labelled("team-b", "probe")(), "checked"); err != nil || got != "" {
			t.Errorf("team-b: checked label %q (err %v), want none", got, err)
		}
	})

	t.Run("deny", func(t *testing.T) {
		create(t, c, policy(t, "team-a", "no-secrets", configMaps+`
validations:
- cel: "!has(object.data) || !('password' in object.data)"
  message: "no passwords in ConfigMaps"
- cel: "!has(object.data) || !('token' in object.data)"
  messageExpression: "'no token in ConfigMap ' + object.metadata.name"
  reason: Forbidden
`))
		withKey := func(name, key string) *corev1.ConfigMap {
			cm := configMap("team-a", name, map[string]string{"app": name})
			cm.Data = map[string]string{key: "x"}
			return cm
		}
		eventually(t, 10*time.Second, func() error {
			err := c.Create(ctx, withKey("pw", "password"), client.DryRunAll)
			if err == nil {
				return errors.New("create admitted")
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusUnprocessableEntity || se.ErrStatus.Reason != metav1.StatusReasonInvalid ||
				!strings.Contains(err.Error(), "no passwords in ConfigMaps") || !strings.Contains(err.Error(), "team-a/no-secrets") {
				t.Fatalf("denial = %v (%#v)", err, se)
			}
			return nil
		})
		err := c.Create(ctx, withKey("tk", "token"), client.DryRunAll)
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusForbidden || se.ErrStatus.Reason != metav1.StatusReasonForbidden ||
			!strings.Contains(err.Error(), "no token in ConfigMap tk") {
			t.Errorf("denial with reason Forbidden and a messageExpression = %v", err)
		}
		if err := c.Create(ctx, withKey("fine", "color")); err != nil {
			t.Errorf("a ConfigMap without secrets refused: %v", err)
		}
	})

	t.Run("warn", func(t *testing.T) {
		create(t, c, policy(t, "team-b", "owner", configMaps+`
validationActions: [Warn]
validations:
- cel: "has(object.metadata.labels) && 'owner' in object.metadata.labels"
  message: "ConfigMaps should name their owner"
`))
		w := &warnings{}
		cfg := rest.CopyConfig(cl.cfg)
		cfg.WarningHandlerWithContext = w
		wc, err := client.New(cfg, client.Options{Scheme: newScheme()})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			if err := wc.Create(ctx, configMap("team-b", "probe", nil), client.DryRunAll); err != nil {
				t.Fatalf("a warning refused the create: %v", err)
			}
			got := w.take()
			for _, m := range got {
				if strings.Contains(m, "ConfigMaps should name their owner") {
					return nil
				}
			}
			return fmt.Errorf("warnings %q", got)
		})
		if err := wc.Create(ctx, configMap("team-b", "owned", map[string]string{"owner": "me"})); err != nil {
			t.Fatal(err)
		}
		if got := w.take(); len(got) != 0 {
			t.Errorf("warnings for a ConfigMap with an owner: %q", got)
		}
	})

	t.Run("invalid Policy refused with field errors", func(t *testing.T) {
		err := c.Create(ctx, policy(t, "team-a", "broken", `
validations:
- cel: "1 + 'a' == 2"
`))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.validations[0].cel") || !strings.Contains(err.Error(), "no matching overload") {
			t.Errorf("create of a Policy that does not compile: %v", err)
		}
		err = c.Create(ctx, clusterPolicy(t, "broken", `
mutations:
- jsonPatch: "[JSONPatch{op: 'add', path: "
`))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.mutations[0].jsonPatch") {
			t.Errorf("create of a ClusterPolicy that does not compile: %v", err)
		}
	})

	t.Run("status of a broken Policy stored anyway", func(t *testing.T) {
		// Stored while nothing validated it.
		broken := policy(t, "team-b", "broken", configMaps+`
mutations:
- jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/broken', value: 1 + 'a'}]"
`)
		cl.storeUnvalidated(t, broken)
		if cond := readyCondition(t, c, broken); cond.Status != metav1.ConditionFalse || cond.Reason != "CompileError" ||
			!strings.Contains(cond.Message, "spec.mutations[0].jsonPatch") || !strings.Contains(cond.Message, "no matching overload") {
			t.Fatalf("Ready condition = %+v", cond)
		}
		if cond := readyCondition(t, c, policy(t, "team-b", "owner", "{}")); cond.Status != metav1.ConditionTrue {
			t.Errorf("Ready condition of a good Policy = %+v", cond)
		}
		// The broken Policy is never applied; the others still are.
		if err := c.Create(ctx, configMap("team-b", "after-broken", map[string]string{"owner": "me"}), client.DryRunAll); err != nil {
			t.Errorf("with a broken Policy stored: %v", err)
		}
	})

	t.Run("a Policy under its former name", func(t *testing.T) {
		// Policy, ModwrightPolicy's former name, is read for a release:
		// it is served, and its status says what to write.
		former := &v1alpha1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "former"}, Spec: policySpec(t, "former", configMaps+`
mutations:
- applyConfiguration: "Object{metadata: Object.metadata{labels: {'former': 'served'}}}"
`)}
		create(t, c, former)
		waitLabel(t, c, labelled("team-a", "former-probe"), "former", "served")
		if cond := readyCondition(t, c, former); cond.Status != metav1.ConditionTrue ||
			!strings.Contains(cond.Message, "modwright.io/v1alpha1 Policy is deprecated: write kind ModwrightPolicy") {
			t.Errorf("Ready condition of a Policy = %+v", cond)
		}
		if err := c.Delete(ctx, former); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ClusterPolicy across namespaces", func(t *testing.T) {
		create(t, c, clusterPolicy(t, "org", `
match:
  resources:
  - apiGroups: [""]
    kinds: [ConfigMap]
    namespaces: ["team-*"]
mutations:
- applyConfiguration: "Object{metadata: Object.metadata{labels: {'org': 'acme'}}}"
`))
		waitLabel(t, c, labelled("team-b", "probe"), "org", "acme")
		for ns, want := range map[string]string{"team-a": "acme", "other": ""} {
			if got, err := dryRunLabel(ctx, c, labelled(ns, "probe")(), "org"); err != nil || got != want {
				t.Errorf("namespace %s: org label %q (err %v), want %q", ns, got, err, want)
			}
		}
		if cond := readyCondition(t, c, clusterPolicy(t, "org", "{}")); cond.Status != metav1.ConditionTrue {
			t.Errorf("Ready condition of a ClusterPolicy = %+v", cond)
		}
	})

	t.Run("authorizer", func(t *testing.T) {
		// The requesting user (the test's administrator) may delete
		// Secrets in kube-system: a SubjectAccessReview the operator
		// makes. Without an authorizer, or when the review fails, the
		// check is an error and the create is denied (failurePolicy
		// Fail). (The test server authorizes everything, so a denial
		// cannot be shown here; internal/source/cluster tests it.)
		create(t, c, policy(t, "other", "authz", configMaps+`
validations:
- cel: "authorizer.group('').resource('secrets').namespace('kube-system').check('delete').allowed()"
  message: "the user may not delete kube-system Secrets"
- cel: "authorizer.serviceAccount('other', 'nobody').group('').resource('secrets').namespace('kube-system').check('delete').reason() != 'x'"
  message: "a ServiceAccount's check failed"
- cel: "object.metadata.name != 'refused'"
  message: "refused by name"
`))
		// The last validation shows the policy is in force.
		eventually(t, 10*time.Second, func() error {
			if err := c.Create(ctx, configMap("other", "refused", nil), client.DryRunAll); err == nil {
				return errors.New("the policy is not in force yet")
			} else if !strings.Contains(err.Error(), "refused by name") {
				t.Fatalf("denial = %v, want only the name's", err)
			}
			return nil
		})
		if err := c.Create(ctx, configMap("other", "checked", nil), client.DryRunAll); err != nil {
			t.Errorf("the authorizer's checks denied: %v", err)
		}
	})
}
