package source_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/test/load"
)

// BenchmarkLoad10k measures what serve does before it is ready with the
// load test's 10,000 rules: read and parse the YAML, decode and compile
// every rule, index the snapshot.
func BenchmarkLoad10k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, load.RuleSet(10000, 10), 0o644); err != nil {
		b.Fatal(err)
	}
	fs := &source.FileSource{Paths: []string{path}, Kinds: kinds.NewRegistry(modrule.NewKind("")), Store: &source.Store{}, Log: logr.Discard()}
	b.ReportAllocs()
	for b.Loop() {
		rep, err := fs.Load()
		if err != nil {
			b.Fatal(err)
		}
		if rep.Ready != 10000 {
			b.Fatalf("%d rules ready", rep.Ready)
		}
		b.ReportMetric(rep.Read.Seconds(), "read-s")
		b.ReportMetric(rep.Compile.Seconds(), "compile-s")
		b.ReportMetric(rep.Index.Seconds(), "index-s")
	}
}
