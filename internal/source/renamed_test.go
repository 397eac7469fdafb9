package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
)

// oldModRule is ModRule read under a made-up former name, OldModRule.
type oldModRule struct{ kinds.Kind }

func (oldModRule) Name() string      { return "OldModRule" }
func (oldModRule) RenamedTo() string { return "ModRule" }

// TestRenamedKind: a rule under a kind's former name loads, is reported as
// deprecated (LoadRules, and FileSource's log, which serve --standalone
// writes), and is the same rule as one of the current name.
func TestRenamedKind(t *testing.T) {
	mr := modrule.NewKind("")
	reg := kinds.NewRegistry(mr, oldModRule{mr})
	old := strings.Replace(goodRule, "kind: ModRule", "kind: OldModRule", 1)
	if old == goodRule {
		t.Fatal("the test rule has no kind: ModRule line")
	}
	docs, err := ParseManifest("a.yaml", []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	res := LoadRules(docs, reg)
	if len(res.Rules) != 1 || len(res.Errors) != 0 || len(res.Deprecated) != 1 ||
		!strings.Contains(res.Deprecated[0], "OldModRule is deprecated: write kind ModRule") {
		t.Fatalf("rules %d, errors %v, deprecated %q", len(res.Rules), res.Errors, res.Deprecated)
	}
	if got := reg.Names(); got != "ModRule" {
		t.Errorf("names %q, want the current one only", got)
	}
	docs, err = ParseManifest("a.yaml", []byte(goodRule+"\n---\n"+old))
	if err != nil {
		t.Fatal(err)
	}
	if res := LoadRules(docs, reg); len(res.Duplicates) != 1 {
		t.Errorf("a rule under both names: duplicates %v", res.Duplicates)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	log := funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{})
	fs := &FileSource{Paths: []string{dir}, Kinds: reg, Store: &Store{}, Log: log}
	if _, err := fs.Load(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "former name") || !strings.Contains(logged.String(), "write kind ModRule") {
		t.Errorf("log:\n%s", logged.String())
	}
}
