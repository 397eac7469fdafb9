package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/testtool"
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
