package kinitiras_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

func decodeObj(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	v, err := value.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := v.(map[string]any)
	return m
}

func TestConformanceSelectors(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kinitiras", "MODWRIGHT_KINITIRAS_DIR", "selector-cases.json")
	b, err := os.ReadFile(filepath.Join(dir, "selector-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name      string                       `json:"name"`
			Resource  json.RawMessage              `json:"resource"`
			Selectors []kinitiras.ResourceSelector `json:"selectors"`
			Expected  bool                         `json:"expected"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 20 {
		t.Fatalf("%d cases; the data has 20", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if got := kinitiras.Matches(decodeObj(t, c.Resource), c.Selectors); got != c.Expected {
				t.Errorf("Matches = %v, kinitiras %v; selectors %+v", got, c.Expected, c.Selectors)
			}
		})
	}
}

func TestSelector(t *testing.T) {
	obj := decodeObj(t, json.RawMessage(`{"apiVersion": "v1", "kind": "Pod",
		"metadata": {"name": "p", "namespace": "a", "labels": {"app": "web", "n": 1}, "annotations": {"x.y/z": "1"}},
		"spec": {"nodeName": null, "replicas": 3, "nested": {"k": "v"}}}`))
	for _, c := range []struct {
		name    string
		sel     string
		want    bool
		wantErr error
	}{
		{"kind and version only", `{"apiVersion": "v1", "kind": "Pod"}`, true, nil},
		{"another version", `{"apiVersion": "v2", "kind": "Pod"}`, false, nil},
		{"another namespace", `{"apiVersion": "v1", "kind": "Pod", "namespace": "b"}`, false, nil},
		{"the name wins over selectors", `{"apiVersion": "v1", "kind": "Pod", "name": "p", "labelSelector": {"matchLabels": {"app": "db"}}}`, true, nil},
		{"labels and fields both", `{"apiVersion": "v1", "kind": "Pod", "labelSelector": {"matchLabels": {"app": "web"}}, "fieldSelector": {"matchFields": {"spec.nested.k": "v"}}}`, true, nil},
		{"fields fail", `{"apiVersion": "v1", "kind": "Pod", "labelSelector": {"matchLabels": {"app": "web"}}, "fieldSelector": {"matchFields": {"spec.nested.k": "w"}}}`, false, nil},
		{"an annotation key with dots", `{"apiVersion": "v1", "kind": "Pod", "fieldSelector": {"matchFields": {"metadata.annotations.x.y/z": "1"}}}`, true, nil},
		{"a null on the way is absent", `{"apiVersion": "v1", "kind": "Pod", "fieldSelector": {"matchExpressions": [{"field": "spec.nodeName.x", "operator": "DoesNotExist"}]}}`, true, nil},
		{"a number is not a string", `{"apiVersion": "v1", "kind": "Pod", "fieldSelector": {"matchFields": {"spec.replicas": "3"}}}`, false, kinitiras.ErrNotString},
		{"NotIn of an absent field", `{"apiVersion": "v1", "kind": "Pod", "fieldSelector": {"matchExpressions": [{"field": "spec.nope", "operator": "NotIn", "value": ["a"]}]}}`, true, nil},
		{"In of an absent field", `{"apiVersion": "v1", "kind": "Pod", "fieldSelector": {"matchExpressions": [{"field": "spec.nope", "operator": "In", "value": [""]}]}}`, false, nil},
		{"an unknown operator", `{"apiVersion": "v1", "kind": "Pod", "fieldSelector": {"matchExpressions": [{"field": "spec.nested.k", "operator": "!=", "value": ["a"]}]}}`, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s kinitiras.ResourceSelector
			if err := json.Unmarshal([]byte(c.sel), &s); err != nil {
				t.Fatal(err)
			}
			got, err := kinitiras.SelectorMatches(&s, obj)
			if got != c.want {
				t.Errorf("Matches = %v (%v), want %v", got, err, c.want)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("error %v, want %v", err, c.wantErr)
			}
		})
	}
}
