package crdschema_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/crdschema"
)

func yamlMap(t *testing.T, y string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func widgets(t *testing.T) *crdschema.Set {
	t.Helper()
	b, err := os.ReadFile("../../testdata/crd/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := crdschema.NewSet()
	if err := s.Add(context.Background(), yamlMap(t, string(b))); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValidate(t *testing.T) {
	s := widgets(t)
	v := s.For("example.com/v1", "Widget")
	if v == nil {
		t.Fatalf("no Widget in %v", s.Kinds())
	}
	const head = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
	for _, c := range []struct {
		name, obj, old, want string
	}{
		{"valid, defaulted", "spec: {size: small}", "", ""},
		{"enum", "spec: {size: tiny}", "", `Widget.example.com "w" is invalid: [spec.size: Unsupported value: "tiny": supported values: "small", "medium", "large", <nil>: Invalid value: null: some validation rules were not checked`},
		{"missing required: rules not checked", "spec: {}", "", `spec.size: Required value, <nil>: Invalid value: null: some validation rules were not checked`},
		{"object rule", "spec: {size: small, minReplicas: 5, maxReplicas: 2}", "", `spec: Invalid value: minReplicas must not exceed maxReplicas`},
		{"escaped name, messageExpression, reason, fieldPath", "spec: {size: small, x-mode: fast}", "", `spec.size: Forbidden: size small has no mode`},
		{"scalar rule", "spec: {size: medium, x-mode: warp}", "", `spec.x-mode: Invalid value: "warp": failed rule: self in ['fast', 'slow']`},
		{"list map rule and duplicate key", "spec: {size: small, ports: [{name: a, port: 80}, {name: a, port: 8080}]}", "", `spec.ports[1]: Duplicate value: {"name":"a"}`},
		{"list rule", "spec: {size: small, ports: [{name: a, port: 80}]}", "", `spec.ports: Invalid value: ports must be unprivileged`},
		{"unknown field", "spec: {size: small, colour: red}", "", `strict decoding error: unknown field "spec.colour"`},
		{"transition rule", "spec: {size: small}", "spec: {size: large}", `Widget.example.com "w" is invalid: spec.size: Invalid value: "small": a large widget cannot shrink`},
		{"transition allowed", "spec: {size: large}", "spec: {size: small}", ""},
		{"ratcheting: an unchanged invalid value passes", "spec: {size: medium, x-mode: warp, minReplicas: 3}", "spec: {size: medium, x-mode: warp}", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var old map[string]any
			if c.old != "" {
				old = yamlMap(t, head+c.old)
			}
			res := v.Validate(context.Background(), yamlMap(t, head+c.obj), old, "shop")
			err := res.Err(v)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("want valid, got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v\nwant it to contain %s", err, c.want)
			}
		})
	}
	// The rule failure ratcheting forgave is a warning, as the API server
	// answers it (admitted, Warning: printed by kubectl).
	res := v.Validate(context.Background(), yamlMap(t, head+"spec: {size: medium, x-mode: warp, minReplicas: 3}"), yamlMap(t, head+"spec: {size: medium, x-mode: warp}"), "shop")
	if want := `spec.x-mode: Invalid value: "warp": failed rule: self in ['fast', 'slow']`; len(res.Warnings) != 1 || res.Warnings[0] != want {
		t.Errorf("warnings %q, want %q", res.Warnings, want)
	}
	res = v.Validate(context.Background(), yamlMap(t, head+"spec: {size: small}"), nil, "shop")
	if spec := res.Object["spec"].(map[string]any); spec["minReplicas"] != int64(1) || spec["maxReplicas"] != int64(10) || res.Object["metadata"].(map[string]any)["namespace"] != nil {
		t.Errorf("not defaulted: %v", res.Object)
	}
}

func TestInvalidCRD(t *testing.T) {
	b, err := os.ReadFile("../../testdata/crd/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `rule: "self in ['fast', 'slow']"`, `rule: "self.nope > 1"`, 1)
	err = crdschema.NewSet().Add(context.Background(), yamlMap(t, bad))
	if !errors.Is(err, crdschema.ErrInvalidCRD) || !strings.Contains(err.Error(), "x-kubernetes-validations[0].rule: Invalid value") {
		t.Fatalf("got %v", err)
	}
}
