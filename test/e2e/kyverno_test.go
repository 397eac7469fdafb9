package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPolicyContext runs Policies with Kyverno-style context on the real
// API server: a ConfigMap read through the operator's informer (and its
// update seen within a second; read only once the namespace grants its
// rule reader the read), an apiCall (the same), and the userInfo and roles of
// a real impersonated user.
func TestPolicyContext(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	a := cl.startOperator(t, "a")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	for _, ns := range []string{"ctx-a", "ctx-b"} {
		create(t, c, &corev1.Namespace{ObjectMeta: metaName(ns)})
	}
	probe := func(ns, name string) func() client.Object {
		return func() client.Object { return configMap(ns, name, map[string]string{"app": name}) }
	}

	t.Run("configMap", func(t *testing.T) {
		settings := &corev1.ConfigMap{ObjectMeta: metaName("settings"), Data: map[string]string{"team": "blue"}}
		settings.Namespace = "ctx-a"
		create(t, c, settings)
		create(t, c, policy(t, "ctx-a", "team-label", configMaps+`
matchConditions:
- name: not-settings
  jmespath: "request.object.metadata.name != 'settings'"
context:
- name: settings
  configMap: {name: settings}
mutations:
- patch:
  - {op: add, path: /metadata/labels/team, value: "{{ settings.data.team }}"}
`))
		// The Policy reads as ctx-a's rule reader, which may not read the
		// ConfigMap yet: the rule fails (Fail), the object is denied.
		eventually(t, 10*time.Second, func() error {
			err := c.Create(ctx, probe("ctx-a", "probe")(), client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "reads as system:serviceaccount:ctx-a:modwright-rules, which may not get configmaps in ctx-a") {
				return fmt.Errorf("before the grant: %v", err)
			}
			return nil
		})
		create(t, c, &rbacv1.Role{ObjectMeta: metaNS("ctx-a", "rules-read-settings"), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}, Verbs: []string{"get"}}}})
		create(t, c, &rbacv1.RoleBinding{ObjectMeta: metaNS("ctx-a", "rules-read-settings"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rules-read-settings"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "modwright-rules", Namespace: "ctx-a"}}})
		eventually(t, 30*time.Second, func() error { // the denial is cached for 10 s
			got, err := dryRunLabel(ctx, c, probe("ctx-a", "probe")(), "team")
			if err != nil {
				return err
			}
			if got != "blue" {
				return fmt.Errorf("label team = %q, want blue", got)
			}
			return nil
		})
		// An update of the ConfigMap is seen within a second.
		settings.Data["team"] = "green"
		if err := c.Update(ctx, settings); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var got string
		for time.Since(start) < 5*time.Second {
			var err error
			if got, err = dryRunLabel(ctx, c, probe("ctx-a", "probe")(), "team"); err != nil {
				t.Fatal(err)
			}
			if got == "green" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(start)
		if got != "green" || took > time.Second {
			t.Errorf("the ConfigMap's update was seen after %v (label %q), want green within 1s", took, got)
		}
		t.Logf("ConfigMap update seen after %v", took)
	})

	t.Run("apiCall", func(t *testing.T) {
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: "ctx-b"}, ns); err != nil {
			t.Fatal(err)
		}
		ns.Labels = map[string]string{"max-keys": "1"}
		if err := c.Update(ctx, ns); err != nil {
			t.Fatal(err)
		}
		create(t, c, policy(t, "ctx-b", "max-keys", configMaps+`
context:
- name: maxKeys
  apiCall:
    urlPath: "/api/v1/namespaces/{{ request.namespace }}"
    jmesPath: "metadata.labels.\"max-keys\""
validations:
- jmespath: "length(keys(request.object.data || `+"`{}`"+`)) <= to_number(maxKeys)"
  message: "at most {{ maxKeys }} keys in {{ request.object.metadata.name }}"
`))
		two := configMap("ctx-b", "two", nil)
		two.Data = map[string]string{"a": "1", "b": "2"}
		// The Policy reads as ctx-b's rule reader, which may read nothing
		// yet: the read is refused, the rule fails, the object is denied.
		eventually(t, 10*time.Second, func() error {
			err := c.Create(ctx, two.DeepCopy(), client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "reads as system:serviceaccount:ctx-b:modwright-rules, which may not get namespaces in ctx-b") {
				return fmt.Errorf("before the grant: %v", err)
			}
			return nil
		})
		// The namespace grants it the Namespace's get.
		create(t, c, &rbacv1.Role{ObjectMeta: metaNS("ctx-b", "rules-read-ns"), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"ctx-b"}, Verbs: []string{"get"}}}})
		create(t, c, &rbacv1.RoleBinding{ObjectMeta: metaNS("ctx-b", "rules-read-ns"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rules-read-ns"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "modwright-rules", Namespace: "ctx-b"}}})
		eventually(t, 30*time.Second, func() error {
			err := c.Create(ctx, two.DeepCopy(), client.DryRunAll)
			if err == nil {
				return errors.New("a ConfigMap with two keys was admitted")
			}
			if strings.Contains(err.Error(), "may not get namespaces") {
				return err // the previous answer, cached for 10 s
			}
			if !strings.Contains(err.Error(), "at most 1 keys in two") {
				t.Fatalf("denial: %v", err)
			}
			return nil
		})
		if err := c.Create(ctx, configMap("ctx-b", "one", nil), client.DryRunAll); err != nil {
			t.Errorf("a ConfigMap with one key: %v", err)
		}
	})

	t.Run("userInfo and roles of an impersonated user", func(t *testing.T) {
		// alice may create ConfigMaps in ctx-a through a Role.
		create(t, c, &rbacv1.Role{ObjectMeta: metaNS("ctx-a", "cm-writer"), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}})
		create(t, c, &rbacv1.RoleBinding{ObjectMeta: metaNS("ctx-a", "alice-cm-writer"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-writer"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}})
		create(t, c, policy(t, "ctx-a", "owner", configMaps+`
matchConditions:
- name: alice-only
  jmespath: "request.userInfo.username == 'alice'"
mutations:
- patch:
  - {op: add, path: /metadata/labels/owner, value: "{{ request.userInfo.username }}"}
  - {op: add, path: /metadata/labels/roles, value: "{{ replace_all(join('.', request.roles), ':', '-') }}"}
  - {op: add, path: /metadata/labels/group, value: "{{ request.userInfo.groups[0] }}"}
`))
		cfg := rest.CopyConfig(cl.cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"devs", "system:authenticated"}}
		ac, err := client.New(cfg, client.Options{Scheme: newScheme()})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			obj := configMap("ctx-a", "alices", map[string]string{"app": "alices"})
			if err := ac.Create(ctx, obj, client.DryRunAll); err != nil {
				return err
			}
			want := map[string]string{"owner": "alice", "roles": "ctx-a-cm-writer", "group": "devs"}
			for k, v := range want {
				if obj.Labels[k] != v {
					return fmt.Errorf("labels %v, want %v", obj.Labels, want)
				}
			}
			return nil
		})
	})
}

func metaNS(ns, name string) metav1.ObjectMeta {
	m := metaName(name)
	m.Namespace = ns
	return m
}
