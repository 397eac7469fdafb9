package patch

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fuzzFunc matches the declaration of a fuzz target in a test file.
var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w*)\(\w+ \*testing\.F\)`)

// fuzzLine matches one run of the Makefile's fuzz target:
// $(GO) test ./internal/x -run '^$$' -fuzz '^FuzzY$$' -fuzztime $(FUZZTIME)
var fuzzLine = regexp.MustCompile(`\$\(GO\) test (\./\S+) -run '\^\$\$' -fuzz '\^(Fuzz\w*)\$\$' -fuzztime \$\(FUZZTIME\)`)

// TestMakefileFuzzTargets checks that `make fuzz` runs every fuzz target of
// the repository, and nothing else (issue 13: FuzzAppendJSON and
// FuzzParsePointer were missing). It lives here for want of a package of
// the repository's own; it reads only files.
func TestMakefileFuzzTargets(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	recipe := fuzzRecipe(t, string(makefile))
	var listed []string
	for _, line := range recipe {
		m := fuzzLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("Makefile: fuzz recipe line not of the form $(GO) test ./pkg -run '^$$' -fuzz '^FuzzX$$' -fuzztime $(FUZZTIME): %s", line)
			continue
		}
		listed = append(listed, m[1]+" "+m[2])
	}

	var defined []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			defined = append(defined, "./"+filepath.ToSlash(rel)+" "+m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(defined) == 0 {
		t.Fatal("no fuzz target found in the repository")
	}
	for _, f := range defined {
		if !slices.Contains(listed, f) {
			t.Errorf("Makefile: make fuzz does not run %s (add: $(GO) test %s -run '^$$' -fuzz '^%s$$' -fuzztime $(FUZZTIME))", f, strings.Fields(f)[0], strings.Fields(f)[1])
		}
	}
	for _, f := range listed {
		if !slices.Contains(defined, f) {
			t.Errorf("Makefile: make fuzz runs %s, which is not a fuzz target of the repository", f)
		}
	}
	t.Logf("%d fuzz targets defined, %d runs in make fuzz", len(defined), len(listed))
}

// fuzzRecipe returns the recipe lines of the Makefile's fuzz target.
func fuzzRecipe(t *testing.T, makefile string) []string {
	t.Helper()
	var lines []string
	in := false
	for _, line := range strings.Split(makefile, "\n") {
		switch {
		case strings.HasPrefix(line, "fuzz:"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			lines = append(lines, strings.TrimSpace(line))
		case in:
			if len(lines) == 0 {
				t.Fatal("Makefile: the fuzz target has no recipe")
			}
			return lines
		}
	}
	if !in {
		t.Fatal("Makefile: no fuzz target")
	}
	return lines
}
