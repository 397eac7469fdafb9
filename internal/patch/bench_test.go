package patch

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/modwright/modwright/internal/value"
)

const deploymentJSON = `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "web",
    "namespace": "shop",
    "uid": "0b5b6f3e-7c1e-4a55-9d35-1f1c5e0e2f11",
    "resourceVersion": "123456",
    "generation": 4,
    "creationTimestamp": "2024-05-01T10:00:00Z",
    "labels": {"app": "web", "tier": "frontend", "team": "shop"},
    "annotations": {"deployment.kubernetes.io/revision": "4", "example.com/owner": "shop-team"}
  },
  "spec": {
    "replicas": 3,
    "revisionHistoryLimit": 10,
    "selector": {"matchLabels": {"app": "web"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
    "template": {
      "metadata": {"labels": {"app": "web", "tier": "frontend"}, "annotations": {"prometheus.io/scrape": "true"}},
      "spec": {
        "serviceAccountName": "web",
        "terminationGracePeriodSeconds": 30,
        "securityContext": {"runAsNonRoot": true, "fsGroup": 2000},
        "containers": [
          {
            "name": "web",
            "image": "registry.example.com/shop/web:1.4.2",
            "imagePullPolicy": "IfNotPresent",
            "args": ["--port=8080", "--log-level=info"],
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [
              {"name": "MODE", "value": "production"},
              {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
              {"name": "DB_HOST", "value": "db.shop.svc"}
            ],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}]
          },
          {
            "name": "proxy",
            "image": "registry.example.com/infra/proxy:2.0.0",
            "ports": [{"name": "proxy", "containerPort": 15001}],
            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}
          }
        ],
        "volumes": [{"name": "config", "configMap": {"name": "web-config"}}]
      }
    }
  },
  "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 4}
}`

func deployment(b *testing.B) any {
	v, err := value.Decode([]byte(deploymentJSON))
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkApply(b *testing.B) {
	cases := []struct {
		name string
		op   Operation
	}{
		{"AddLabel", Operation{Op: Add, Path: Pointer{"spec", "template", "metadata", "labels", "color"}, Value: "blue"}},
		{"ReplaceImage", Operation{Op: Replace, Path: Pointer{"spec", "template", "spec", "containers", "0", "image"}, Value: "registry.example.com/shop/web:1.5.0"}},
		{"AddEnv", Operation{Op: Add, Path: Pointer{"spec", "template", "spec", "containers", "0", "env", "-"}, Value: map[string]any{"name": "COLOR", "value": "blue"}}},
		{"AddMissingParents", Operation{Op: Add, Path: Pointer{"spec", "template", "spec", "nodeSelector", "disk"}, Value: "ssd"}},
		{"RemoveContainer", Operation{Op: Remove, Path: Pointer{"spec", "template", "spec", "containers", "-1"}}},
		{"RemoveMissing", Operation{Op: Remove, Path: Pointer{"spec", "template", "spec", "tolerations", "0"}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			d := NewDoc(deployment(b))
			mark := d.Mark()
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Apply(c.op); err != nil {
					b.Fatal(err)
				}
				d.Rollback(mark)
			}
		})
	}
}

func BenchmarkParsePointer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParsePointer("/spec/template/spec/containers/0/image"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiff(b *testing.B) {
	orig := deployment(b)
	mod := value.DeepCopy(orig)
	for _, op := range []Operation{
		{Op: Replace, Path: Pointer{"spec", "replicas"}, Value: json.Number("5")},
		{Op: Replace, Path: Pointer{"spec", "template", "spec", "containers", "0", "image"}, Value: "registry.example.com/shop/web:1.5.0"},
		{Op: Add, Path: Pointer{"spec", "template", "metadata", "labels", "color"}, Value: "blue"},
	} {
		d := NewDoc(mod)
		if err := d.Apply(op); err != nil {
			b.Fatal(err)
		}
	}
	if n := len(Diff(orig, mod)); n != 3 {
		b.Fatalf("Diff gives %d operations, want 3", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		Diff(orig, mod)
	}
}

func BenchmarkApplyRFC6902(b *testing.B) {
	orig := deployment(b)
	ops := []Operation{
		{Op: Replace, Path: Pointer{"spec", "replicas"}, Value: json.Number("5")},
		{Op: Add, Path: Pointer{"spec", "template", "metadata", "labels", "color"}, Value: "blue"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ApplyRFC6902(orig, ops); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkArrayOps applies, as one rule does (one mark, then Release), one
// operation per element of a 20,000-element array: the scenario of issue 13,
// which copied the array per operation (quadratic memory).
func BenchmarkArrayOps(b *testing.B) {
	const n = 20000
	elems := make([]any, n)
	for i := range elems {
		elems[i] = strconv.Itoa(i)
	}
	ops := map[string][]Operation{}
	for i := 0; i < n; i++ {
		ops["remove-from-end"] = append(ops["remove-from-end"], Operation{Op: Remove, Path: Pointer{"data", "a", strconv.Itoa(n - 1 - i)}})
		ops["append"] = append(ops["append"], Operation{Op: Add, Path: Pointer{"data", "b", "-1"}, Value: elems[i]})
		ops["prepend"] = append(ops["prepend"], Operation{Op: Add, Path: Pointer{"data", "b", "0"}, Value: elems[i]})
	}
	doc := map[string]any{"data": map[string]any{"a": elems}}
	for _, name := range []string{"remove-from-end", "append", "prepend"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := NewDoc(doc)
				for _, op := range ops[name] {
					if err := d.Apply(op); err != nil {
						b.Fatal(err)
					}
				}
				d.Release()
			}
		})
	}
}
