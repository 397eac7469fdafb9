package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/kinds/policy"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
)

// BenchmarkScan is the background scan's evaluation of one object of each
// of the scale measurement's kinds (a ConfigMap, a Pod, a Deployment of
// testdata/bench/objects, about 3 KB each) against its 100 rules
// (testtool.AuditRules), results aggregated into a report: the scan's cost
// per object, without the API server (TestAuditScale measures it whole).
func BenchmarkScan(b *testing.B) {
	docs, err := source.ParseManifest("rules.yaml", []byte(strings.Join(testtool.AuditRules(50), "\n---\n")))
	if err != nil {
		b.Fatal(err)
	}
	reg := kinds.NewRegistry(append(append(kyverno.NewKinds(), policy.NewKinds()...), modrule.NewKind("kubemod-system"))...)
	res := source.LoadRules(docs, reg)
	if len(res.Errors) > 0 {
		b.Fatal(errors.Join(res.Errors...))
	}
	s := audit.NewScanner(engine.NewSnapshot(res.Rules), engine.Options{})
	var objs []map[string]any
	for _, name := range []string{"configmap.json", "pod.json", "deployment.json"} {
		data, err := os.ReadFile(filepath.Join(testtool.RepoRoot(b), "testdata", "bench", "objects", name))
		if err != nil {
			b.Fatal(err)
		}
		var o map[string]any
		if err := json.Unmarshal(data, &o); err != nil {
			b.Fatal(err)
		}
		o["metadata"].(map[string]any)["namespace"] = "scale-00"
		objs = append(objs, o)
	}
	ctx := context.Background()
	rp := audit.NewReport(audit.DefaultMaxResults)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for _, o := range objs {
			rs, err := s.Scan(ctx, o, "scale-00")
			if err != nil {
				b.Fatal(err)
			}
			n += len(rs)
			for _, r := range rs {
				rp.Add(r)
			}
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "results/op")
}
