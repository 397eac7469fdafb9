package kinitiras

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

// anything is a cluster and an HTTP server that answer every reference:
// each object asked for exists, and every URL answers {"data": {"result":
// {"reject": false}}}.
type anything struct{}

func (anything) GetKind(_ context.Context, apiVersion, kind, ns, name string) (map[string]any, error) {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"replica": json.Number("1")}}, nil
}

func (a anything) ListKind(ctx context.Context, apiVersion, kind, ns, _ string, _ int) ([]map[string]any, error) {
	o, _ := a.GetKind(ctx, apiVersion, kind, ns, "found")
	return []map[string]any{o}, nil
}

func (anything) Fetch(context.Context, engine.HTTPRequest) (*engine.HTTPResponse, error) {
	return &engine.HTTPResponse{Status: 200, Body: []byte(`{"data": {"result": {"reject": false}}}`)}, nil
}

// TestKinitirasExamples runs kinitiras' published examples as its users
// would: each policy loads (but validate-pab.yaml's pab template, which
// kinitiras v0.4.5 silently ignored: refused), each override example
// patches the objects it selects on the operations it names without
// error, and the delete protections refuse deleting the Namespaces they
// protect (deletens-cvp: every labeled one; validate-multi: those marked
// no-delete). The objects carry kinitiras' webhook label, as every object
// kinitiras' webhook configuration sends.
func TestKinitirasExamples(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kinitiras", "MODWRIGHT_KINITIRAS_DIR", "examples")
	files, _ := filepath.Glob(filepath.Join(dir, "examples", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join(dir, "examples", "templates", "*.yaml"))
	rd := &Readers{Kinds: anything{}, HTTP: anything{}}
	ctx := context.Background()
	for _, f := range append(files, more...) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := yaml.Unmarshal(data, &obj); err != nil {
				t.Fatal(err)
			}
			tree, _ := value.Decode(mustJSON(t, obj))
			p, err := Compile(tree.(map[string]any))
			if strings.HasSuffix(f, "validate-pab.yaml") {
				if err == nil {
					if _, err = Render(tree.(map[string]any)); err == nil {
						t.Fatal("the pab template is accepted")
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// A probe of the kind the policy selects, with the labels its
			// selectors ask for.
			// kinitiras' webhook sends it the labeled objects only.
			labels := map[string]any{"kinitiras.kcloudlabs.io/webhook": "enabled"}
			kind, apiVersion := "Namespace", "v1"
			for _, s := range p.selectors {
				kind, apiVersion = s.Kind, s.APIVersion
				if s.LabelSelector != nil {
					for k, v := range s.LabelSelector.MatchLabels {
						labels[k] = v
					}
				}
			}
			probe := func(noDelete bool) map[string]any {
				md := map[string]any{"name": "probe", "labels": labels, "annotations": map[string]any{},
					"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"}}}
				if kind != "Namespace" {
					md["namespace"] = "default"
				}
				if noDelete {
					md["annotations"].(map[string]any)["no-delete"] = "true"
				}
				spec := map[string]any{"restartPolicy": "Always", "containers": []any{map[string]any{"name": "c", "image": "nginx",
					"resources": map[string]any{"limits": map[string]any{"cpu": "2", "memory": "1Gi", "ephemeral-storage": "1Gi"}}}}}
				if kind == "Deployment" {
					spec = map[string]any{"template": map[string]any{"spec": spec}}
				}
				return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md, "spec": spec}
			}
			if p.Kind == KindClusterValidate {
				for _, marked := range []bool{true, false} {
					ok, msg, err := Validate(ctx, rd, []*Policy{p}, probe(marked), nil, rules.Delete)
					if err != nil {
						t.Fatal(err)
					}
					// deletens-cvp refuses deleting any labeled Namespace;
					// validate-multi those marked no-delete.
					if want := !marked && strings.Contains(f, "validate-multi"); ok != want {
						t.Errorf("no-delete %v: allowed %v (%q), want %v", marked, ok, msg, want)
					}
				}
				return
			}
			applied := 0
			for _, op := range []rules.Operation{rules.Create, rules.Update} {
				obj := probe(false)
				out, cluster, namespaced, err := ApplyOverrides(ctx, rd, []*Policy{p}, obj, obj, op)
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				if out == nil {
					t.Fatalf("%s: no object", op)
				}
				applied += len(cluster) + len(namespaced)
			}
			if applied == 0 {
				t.Error("applied to nothing")
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
