package graph_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/value"
)

func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	v, err := value.Decode(j)
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// e is an edge in one line: TYPE Kind ns/name -> Kind ns/name.
func e(s string) graph.Edge {
	var typ, fk, fr, tk, tr string
	if _, err := fmt.Sscanf(s, "%s %s %s -> %s %s", &typ, &fk, &fr, &tk, &tr); err != nil {
		panic(s)
	}
	ref := func(kind, nn string) graph.Ref {
		for i := range nn {
			if nn[i] == '/' {
				return graph.Ref{Kind: kind, Namespace: nn[:i], Name: nn[i+1:]}
			}
		}
		return graph.Ref{Kind: kind, Name: nn}
	}
	return graph.Edge{Type: typ, From: ref(fk, fr), To: ref(tk, tr)}
}

func TestExtract(t *testing.T) {
	for _, c := range []struct {
		name, obj string
		want      []string
	}{
		{"a Pod's every source", `
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d4f, uid: u}]
spec:
  serviceAccountName: web
  imagePullSecrets: [{name: registry}]
  volumes:
  - {name: a, configMap: {name: settings}}
  - {name: b, secret: {secretName: tls}}
  - {name: c, persistentVolumeClaim: {claimName: data}}
  - name: d
    projected:
      sources: [{configMap: {name: features}}, {secret: {name: token}}, {serviceAccountToken: {path: t}}]
  initContainers:
  - name: init
    envFrom: [{configMapRef: {name: init-env}}]
  containers:
  - name: app
    env:
    - {name: A, valueFrom: {configMapKeyRef: {name: settings, key: a}}}
    - {name: B, valueFrom: {secretKeyRef: {name: db, key: password}}}
    - {name: C, value: plain}
    envFrom: [{secretRef: {name: api-keys}}]
`, []string{
			"MOUNTS_VOLUME Pod shop/web-1 -> PersistentVolumeClaim shop/data",
			"OWNS ReplicaSet shop/web-5d4f -> Pod shop/web-1",
			"USES_CONFIGMAP Pod shop/web-1 -> ConfigMap shop/features",
			"USES_CONFIGMAP Pod shop/web-1 -> ConfigMap shop/init-env",
			"USES_CONFIGMAP Pod shop/web-1 -> ConfigMap shop/settings",
			"USES_SECRET Pod shop/web-1 -> Secret shop/api-keys",
			"USES_SECRET Pod shop/web-1 -> Secret shop/db",
			"USES_SECRET Pod shop/web-1 -> Secret shop/registry",
			"USES_SECRET Pod shop/web-1 -> Secret shop/tls",
			"USES_SECRET Pod shop/web-1 -> Secret shop/token",
			"USES_SERVICEACCOUNT Pod shop/web-1 -> ServiceAccount shop/web",
		}},
		{"a Deployment's pod template", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      serviceAccount: legacy
      containers: [{name: app, envFrom: [{configMapRef: {name: env}}]}]
`, []string{
			"USES_CONFIGMAP Deployment shop/web -> ConfigMap shop/env",
			"USES_SERVICEACCOUNT Deployment shop/web -> ServiceAccount shop/legacy",
		}},
		{"a CronJob's job template", `
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup, namespace: ops}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          volumes: [{name: creds, secret: {secretName: s3}}]
          containers: [{name: c}]
`, []string{"USES_SECRET CronJob ops/backup -> Secret ops/s3"}},
		{"an Ingress's backends, once each", `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  defaultBackend: {service: {name: fallback, port: {number: 80}}}
  rules:
  - http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /api, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /static, pathType: Prefix, backend: {resource: {kind: StorageBucket, name: b}}}
`, []string{
			"ROUTES_TO Ingress shop/web -> Service shop/fallback",
			"ROUTES_TO Ingress shop/web -> Service shop/web",
		}},
		{"a bound claim", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {volumeName: pv-0042}
`, []string{"ATTACHED_TO PersistentVolumeClaim shop/data -> PersistentVolume pv-0042"}},
		{"a cluster-scoped owner", `
apiVersion: v1
kind: Pod
metadata:
  name: mirror
  namespace: kube-system
  ownerReferences: [{apiVersion: v1, kind: Node, name: node-a}]
spec: {containers: [{name: c}]}
`, []string{"OWNS Node node-a -> Pod kube-system/mirror"}},
		{"a ConfigMap: no edges", `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: shop}
data: {a: b}
`, nil},
		{"no name: no edges", `
apiVersion: v1
kind: Pod
spec: {serviceAccountName: x}
`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var want []graph.Edge
			for _, s := range c.want {
				want = append(want, e(s))
			}
			o := obj(t, c.obj)
			if d := cmp.Diff(want, graph.Extract(o)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if d := cmp.Diff(want, graph.Extract(graph.Slim(o))); d != "" {
				t.Errorf("slim: (-want +got):\n%s", d)
			}
		})
	}
}

// BenchmarkExtract measures the built-in extractors on the 3.3 KB
// benchmark Deployment.
func BenchmarkExtract(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bench", "objects", "deployment.json"))
	if err != nil {
		b.Fatal(err)
	}
	v, err := value.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	o := v.(map[string]any)
	b.ReportAllocs()
	for b.Loop() {
		_ = graph.Extract(o)
	}
}

func TestBuild(t *testing.T) {
	var objs []map[string]any
	for _, y := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: shop, labels: {app: web, tier: front}}\nspec: {volumes: [{name: s, secret: {secretName: tls}}]}",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: api-1, namespace: shop, labels: {app: api}}\nspec: {containers: [{name: c}]}",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web-9, namespace: other, labels: {app: web}}\nspec: {containers: [{name: c}]}",
		"apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {selector: {app: web}}",
		"apiVersion: v1\nkind: Service\nmetadata: {name: manual, namespace: shop}\nspec: {}",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {selector: {matchExpressions: [{key: app, operator: In, values: [web, api]}]}, template: {spec: {containers: [{name: c}]}}}",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: tls, namespace: shop}",
	} {
		objs = append(objs, obj(t, y))
	}
	custom := func(o map[string]any) []graph.Edge {
		if o["kind"] == "Secret" {
			return []graph.Edge{e("ISSUED_FOR Secret shop/tls -> Service shop/web")}
		}
		return nil
	}
	g := graph.Build(objs, custom)
	in := func(s string) []string {
		var out []string
		for _, x := range g.Incoming(e("X " + s + " -> A b").From) {
			out = append(out, fmt.Sprintf("%s %s %s/%s", x.Type, x.From.Kind, x.From.Namespace, x.From.Name))
		}
		return out
	}
	if d := cmp.Diff([]string{"SELECTS Deployment shop/web", "SELECTS Service shop/web"}, in("Pod shop/web-1")); d != "" {
		t.Errorf("web-1 incoming (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"SELECTS Deployment shop/web"}, in("Pod shop/api-1")); d != "" {
		t.Errorf("api-1 incoming (-want +got):\n%s", d)
	}
	if got := in("Pod other/web-9"); got != nil {
		t.Errorf("a Pod of another namespace is selected: %v", got)
	}
	if d := cmp.Diff([]string{"USES_SECRET Pod shop/web-1"}, in("Secret shop/tls")); d != "" {
		t.Errorf("tls incoming (-want +got):\n%s", d)
	}
	if got := g.Outgoing(e("X Secret shop/tls -> A b").From); len(got) != 1 || got[0].Type != "ISSUED_FOR" {
		t.Errorf("a deriver's edges: %v", got)
	}
	if n := len(g.Edges()); n != 5 {
		t.Errorf("%d edges: %v", n, g.Edges())
	}
}
