package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/cases from the actual results")

// corpusDir is the shared case corpus: every case is a txtar archive run
// through `modwright apply` exactly as a user would run it.
//
// Sections: args (extra flags, one line, shell-like words), rules.yaml,
// input.yaml, context.yaml (optional, passed as --context), want.yaml or
// want.json (the expected stdout, compared as JSON values document by
// document), stderr (each non-blank line must occur in stderr), exit (the
// expected exit code, default 0). The comment at the top says what the case
// shows.
const corpusDir = "../../testdata/cases"

func TestCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no cases found in testdata/cases")
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, corpusDir+"/"), ".txtar")
		t.Run(name, func(t *testing.T) { runCase(t, f) })
	}
}

type corpusCase struct {
	path    string
	archive *txtar.Archive
}

func (c *corpusCase) section(name string) ([]byte, bool) {
	for _, f := range c.archive.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func (c *corpusCase) set(name string, data []byte) {
	for i, f := range c.archive.Files {
		if f.Name == name {
			c.archive.Files[i].Data = data
			return
		}
	}
	c.archive.Files = append(c.archive.Files, txtar.File{Name: name, Data: data})
}

func runCase(t *testing.T, path string) {
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &corpusCase{path: path, archive: a}
	if strings.TrimSpace(string(a.Comment)) == "" {
		t.Errorf("%s: the case has no description at the top", path)
	}
	dir := t.TempDir()
	args := []string{"apply"}
	for _, sec := range []struct{ name, flag string }{{"rules.yaml", "--rules"}, {"input.yaml", "-f"}, {"context.yaml", "--context"}} {
		data, ok := c.section(sec.name)
		if !ok {
			if sec.name == "context.yaml" {
				continue
			}
			t.Fatalf("%s: section %s is missing", path, sec.name)
		}
		p := filepath.Join(dir, sec.name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, sec.flag, p)
	}
	if extra, ok := c.section("args"); ok {
		args = append(args, strings.Fields(string(extra))...)
	}
	wantExit := 0
	if e, ok := c.section("exit"); ok {
		wantExit, err = strconv.Atoi(strings.TrimSpace(string(e)))
		if err != nil {
			t.Fatalf("%s: exit section: %v", path, err)
		}
	}

	var stdout, stderr bytes.Buffer
	code := ExecuteContext(context.Background(), args, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	t.Logf("modwright %s\nexit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr.String())

	jsonOut := slices.Contains(args, "json")
	wantName := "want.yaml"
	if jsonOut {
		wantName = "want.json"
	}
	if *update {
		// Only what no longer holds is rewritten, so that -update on an
		// unchanged tree changes nothing (the authored key order and the
		// implicit exit 0 stay).
		changed := false
		if want, ok := c.section(wantName); !ok || !sameOutput(want, stdout.Bytes()) {
			c.set(wantName, stdout.Bytes())
			changed = true
		}
		if code != wantExit {
			c.set("exit", []byte(strconv.Itoa(code)+"\n"))
			changed = true
		}
		if changed {
			if err := os.WriteFile(path, txtar.Format(c.archive), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if code != wantExit {
		t.Errorf("exit code %d, want %d", code, wantExit)
	}
	if wantStderr, ok := c.section("stderr"); ok {
		for _, line := range strings.Split(string(wantStderr), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.Contains(stderr.String(), line) {
				t.Errorf("stderr lacks %q", line)
			}
		}
	}
	want, ok := c.section(wantName)
	if !ok {
		t.Fatalf("%s: section %s is missing", path, wantName)
	}
	if code == 2 && stdout.Len() != 0 {
		t.Errorf("exit 2 must leave stdout empty, got:\n%s", stdout.String())
	}
	compareOutput(t, want, stdout.Bytes())
}

// sameOutput reports whether two YAML or JSON streams hold equal objects.
func sameOutput(want, got []byte) bool {
	w, err1 := source.ParseManifest("want", want)
	g, err2 := source.ParseManifest("stdout", got)
	if err1 != nil || err2 != nil || len(w) != len(g) {
		return false
	}
	for i := range w {
		if !value.Equal(w[i].Object, g[i].Object) {
			return false
		}
	}
	return true
}

// compareOutput compares two YAML or JSON streams document by document as
// JSON values.
func compareOutput(t *testing.T, want, got []byte) {
	t.Helper()
	w, err := source.ParseManifest("want", want)
	if err != nil {
		t.Fatalf("want section: %v", err)
	}
	g, err := source.ParseManifest("stdout", got)
	if err != nil {
		t.Fatalf("stdout: %v\n%s", err, got)
	}
	if len(w) != len(g) {
		t.Fatalf("stdout has %d objects, want %d:\n%s", len(g), len(w), got)
	}
	for i := range w {
		if !value.Equal(w[i].Object, g[i].Object) {
			t.Errorf("object %d differs (-want +got):\n%s", i+1, cmp.Diff(w[i].Object, g[i].Object))
		}
	}
}
