package runner_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
)

// TestReviewOldObject: the review carries an UPDATE's old object as its
// oldObject, the object of a DELETE as its oldObject, and null otherwise.
func TestReviewOldObject(t *testing.T) {
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "labels": map[string]any{"v": "2"}}}
	old := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "labels": map[string]any{"v": "1"}}}
	tests := []struct {
		name     string
		req      runner.Request
		obj, old any
	}{
		{"update with old", runner.Request{Operation: rules.Update, Namespace: "ns", Object: obj, Old: old}, obj, old},
		{"update without old", runner.Request{Operation: rules.Update, Namespace: "ns", Object: obj}, obj, nil},
		{"create", runner.Request{Operation: rules.Create, Namespace: "ns", Object: obj}, obj, nil},
		{"delete", runner.Request{Operation: rules.Delete, Namespace: "ns", Object: old}, nil, old},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := runner.Review(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var rv struct {
				Request struct {
					Object    any `json:"object"`
					OldObject any `json:"oldObject"`
				} `json:"request"`
			}
			if err := json.Unmarshal(body, &rv); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.obj, rv.Request.Object); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.old, rv.Request.OldObject); diff != "" {
				t.Errorf("oldObject (-want +got):\n%s", diff)
			}
			a := runner.Attributes(tt.req)
			if (a.OldObject == nil) != (tt.old == nil) {
				t.Errorf("Attributes: OldObject %v, want %v", a.OldObject, tt.old)
			}
		})
	}
}
