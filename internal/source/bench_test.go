package source_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// BenchmarkParseManyDocuments: one file of 50,000 small documents; the
// time per document must not grow with the file (positions are found in
// one pass).
func BenchmarkParseManyDocuments(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 50000; i++ {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\n", i)
	}
	data := []byte(sb.String())
	b.ResetTimer()
	for range b.N {
		if _, err := source.ParseManifest("many.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
