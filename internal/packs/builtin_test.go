package packs_test

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/value"
)

func decodeYAML(t *testing.T, b []byte) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	v, err := value.Decode(j)
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// TestBuiltinOpenShift: the embedded OpenShift pack loads, derives the
// edges its samples are written for, and reads a DeploymentConfig's pod
// template exactly as the built-in extractors read a Deployment's.
func TestBuiltinOpenShift(t *testing.T) {
	ctx := context.Background()
	p, err := packs.Load(ctx, "builtin:"+packs.BuiltinOpenShift, packs.KubeAtlasVersion, 0, packs.OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	samples, err := packs.BuiltinSamples(packs.BuiltinOpenShift)
	if err != nil {
		t.Fatal(err)
	}
	router := packs.NewRouter(p)
	want := map[string]int{"route.yaml": 3, "deploymentconfig.yaml": 5, "buildconfig.yaml": 5}
	for name, b := range samples {
		edges, errs := router.Derive(ctx, decodeYAML(t, b))
		if len(errs) > 0 || len(edges) != want[name] {
			t.Errorf("%s: %d edges %v, errors %v; want %d", name, len(edges), edges, errs, want[name])
		}
	}
	if len(samples) != len(want) {
		t.Errorf("samples %d, want %d", len(samples), len(want))
	}

	dc := decodeYAML(t, samples["deploymentconfig.yaml"])
	fromPack, errs := router.Derive(ctx, dc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	dc["apiVersion"], dc["kind"] = "apps/v1", "Deployment"
	var fromExtract []graph.Edge
	for _, e := range graph.Extract(dc) {
		e.From.Kind = "DeploymentConfig"
		fromExtract = append(fromExtract, e)
	}
	slices.SortFunc(fromPack, graph.Compare)
	if d := cmp.Diff(fromExtract, fromPack); d != "" {
		t.Errorf("-built-in extractors +pack:\n%s", d)
	}

	if _, err := packs.Load(ctx, "builtin:nope", packs.KubeAtlasVersion, 0, packs.OCIOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an unknown embedded pack: %v", err)
	}
}
