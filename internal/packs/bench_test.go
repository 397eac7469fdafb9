package packs_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	oparego "github.com/open-policy-agent/opa/v1/rego"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

// BenchmarkDerive measures deriving the example pack's edges for its
// sample (uncached), against a bare OPA PrepareForEval + Eval of the same
// module (issue 18's bound: within 1.3x).
func BenchmarkDerive(b *testing.B) {
	dir := filepath.Join(testtool.RepoRoot(b), "examples", "rule-packs", "config-bundles")
	ctx := context.Background()
	pack, err := packs.LoadDir(ctx, dir, packs.KubeAtlasVersion, 0)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "samples", "bundle.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	input, err := value.Decode(js)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("modwright", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			es, err := pack.Modules[0].Derive(ctx, input)
			if err != nil || len(es) != 3 {
				b.Fatal(es, err)
			}
		}
	})
	b.Run("warm-cache", func(b *testing.B) {
		md := input.(map[string]any)["metadata"].(map[string]any)
		md["uid"], md["resourceVersion"] = "0b9c", "42"
		defer func() { delete(md, "uid"); delete(md, "resourceVersion") }()
		router := packs.NewRouter(pack)
		c := packs.NewCache(router.Derive, router.Hash(), 0)
		b.ReportAllocs()
		for b.Loop() {
			es, errs := c.Derive(ctx, input.(map[string]any))
			if errs != nil || len(es) != 3 {
				b.Fatal(es, errs)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "derivations/s")
	})
	b.Run("opa", func(b *testing.B) {
		src, err := os.ReadFile(filepath.Join(dir, "bundle.rego"))
		if err != nil {
			b.Fatal(err)
		}
		pq, err := oparego.New(oparego.Query("data.modwright.examples.config_bundles.derive"), oparego.Module("bundle.rego", string(src))).PrepareForEval(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			rs, err := pq.Eval(ctx, oparego.EvalInput(input))
			if err != nil || len(rs) != 1 {
				b.Fatal(rs, err)
			}
		}
	})
}
