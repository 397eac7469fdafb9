package cluster

import (
	"os"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestCRDSchemas checks that the CRDs the informer delivers type their
// kinds' values, that a changed CRD replaces its versions' typings, and
// that a deleted one leaves its kinds untyped.
func TestCRDSchemas(t *testing.T) {
	b, err := os.ReadFile("../../../testdata/crd/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	s := &CRDSchemas{}
	spec := map[string]any{"x-mode": "fast"}
	typed := func(apiVersion string) bool {
		t.Helper()
		v, ok := s.TypedValue(apiVersion, "Widget", []any{"spec"}, spec)
		if !ok {
			return false
		}
		// The property x-mode is x__dash__mode, as a CRD rule reads it.
		if m, isMap := v.(traits.Mapper); !isMap || m.Contains(types.String("x__dash__mode")) != types.True {
			t.Fatalf("%s: spec typed as %v", apiVersion, v)
		}
		return true
	}
	if typed("example.com/v1") {
		t.Fatal("typed before the CRD is known")
	}
	s.changed(&unstructured.Unstructured{Object: crd})
	if !typed("example.com/v1") {
		t.Fatal("not typed once the CRD is known")
	}
	if !s.Types("example.com/v1", "Widget") || s.Types("example.com/v1", "Gadget") || s.Types("v1", "Pod") {
		t.Fatal("Types does not say which kinds have a schema")
	}
	// The version renamed: v1 is no longer served.
	versions := crd["spec"].(map[string]any)["versions"].([]any)
	versions[0].(map[string]any)["name"] = "v2"
	s.changed(&unstructured.Unstructured{Object: crd})
	if typed("example.com/v1") || !typed("example.com/v2") {
		t.Fatal("the changed CRD's typings are not the ones it serves")
	}
	s.set("widgets.example.com", nil)
	if typed("example.com/v2") {
		t.Fatal("typed after the CRD is deleted")
	}
}
