package jsonpath

import (
	"context"
	"testing"

	"github.com/modwright/modwright/internal/value"
)

const benchDeployment = `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "checkout",
    "namespace": "shop",
    "uid": "5b0b9c4e-1f0e-4a8a-9a8f-3c1b2f6f5d11",
    "resourceVersion": "123456",
    "generation": 4,
    "labels": {"app": "checkout", "tier": "backend", "team": "payments", "app.kubernetes.io/version": "2.3.1"},
    "annotations": {"deployment.kubernetes.io/revision": "4", "prometheus.io/scrape": "true", "prometheus.io/port": "9102"}
  },
  "spec": {
    "replicas": 3,
    "revisionHistoryLimit": 10,
    "selector": {"matchLabels": {"app": "checkout"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
    "template": {
      "metadata": {"labels": {"app": "checkout", "tier": "backend"}, "annotations": {"sidecar.istio.io/inject": "true"}},
      "spec": {
        "serviceAccountName": "checkout",
        "securityContext": {"runAsNonRoot": true, "fsGroup": 2000},
        "containers": [
          {
            "name": "checkout",
            "image": "registry.example.com/shop/checkout:2.3.1",
            "imagePullPolicy": "IfNotPresent",
            "args": ["--port=8080", "--log-level=info"],
            "env": [
              {"name": "DB_HOST", "value": "postgres.shop.svc"},
              {"name": "DB_USER", "valueFrom": {"secretKeyRef": {"name": "db", "key": "user"}}},
              {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}
            ],
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9102, "protocol": "TCP"}],
            "resources": {"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "initialDelaySeconds": 10, "periodSeconds": 10},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true}
          },
          {
            "name": "envoy",
            "image": "envoyproxy/envoy:v1.29.1",
            "ports": [{"name": "admin", "containerPort": 9901}],
            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}
          },
          {
            "name": "log-shipper",
            "image": "fluent/fluent-bit:2.2",
            "volumeMounts": [{"name": "logs", "mountPath": "/var/log/app"}]
          }
        ],
        "volumes": [{"name": "logs", "emptyDir": {}}]
      }
    }
  },
  "status": {"observedGeneration": 4, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3}
}`

func BenchmarkEvaluate(b *testing.B) {
	doc, err := value.Decode([]byte(benchDeployment))
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, expr string }{
		{"definite", `$.metadata.labels.app`},
		{"definite-compare", `$.metadata.labels.app == "checkout"`},
		{"wildcard", `$.spec.template.spec.containers[*].image`},
		{"filter", `$.spec.template.spec.containers[?(@.image =~ "^envoyproxy/")].name`},
		{"filter-exists", `length($.spec.template.spec.containers[?(@.securityContext && @.ports[?(@.containerPort == 8080)])]) > 0`},
		{"descent", `$..containerPort`},
	}
	ctx := context.Background()
	for _, c := range cases {
		e := MustParse(c.expr)
		if res, err := e.Evaluate(ctx, doc); err != nil || len(res.Values) == 0 {
			b.Fatalf("%s: %v %v", c.expr, res, err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Evaluate(ctx, doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSelect(b *testing.B) {
	doc, err := value.Decode([]byte(benchDeployment))
	if err != nil {
		b.Fatal(err)
	}
	e := MustParse(`$.spec.template.spec.containers[*].ports[?(@.containerPort > 9000)]`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Select(context.Background(), doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		MustParse(`$.spec.template.spec.containers[? isUndefined(@.securityContext) || @.image =~ "nginx:1\\.14\\..*"]`)
	}
}
