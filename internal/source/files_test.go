package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/metrics"
)

const goodRule = `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: ok, namespace: ns}
spec:
  type: Reject
  match: [{select: '$.kind', matchValue: Pod}]
`

const brokenRule = `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: broken, namespace: ns}
spec:
  type: Reject
  match: [{select: '$.kind['}]
`

func TestFileSource(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	store := &Store{}
	fs := &FileSource{Paths: []string{dir}, Kinds: testKinds(), Store: store, Log: logr.Discard(), Metrics: metrics.New(reg)}

	// No rules at all: an error, nothing published.
	if _, err := fs.Load(); !errors.Is(err, ErrNoRules) || store.Ready() {
		t.Fatalf("empty dir: err=%v ready=%v", err, store.Ready())
	}
	write("a.yaml", goodRule+"---\n"+brokenRule+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	rep, err := fs.Load()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ready != 1 || rep.Broken != 1 || len(rep.Skipped) != 1 || len(rep.Errors) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	snap := store.Current()
	if snap == nil || snap.Len() != 2 || len(snap.Broken()) != 1 {
		t.Fatalf("snapshot: %v", snap)
	}
	expectMetrics(t, reg, `
modwright_rules{state="broken"} 1
modwright_rules{state="ready"} 1
`, "modwright_rules")

	// An unreadable file keeps the previous snapshot serving.
	write("b.yaml", "{not yaml")
	if _, err := fs.Load(); err == nil || store.Current() != snap {
		t.Fatalf("bad file: err=%v, snapshot replaced=%v", err, store.Current() != snap)
	}
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	write("a.yaml", goodRule)
	if _, err := fs.Load(); err != nil || store.Current() == snap || store.Current().Len() != 1 {
		t.Fatalf("reload: %v", err)
	}
	expectMetrics(t, reg, `
modwright_snapshot_builds_total{result="failed"} 2
modwright_snapshot_builds_total{result="published"} 2
`, "modwright_snapshot_builds_total")
}

// expectMetrics compares the named metrics' samples (without HELP and TYPE
// lines, which are added from the registry).
func expectMetrics(t *testing.T, reg *prometheus.Registry, samples string, name string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var header string
	for _, mf := range mfs {
		if mf.GetName() == name {
			header = "# HELP " + name + " " + mf.GetHelp() + "\n# TYPE " + name + " " + strings.ToLower(mf.GetType().String()) + "\n"
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(header+strings.TrimPrefix(samples, "\n")), name); err != nil {
		t.Error(err)
	}
}

// A FileSource keeps its parsed expressions from one Load to the next: the
// reloaded rule shares them with the first load's; LoadRules, one cache per
// call, does not.
func TestFileSourceReloadSharesExpressions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(goodRule), 0o644); err != nil {
		t.Fatal(err)
	}
	store := &Store{}
	reg := testKinds()
	fs := &FileSource{Paths: []string{dir}, Kinds: reg, Store: store, Log: logr.Discard()}
	selectOf := func() any {
		t.Helper()
		if _, err := fs.Load(); err != nil {
			t.Fatal(err)
		}
		return modRule(store.Current().Rules()[0]).Criteria[0].Select
	}
	first, second := selectOf(), selectOf()
	if first != second {
		t.Error("a reload parsed the rule's select expression again")
	}
	if e, r := reg.Kinds()[0].(*modrule.KindAdapter).Compiler.Cache.Len(); e != 1 || r != 0 {
		t.Errorf("cache: %d expressions, %d regexes; want 1, 0", e, r)
	}
	docs, err := ReadPaths([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := LoadRules(docs, testKinds()); modRule(res.Rules[0]).Criteria[0].Select == first {
		t.Error("another registry shares the FileSource's cache")
	}
}
