package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/translate"
)

// Gatekeeper's policy library with its own `gator verify` suites
// (../shared/conformance/gatekeeper-library, or
// $MODWRIGHT_GATEKEEPER_LIBRARY_DIR): every suite.yaml runs through
// `modwright test` as gator verify runs it, and every case must pass
// (docs/compatibility.md lists where modwright differs on purpose).
func TestGatekeeperLibrary(t *testing.T) {
	dir := testtool.ConformanceDir(t, "gatekeeper-library", "MODWRIGHT_GATEKEEPER_LIBRARY_DIR", "library")
	var files []string
	err := filepath.WalkDir(filepath.Join(dir, "library"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == suite.GatorFileName {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var cases int
	for _, f := range files {
		name, _ := filepath.Rel(filepath.Join(dir, "library"), filepath.Dir(f))
		var out, errOut bytes.Buffer
		err := runTest(context.Background(), []string{f}, &testOptions{format: "json"}, Streams{Out: &out, Err: &errOut})
		var rep testReport
		if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
			t.Errorf("%s: no report (%v): %v\n%s", name, err, jerr, errOut.String())
			continue
		}
		cases += len(rep.Results)
		for _, r := range rep.Results {
			if !r.Passed {
				t.Errorf("%s: %s: %s", name, r.Case, r.Reason)
			}
		}
		if len(rep.Results) == 0 {
			t.Errorf("%s: no cases ran", name)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no %s under %s", suite.GatorFileName, dir)
	}
	t.Logf("%d Gatekeeper suites, %d cases, all as gator verify", len(files), cases)
}

// TestGatekeeperLibraryCompiled: every template of the library with
// K8sNativeValidation code compiles (modwright compile) with each of its
// suite's constraints into the ValidatingAdmissionPolicy and binding
// Gatekeeper generates, and the API server's evaluation of them (offline,
// the constraint as the policy's params) admits and denies each case's
// object as gator verify expects: denied when the case expects violations.
func TestGatekeeperLibraryCompiled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs apply on every case of the CEL templates")
	}
	dir := testtool.ConformanceDir(t, "gatekeeper-library", "MODWRIGHT_GATEKEEPER_LIBRARY_DIR", "library")
	var files []string
	_ = filepath.WalkDir(filepath.Join(dir, "library"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == suite.GatorFileName {
			files = append(files, p)
		}
		return err
	})
	compared := 0
	for _, f := range files {
		gs, err := suite.LoadGator(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range gs.Tests {
			tmpl, err := os.ReadFile(gs.Resolve(tc.Template))
			if err != nil || !bytes.Contains(tmpl, []byte("K8sNativeValidation")) || tc.Constraint == "" {
				continue
			}
			var errs bytes.Buffer
			res, err := compileRules([]string{gs.Resolve(tc.Template), gs.Resolve(tc.Constraint)}, Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errs}, "", false, translate.PlaceNative)
			if err != nil || len(res.Skipped) > 0 {
				t.Errorf("%s %s: compile: %v %v", f, tc.Name, err, res.Skipped)
				continue
			}
			compiled := filepath.Join(t.TempDir(), "compiled.yaml")
			writeTranslations(t, compiled, res)
			for _, c := range tc.Cases {
				if len(c.Inventory) > 0 || len(c.Assertions) == 0 || c.Assertions[0].Message != nil {
					continue
				}
				want, _, _ := c.Assertions[0].Count()
				var out, stderr bytes.Buffer
				code := ExecuteContext(context.Background(), []string{"apply", "--rules", compiled, "--context", gs.Resolve(tc.Constraint), "-f", gs.Resolve(c.Object), "-o", "name"},
					Streams{In: strings.NewReader(""), Out: &out, Err: &stderr})
				compared++
				switch {
				case code == 2:
					t.Errorf("%s %s/%s: exit 2: %s", f, tc.Name, c.Name, stderr.String())
				case (code == 1) != (want > 0):
					t.Errorf("%s %s/%s: the policy's exit %d, the case expects %d violations\n%s", f, tc.Name, c.Name, code, want, stderr.String())
				}
			}
		}
	}
	if compared == 0 {
		t.Fatal("no case compared")
	}
	t.Logf("%d cases of the CEL templates compared through their compiled admission policies", compared)
}
