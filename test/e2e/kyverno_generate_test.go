package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/generator"
)

// kyvernoGenerateRules are what the chart grants with its default
// kyverno.generateResources: the resources generate rules write.
var kyvernoGenerateRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "resourcequotas", "limitranges"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	// The records of generate work (the chart's Role, in its namespace).
	{APIGroups: []string{"modwright.io"}, Resources: []string{"generaterequests"}, Verbs: []string{"get", "list", "create", "delete"}},
}

// TestKyvernoGenerate runs Kyverno's generate rules on the real API
// server: a synchronized object is created once its trigger is stored,
// made again after it is deleted or changed, and deleted with its
// trigger; a clone copies its source once; a dry run generates nothing;
// the recorded work of a replica that stopped is taken up by the leader,
// and no record outlives its work.
func TestKyvernoGenerate(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	grant(t, c, "modwright-kyverno", kyvernoRules...)
	grant(t, c, "modwright-kyverno-cel", kyvernoCELRules...)
	grant(t, c, "modwright-generate", kyvernoGenerateRules...)
	a := cl.startOperator(t, "a", "--kyverno", "--kyverno-cel", "--generate-resource", "v1/resourcequotas", "--generate-resource", "v1/configmaps",
		"--generate-recover-after", "2s")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("gen-source")})
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "gen-source"}, Data: map[string]string{"tier": "gold"}})

	policy := kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-defaults
spec:
  rules:
  - name: quota
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector: {matchLabels: {generate: "yes"}}
    generate:
      apiVersion: v1
      kind: ResourceQuota
      name: team-quota
      namespace: "{{ request.object.metadata.name }}"
      synchronize: true
      data:
        spec:
          hard: {pods: "10"}
  - name: defaults
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector: {matchLabels: {generate: "yes"}}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: defaults
      namespace: "{{ request.object.metadata.name }}"
      clone: {namespace: gen-source, name: defaults}
  - name: per-app
    match:
      any:
      - resources:
          kinds: [ConfigMap]
          selector: {matchLabels: {app-settings: "yes"}}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: "{{ request.object.metadata.name }}-copy"
      namespace: "{{ request.object.metadata.namespace }}"
      synchronize: true
      data:
        data: {app: "{{ request.object.metadata.name }}"}
`)
	create(t, c, policy)
	if cond := readyCondition(t, c, policy); cond.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", cond.Status, cond.Message)
	}
	quota := func(ns string) (*corev1.ResourceQuota, error) {
		q := &corev1.ResourceQuota{}
		return q, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-quota"}, q)
	}
	pods := func(q *corev1.ResourceQuota) string { v := q.Spec.Hard[corev1.ResourcePods]; return v.String() }
	logs := func() string { return a.log.tail(30) }

	// The rules apply once the operator's snapshot has the policy: a
	// namespace created before may have no quota.
	eventually(t, 30*time.Second, func() error {
		name := fmt.Sprintf("gen-probe-%d", time.Now().UnixNano())
		create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"generate": "yes"}}})
		time.Sleep(2 * time.Second)
		_, err := quota(name)
		return err
	}, logs)

	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gen-a", Labels: map[string]string{"generate": "yes"}}})
	t.Run("a synchronized object is created with its marks", func(t *testing.T) {
		eventually(t, 20*time.Second, func() error {
			q, err := quota("gen-a")
			if err != nil {
				return err
			}
			if pods(q) != "10" || q.Labels["app.kubernetes.io/managed-by"] != "kyverno" || q.Labels["generate.kyverno.io/policy-name"] != "team-defaults" ||
				q.Labels["generate.kyverno.io/trigger-kind"] != "Namespace" || q.Annotations["modwright.io/trigger"] == "" {
				return fmt.Errorf("quota %v %v %v", q.Spec.Hard, q.Labels, q.Annotations)
			}
			return nil
		}, logs)
	})
	t.Run("a clone copies its source", func(t *testing.T) {
		eventually(t, 20*time.Second, func() error {
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "gen-a", Name: "defaults"}, cm); err != nil {
				return err
			}
			if cm.Data["tier"] != "gold" {
				return fmt.Errorf("data %v", cm.Data)
			}
			return nil
		}, logs)
	})
	t.Run("the recorded work of a stopped replica is taken up", func(t *testing.T) {
		// The clone is not synchronized: deleted, it stays deleted, until
		// a record of a replica that stopped before making it is found.
		key := client.ObjectKey{Namespace: "gen-a", Name: "defaults"}
		if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}); err != nil {
			t.Fatal(err)
		}
		rec := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "modwright.io/v1alpha1", "kind": "GenerateRequest",
			"metadata": map[string]any{"name": generator.RecordName("create", "v1", "ConfigMap", "gen-a", "defaults"), "namespace": operatorNS},
			"spec": map[string]any{"action": "create", "rule": "ClusterPolicy team-defaults rule defaults", "replica": "stopped-pod",
				"object":  map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "gen-a", "name": "defaults"},
				"trigger": map[string]any{"apiVersion": "v1", "kind": "Namespace", "name": "gen-a"}}}}
		create(t, c, rec)
		eventually(t, 30*time.Second, func() error {
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, key, cm); err != nil {
				return err
			}
			if cm.Data["tier"] != "gold" {
				return fmt.Errorf("data %v", cm.Data)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(rec), rec.DeepCopy()); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the record is still there (%v)", err)
			}
			return nil
		}, logs)
	})
	t.Run("a synchronized object deleted is made again", func(t *testing.T) {
		q, err := quota("gen-a")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, q); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, func() error {
			n, err := quota("gen-a")
			if err != nil {
				return err
			}
			if n.UID == q.UID {
				return errors.New("still the deleted one")
			}
			return nil
		}, logs)
	})
	t.Run("a synchronized object changed is made as its rule says", func(t *testing.T) {
		q, err := quota("gen-a")
		if err != nil {
			t.Fatal(err)
		}
		q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("99")
		if err := c.Update(ctx, q); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, func() error {
			n, err := quota("gen-a")
			if err != nil {
				return err
			}
			if pods(n) != "10" {
				return fmt.Errorf("pods %s", pods(n))
			}
			return nil
		}, logs)
	})
	t.Run("a synchronized object goes with its trigger", func(t *testing.T) {
		trig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "gen-a", Labels: map[string]string{"app-settings": "yes"}}}
		create(t, c, trig)
		copyKey := client.ObjectKey{Namespace: "gen-a", Name: "web-copy"}
		eventually(t, 20*time.Second, func() error {
			return c.Get(ctx, copyKey, &corev1.ConfigMap{})
		}, logs)
		if err := c.Delete(ctx, trig); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, func() error {
			err := c.Get(ctx, copyKey, &corev1.ConfigMap{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		}, logs)
	})
	t.Run("a GeneratingPolicy generates through generator.Apply", func(t *testing.T) {
		gpol := kinitirasPolicy(t, `
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: team-settings
spec:
  evaluation:
    synchronize: {enabled: true}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}
  matchConditions:
  - {name: team, expression: "object.metadata.?labels.gpol.orValue('') == 'yes'"}
  generate:
  - expression: >-
      generator.Apply(object.metadata.name, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"),
        "metadata": dyn({"name": "team-settings"}), "data": dyn({"namespace": object.metadata.name})}])
`)
		create(t, c, gpol)
		if cond := readyCondition(t, c, gpol); cond.Status != metav1.ConditionTrue {
			t.Fatalf("Ready %s: %s", cond.Status, cond.Message)
		}
		get := func(ns string) error {
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-settings"}, cm); err != nil {
				return err
			}
			if cm.Data["namespace"] != ns {
				return fmt.Errorf("data %v", cm.Data)
			}
			return nil
		}
		eventually(t, 30*time.Second, func() error {
			name := fmt.Sprintf("gpol-%d", time.Now().UnixNano())
			create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gpol": "yes"}}})
			time.Sleep(2 * time.Second)
			return get(name)
		}, logs)
	})
	t.Run("a mutate of existing objects patches its targets", func(t *testing.T) {
		stamp := kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: stamp-release
spec:
  rules:
  - name: stamp
    match:
      any:
      - resources: {kinds: [ConfigMap], names: [release], namespaces: [gen-a]}
    mutate:
      targets:
      - apiVersion: v1
        kind: ConfigMap
        namespace: "{{ request.object.metadata.namespace }}"
        selector: {matchLabels: {stamp: "yes"}}
      patchStrategicMerge:
        metadata:
          annotations:
            release: "{{ request.object.data.version }}"
`)
		create(t, c, stamp)
		if cond := readyCondition(t, c, stamp); cond.Status != metav1.ConditionTrue {
			t.Fatalf("Ready %s: %s", cond.Status, cond.Message)
		}
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-settings", Namespace: "gen-a", Labels: map[string]string{"stamp": "yes"}}, Data: map[string]string{"replicas": "3"}})
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "gen-a"}})
		version := 0
		eventually(t, 30*time.Second, func() error {
			// The policy applies once the operator's snapshot has it.
			version++
			rel := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "release", Namespace: "gen-a"}, Data: map[string]string{"version": fmt.Sprint(version)}}
			if version == 1 {
				create(t, c, rel)
			} else if err := c.Update(ctx, rel); err != nil {
				return err
			}
			time.Sleep(time.Second)
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "gen-a", Name: "web-settings"}, cm); err != nil {
				return err
			}
			if cm.Annotations["release"] == "" || cm.Data["replicas"] != "3" {
				return fmt.Errorf("target %v %v", cm.Annotations, cm.Data)
			}
			return nil
		}, logs)
		other := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "gen-a", Name: "other"}, other); err != nil || other.Annotations["release"] != "" {
			t.Errorf("a ConfigMap the selector does not pick: %v %v", err, other.Annotations)
		}
		rel := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "gen-a", Name: "release"}, rel); err != nil || rel.Annotations["release"] != "" {
			t.Errorf("the trigger itself was mutated: %v %v", err, rel.Annotations)
		}
	})
	t.Run("a dry run generates nothing", func(t *testing.T) {
		trig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry", Namespace: "gen-a", Labels: map[string]string{"app-settings": "yes"}}}
		if err := c.Create(ctx, trig, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // the generator's delay and a retry
		if err := c.Get(ctx, client.ObjectKey{Namespace: "gen-a", Name: "dry-copy"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("a dry run's object: %v", err)
		}
	})
	t.Run("no record outlives its work", func(t *testing.T) {
		eventually(t, 30*time.Second, func() error {
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion("modwright.io/v1alpha1")
			l.SetKind("GenerateRequestList")
			if err := c.List(ctx, l, client.InNamespace(operatorNS)); err != nil {
				return err
			}
			if len(l.Items) > 0 {
				return fmt.Errorf("%d records left, the first %v", len(l.Items), l.Items[0].Object["spec"])
			}
			return nil
		}, logs)
	})
}
