package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// configBundleCRD is the custom resource examples/rule-packs/config-bundles
// routes (example.com/v1 ConfigBundle).
func configBundleCRD() *apiextv1.CustomResourceDefinition {
	preserve := true
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "configbundles.example.com"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "configbundles", Singular: "configbundle", Kind: "ConfigBundle", ListKind: "ConfigBundleList"},
			Scope: apiextv1.NamespaceScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

// graphEdges reads an object's incoming or outgoing edges from the read
// endpoint, as "TYPE from -> to".
func graphEdges(metrics, path string) ([]string, error) {
	resp, err := http.Get("http://" + metrics + "/api/v1alpha1/resources/" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	var edges []struct{ From, To, Type string }
	if err := json.Unmarshal(body, &edges); err != nil {
		return nil, fmt.Errorf("GET %s: %v: %s", path, err, body)
	}
	var out []string
	for _, e := range edges {
		out = append(out, e.Type+" "+e.From+" -> "+e.To)
	}
	return out, nil
}

// TestGraph: the operator keeps the relationship graph from its informers;
// examples/graph-protect's ModRules refuse deleting a Secret a Pod uses; a
// CRD installed after the start gets its informer and its rule pack's
// edges within seconds, with no restart; the graph's read endpoint answers
// on the metrics port; a deleted Pod's edges go; a deleted CRD's edges are
// kept.
func TestGraph(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	metrics := "127.0.0.1:" + strconv.Itoa(freePort(t))
	a := cl.startOperator(t, "a", "--rule-pack", "../../examples/rule-packs/config-bundles", "--metrics-bind-address", metrics)
	a.waitReady(t)
	cl.lb.add(a.webhook)
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("shop")})
	// What the chart's rulePacks.readRules grants.
	create(t, c, &rbacv1.ClusterRole{ObjectMeta: metaName("config-bundles"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"configbundles"}, Verbs: []string{"get", "list", "watch"}}}})
	create(t, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metaName("config-bundles"), RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "config-bundles"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: operatorNS, Name: "modwright"}}})
	rules, err := os.ReadFile("../../examples/graph-protect/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cl.manifests(t, rules) {
		create(t, c, u)
		if cond := readyCondition(t, c, u); cond.Status != metav1.ConditionTrue {
			t.Fatalf("%s: %+v", u.GetName(), cond)
		}
	}
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}})
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "free"}})
	create(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "nginx", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}},
	}}}})

	// denied waits until deleting the Secret (a dry run) is refused with
	// want; then a real delete is refused too.
	denied := func(t *testing.T, name, want string) {
		t.Helper()
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
		eventually(t, 30*time.Second, func() error {
			err := c.Delete(ctx, secret, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("dry-run delete of Secret %s: %v", name, err)
			}
			return nil
		}, func() string { return a.log.tail(20) })
		if err := c.Delete(ctx, secret); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("delete of Secret %s: %v", name, err)
		}
	}

	t.Run("the read endpoint on the metrics port", func(t *testing.T) {
		eventually(t, 30*time.Second, func() error {
			got, err := graphEdges(metrics, "shop/Secret/db/incoming")
			if err != nil {
				return err
			}
			if want := []string{"USES_SECRET shop/Pod/web-1 -> shop/Secret/db"}; !slices.Equal(got, want) {
				return fmt.Errorf("edges %q, want %q", got, want)
			}
			return nil
		})
		resp, err := http.Get("http://" + metrics + "/api/v1alpha1/resources/shop/Pod/web-1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var d struct {
			Resource struct{ Kind, Name, Namespace, UID, GroupVersion string }
			Outgoing []struct{ From, To, Type string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d.Resource.Kind != "Pod" || d.Resource.UID == "" || d.Resource.GroupVersion != "v1" || len(d.Outgoing) != 1 || d.Outgoing[0].To != "shop/Secret/db" {
			t.Errorf("Pod web-1: %+v", d)
		}
		if _, err := graphEdges(metrics, "shop/Secret/ghost/incoming"); err == nil || !strings.Contains(err.Error(), `404 {"error":"resource not found: shop/Secret/ghost","code":"not_found"}`) {
			t.Errorf("an unknown object: %v", err)
		}
	})

	t.Run("deleting a Secret in use is refused", func(t *testing.T) {
		denied(t, "db", "this Secret is in use by Pod web-1")
		if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "free"}}); err != nil {
			t.Errorf("deleting an unused Secret: %v", err)
		}
	})

	t.Run("a Pod deleted takes its edges with it", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-2"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "nginx", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cache"}}}},
		}}}}
		create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cache"}})
		create(t, c, pod)
		denied(t, "cache", "this Secret is in use by Pod web-2")
		if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			return c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cache"}}, client.DryRunAll)
		}, func() string { return a.log.tail(20) })
	})

	t.Run("a CRD installed after the start gets its informer and edges", func(t *testing.T) {
		if _, err := envtest.InstallCRDs(cl.cfg, envtest.CRDInstallOptions{CRDs: []*apiextv1.CustomResourceDefinition{configBundleCRD()}}); err != nil {
			t.Fatal(err)
		}
		create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "tls"}})
		bundle := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "ConfigBundle",
			"metadata": map[string]any{"namespace": "shop", "name": "web-config"},
			"spec":     map[string]any{"secretName": "tls", "configMaps": []any{}},
		}}
		start := time.Now()
		create(t, c, bundle)
		eventually(t, 30*time.Second, func() error {
			got, err := graphEdges(metrics, "shop/Secret/tls/incoming")
			if err != nil {
				return err
			}
			if want := []string{"USES_SECRET shop/ConfigBundle/web-config -> shop/Secret/tls"}; !slices.Equal(got, want) {
				return fmt.Errorf("edges %q, want %q", got, want)
			}
			return nil
		}, func() string { return a.log.tail(20) })
		t.Logf("the ConfigBundle's edge after %v", time.Since(start).Round(time.Millisecond))
		if !strings.Contains(a.log.String(), "discovered CRD, registered informer") {
			t.Errorf("no log of the CRD's informer:\n%s", a.log.tail(20))
		}
		denied(t, "tls", "this Secret is in use by ConfigBundle web-config")
	})

	t.Run("a deleted CRD's edges are kept", func(t *testing.T) {
		if err := c.Delete(ctx, configBundleCRD()); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			if !strings.Contains(a.log.String(), "deregistered CRD informer") {
				return fmt.Errorf("the informer is still registered")
			}
			return nil
		}, func() string { return a.log.tail(20) })
		eventually(t, 30*time.Second, func() error {
			err := c.Get(ctx, client.ObjectKeyFromObject(configBundleCRD()), &apiextv1.CustomResourceDefinition{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("the CRD is still there: %v", err)
			}
			return nil
		})
		got, err := graphEdges(metrics, "shop/Secret/tls/incoming")
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"USES_SECRET shop/ConfigBundle/web-config -> shop/Secret/tls"}; !slices.Equal(got, want) {
			t.Errorf("edges after the CRD's deletion %q, want %q", got, want)
		}
	})
}
