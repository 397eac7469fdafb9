package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/api/v1beta1"
)

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func modRule(t *testing.T, namespace, name, spec string) *v1beta1.ModRule {
	t.Helper()
	mr := &v1beta1.ModRule{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := yaml.Unmarshal([]byte(spec), &mr.Spec); err != nil {
		t.Fatalf("rule %s: %v", name, err)
	}
	return mr
}

func configMap(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: map[string]string{"k": "v"}}
}

func deployment(ns, name, image string, lastApplied bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
	if lastApplied {
		b, _ := json.Marshal(d)
		d.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(b)}
	}
	return d
}

// dryRunLabel creates obj with dryRun=All (through every admission webhook)
// and returns the label key of the result.
func dryRunLabel(ctx context.Context, c client.Client, obj client.Object, key string) (string, error) {
	if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
		return "", err
	}
	return obj.GetLabels()[key], nil
}

// waitLabel measures how long after now a dry-run create of newObj gets
// label key = want (want "" : the label is absent).
func waitLabel(t *testing.T, c client.Client, newObj func() client.Object, key, want string) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, 10*time.Second, func() error {
		got, err := dryRunLabel(context.Background(), c, newObj(), key)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("label %s = %q, want %q", key, got, want)
		}
		return nil
	})
	return time.Since(start)
}

func TestOperator(t *testing.T) {
	cl := startCluster(t, true)
	ctx := context.Background()
	c := cl.c
	a := cl.startOperator(t, "a")
	t.Run("not ready before the ModRule cache syncs", func(t *testing.T) {
		eventually(t, 30*time.Second, func() error {
			ok, body := a.ready()
			if ok {
				t.Fatalf("ready without the CRDs:\n%s", body)
			}
			if !strings.Contains(body, "[-]rules") {
				return fmt.Errorf("readiness: %s", body)
			}
			return nil
		})
		time.Sleep(time.Second)
		if ok, body := a.ready(); ok || !strings.Contains(body, "[-]rules") {
			t.Fatalf("readiness without the CRDs: %v\n%s", ok, body)
		}
	})
	cl.installCRDs(t)
	t.Run("ready after sync", func(t *testing.T) { a.waitReady(t); cl.lb.add(a.webhook) })
	if t.Failed() {
		return
	}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"tier": "gold"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Labels: map[string]string{"admission.kubemod.io/ignore": "true"}}},
	} {
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("certificate and caBundle", func(t *testing.T) {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: "modwright-webhook-cert"}, &s); err != nil {
			t.Fatal(err)
		}
		ca := s.Data["ca.crt"]
		check := func() error {
			var mw admissionregv1.MutatingWebhookConfiguration
			if err := c.Get(ctx, client.ObjectKey{Name: "modwright"}, &mw); err != nil {
				return err
			}
			for _, w := range mw.Webhooks {
				if string(w.ClientConfig.CABundle) != string(ca) {
					return fmt.Errorf("webhook %s has another caBundle", w.Name)
				}
			}
			return nil
		}
		eventually(t, 10*time.Second, check)
		// A GitOps tool replaces the configuration with its own copy,
		// without caBundle.
		var mw admissionregv1.MutatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: "modwright"}, &mw); err != nil {
			t.Fatal(err)
		}
		for i := range mw.Webhooks {
			mw.Webhooks[i].ClientConfig.CABundle = nil
		}
		if err := c.Update(ctx, &mw); err != nil {
			t.Fatal(err)
		}
		if len(mw.Webhooks[0].ClientConfig.CABundle) != 0 {
			t.Fatal("the update kept the caBundle")
		}
		eventually(t, 10*time.Second, check)
	})

	t.Run("patch rule, update and delete take effect", func(t *testing.T) {
		newCM := func() client.Object { return configMap("team-a", "probe", nil) }
		rule := modRule(t, "team-a", "color", `
type: Patch
match:
  - select: '$.kind'
    matchValue: ConfigMap
patch:
  - op: add
    path: /metadata/labels/color
    value: blue
`)
		if err := c.Create(ctx, rule); err != nil {
			t.Fatal(err)
		}
		took := waitLabel(t, c, newCM, "color", "blue")
		t.Logf("create: in effect after %s", took)
		if took > time.Second {
			t.Errorf("the new rule took %s to take effect (want <= 1s)", took)
		}
		// The operator writes the rule's status meanwhile: update the
		// latest version.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(rule), rule); err != nil {
				return err
			}
			rule.Spec.Patch[0].Value = ptr("green")
			return c.Update(ctx, rule)
		}); err != nil {
			t.Fatal(err)
		}
		took = waitLabel(t, c, newCM, "color", "green")
		t.Logf("update: in effect after %s", took)
		if took > time.Second {
			t.Errorf("the update took %s to take effect (want <= 1s)", took)
		}
		if err := c.Delete(ctx, rule); err != nil {
			t.Fatal(err)
		}
		took = waitLabel(t, c, newCM, "color", "")
		t.Logf("delete: in effect after %s", took)
		if took > time.Second {
			t.Errorf("the delete took %s to take effect (want <= 1s)", took)
		}
	})

	t.Run("patched Deployment with last-applied configuration", func(t *testing.T) {
		rule := modRule(t, "team-a", "owner", `
type: Patch
match:
  - select: '$.kind'
    matchValue: Deployment
patch:
  - op: add
    path: /metadata/labels/owner
    value: team-a
`)
		if err := c.Create(ctx, rule); err != nil {
			t.Fatal(err)
		}
		waitLabel(t, c, func() client.Object { return deployment("team-a", "probe", "nginx:1.27", false) }, "owner", "team-a")
		d := deployment("team-a", "web", "nginx:1.27", true)
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		var stored appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), &stored); err != nil {
			t.Fatal(err)
		}
		if stored.Labels["owner"] != "team-a" {
			t.Errorf("stored labels = %v", stored.Labels)
		}
		var last map[string]any
		if err := json.Unmarshal([]byte(stored.Annotations["kubectl.kubernetes.io/last-applied-configuration"]), &last); err != nil {
			t.Fatal(err)
		}
		if got := last["metadata"].(map[string]any)["labels"].(map[string]any)["owner"]; got != "team-a" {
			t.Errorf("last-applied configuration not patched: labels %v", last["metadata"].(map[string]any)["labels"])
		}
	})

	t.Run("reject rule", func(t *testing.T) {
		rule := modRule(t, "team-a", "no-latest", `
type: Reject
rejectMessage: 'image of {{ .Target.metadata.name }} must be pinned'
match:
  - select: '$.kind'
    matchValue: Deployment
  - select: '$.spec.template.spec.containers[*].image'
    matchRegex: ':latest$'
`)
		if err := c.Create(ctx, rule); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			err := c.Create(ctx, deployment("team-a", "bad", "nginx:latest", false), client.DryRunAll)
			if err == nil {
				return errors.New("create admitted")
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `operation rejected by the following ModRule(s): team-a/no-latest: "image of bad must be pinned"`) {
				t.Fatalf("denial = %v", err)
			}
			return nil
		})
		if err := c.Create(ctx, deployment("team-a", "good", "nginx:1.27", false)); err != nil {
			t.Errorf("pinned image refused: %v", err)
		}
	})

	t.Run("invalid ModRule refused with field errors", func(t *testing.T) {
		err := c.Create(ctx, modRule(t, "team-a", "broken", `
type: Patch
match:
  - select: '$.kind['
    matchValue: Pod
patch:
  - op: add
    path: /metadata/labels/x
    value: y
`))
		if err == nil || !strings.Contains(err.Error(), "spec.match[0].select") || !strings.Contains(err.Error(), "column") {
			t.Errorf("create of an invalid rule: %v", err)
		}
		err = c.Create(ctx, modRule(t, "team-a", "two-matchers", `
type: Reject
match:
  - select: '$.kind'
    matchValue: Pod
    matchRegex: Po.*
`))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "use only one of matchValue, matchValues and matchRegex") {
			t.Errorf("create of a rule breaking a CRD validation: %v", err)
		}
	})

	t.Run("cluster rules, targetNamespaceRegex, ignored namespace", func(t *testing.T) {
		rule := modRule(t, clusterNS, "scope", `
type: Patch
targetNamespaceRegex: '^(team-b|quiet)$'
match:
  - select: '$.kind'
    matchValue: ConfigMap
patch:
  - op: add
    path: /metadata/labels/scope
    value: cluster
`)
		if err := c.Create(ctx, rule); err != nil {
			t.Fatal(err)
		}
		waitLabel(t, c, func() client.Object { return configMap("team-b", "probe", nil) }, "scope", "cluster")
		for ns, want := range map[string]string{"team-a": "", "quiet": ""} {
			if got, err := dryRunLabel(ctx, c, configMap(ns, "probe", nil), "scope"); err != nil || got != want {
				t.Errorf("namespace %s: scope label %q (err %v), want %q", ns, got, err, want)
			}
		}
	})

	t.Run("syntheticRefs.namespace", func(t *testing.T) {
		rule := modRule(t, "team-a", "tier", `
type: Patch
match:
  - select: '$.kind'
    matchValue: Secret
  - select: '$.syntheticRefs.namespace.metadata.labels.tier'
    matchValue: gold
patch:
  - op: add
    path: /metadata/labels/tier
    value: '{{ .Target.syntheticRefs.namespace.metadata.labels.tier }}'
`)
		if err := c.Create(ctx, rule); err != nil {
			t.Fatal(err)
		}
		waitLabel(t, c, func() client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s"}, StringData: map[string]string{"a": "b"}}
		}, "tier", "gold")
	})

	t.Run("DELETE protection", func(t *testing.T) {
		rule := modRule(t, "team-a", "protect", `
type: Reject
admissionOperations: [DELETE]
rejectMessage: 'protected'
match:
  - select: '$.kind'
    matchValue: ConfigMap
  - select: '$.metadata.labels.protected'
    matchValue: 'yes'
`)
		if err := c.Create(ctx, rule); err != nil {
			t.Fatal(err)
		}
		cm := configMap("team-a", "keep", map[string]string{"protected": "yes"})
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			err := c.Delete(ctx, cm, client.DryRunAll)
			if err == nil {
				return errors.New("delete admitted")
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "protected") {
				t.Fatalf("delete: %v", err)
			}
			return nil
		})
		other := configMap("team-a", "other", nil)
		if err := c.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, other); err != nil {
			t.Errorf("unprotected delete: %v", err)
		}
	})

	t.Run("node reference through pods/binding", func(t *testing.T) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "z1"}}}
		if err := c.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		rule := modRule(t, "team-a", "pod-zone", `
type: Patch
match:
  - select: '$.kind'
    matchValue: Pod
  - select: '$.syntheticRefs.node.metadata.labels.zone'
patch:
  - op: add
    path: /metadata/labels/zone
    value: '{{ .Target.syntheticRefs.node.metadata.labels.zone }}'
`)
		if err := c.Create(ctx, rule); err != nil {
			t.Fatal(err)
		}
		no := false
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p1", Annotations: map[string]string{"ref.kubemod.io/inject-node-ref": "true"}},
			Spec:       corev1.PodSpec{AutomountServiceAccountToken: &no, Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(cl.cfg)
		// Wait until the rule is served (an unrelated dry-run Pod with the annotation set by hand).
		eventually(t, 10*time.Second, func() error {
			probe := pod.DeepCopy()
			probe.Name, probe.ResourceVersion = "probe", ""
			probe.Annotations = map[string]string{"ref.kubemod.io/nodename": "node-1"}
			got, err := dryRunLabel(ctx, c, probe, "zone")
			if err != nil || got != "z1" {
				return fmt.Errorf("zone %q, %v", got, err)
			}
			return nil
		})
		if err := cs.CoreV1().Pods("team-a").Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p1"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			var p corev1.Pod
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
				return err
			}
			if p.Spec.NodeName != "node-1" || p.Annotations["ref.kubemod.io/nodename"] != "node-1" || p.Labels["zone"] != "z1" {
				return fmt.Errorf("pod: nodeName %q annotations %v labels %v", p.Spec.NodeName, p.Annotations, p.Labels)
			}
			return nil
		})
	})

	t.Run("status conditions and events", func(t *testing.T) {
		// A rule stored while nothing validated it (say, under KubeMod).
		broken := modRule(t, "team-b", "broken", `
type: Patch
match:
  - select: '$.metadata.labels[?(@ == "x"'
patch:
  - op: add
    path: /metadata/labels/x
    value: y
`)
		cl.storeUnvalidated(t, broken)
		if cond := readyCondition(t, c, broken); cond.Status != metav1.ConditionFalse || cond.Reason != "CompileError" ||
			!strings.Contains(cond.Message, "spec.match[0].select: column") {
			t.Fatalf("Ready condition = %+v", cond)
		}
		eventually(t, 15*time.Second, func() error {
			var evs eventsv1.EventList
			if err := c.List(ctx, &evs, client.InNamespace("team-b")); err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.Regarding.Name == "broken" && e.Reason == "CompileError" && e.Type == "Warning" && strings.Contains(e.Note, "spec.match[0].select") {
					return nil
				}
			}
			return fmt.Errorf("no CompileError event among %d", len(evs.Items))
		})
		var good v1beta1.ModRule
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "owner"}, &good); err != nil {
			t.Fatal(err)
		}
		if cond := meta.FindStatusCondition(good.Status.Conditions, "Ready"); cond == nil || cond.Status != metav1.ConditionTrue || good.Status.ObservedGeneration != good.Generation {
			t.Errorf("status of a good rule = %+v", good.Status)
		}
		// The broken rule is never applied; the others still are.
		if got, err := dryRunLabel(ctx, c, configMap("team-b", "probe", map[string]string{"x": "x"}), "scope"); err != nil || got != "cluster" {
			t.Errorf("with a broken rule stored: scope %q, %v", got, err)
		}
	})

	t.Run("webhook down with failurePolicy Ignore", func(t *testing.T) {
		cl.setFailurePolicy(t, admissionregv1.Ignore)
		// The operator keeps caBundle and rules correct, not the policy.
		a.stop(t)
		cm := configMap("team-b", "while-down", nil)
		if err := c.Create(ctx, cm); err != nil {
			t.Fatalf("create with the webhook down and failurePolicy Ignore: %v", err)
		}
		if cm.Labels["scope"] != "" {
			t.Errorf("patched while the webhook was down? labels %v", cm.Labels)
		}
	})
}

func ptr[T any](v T) *T { return &v }
