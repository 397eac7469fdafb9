package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// boundedRules are Patch rules whose value templates exceed the template
// bounds (arguments just past each bound, so that without the bounds they
// allocate a few hundred megabytes rather than the gigabytes of the issue).
const boundedRules = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: until, namespace: default}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch: [{op: add, path: /metadata/labels/n, value: '{{ len (until 3000000) }}'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: seq, namespace: default}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch: [{op: add, path: /metadata/labels/n, value: '{{ len (seq 1 300000) }}'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: repeat, namespace: default}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch: [{op: add, path: /metadata/annotations/n, value: '{{ repeat 3000000 "x" }}'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: loops, namespace: default}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch: [{op: add, path: /metadata/labels/n, value: '{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}x'}]
`

// runLintJSON lints dir in-process and returns the exit code, the report
// and the bytes the run allocated.
func runLintJSON(t *testing.T, dir string) (int, lintReport, uint64) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := ExecuteContext(context.Background(), []string{"lint", "-o", "json", dir},
		Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	runtime.ReadMemStats(&after)
	var rep lintReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("lint output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return code, rep, after.TotalAlloc - before.TotalAlloc
}

// TestLintTemplatesAreBounded: lint runs rule templates (the idempotency
// check) through the same bounded execution as admission, so linting
// hostile rules allocates little.
func TestLintTemplatesAreBounded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(boundedRules), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, alloc := runLintJSON(t, dir)
	// Without the bounds this run allocates over 400 MB.
	if alloc > 64<<20 {
		t.Errorf("lint allocated %d MB", alloc>>20)
	}
}

// TestLintReportsTemplateLimits: a rule whose template exceeds a bound on
// a sample object is an error finding naming the rule, the field and the
// limit.
func TestLintReportsTemplateLimits(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(boundedRules), 0o644); err != nil {
		t.Fatal(err)
	}
	code, rep, _ := runLintJSON(t, dir)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := map[string]string{"default/until": "MaxList", "default/seq": "MaxList", "default/repeat": "MaxOutput", "default/loops": "MaxSteps"}
	for _, f := range rep.Findings {
		if f.Severity == "warning" {
			continue // W107: these templates put numbers in labels, too
		}
		limit, ok := want[f.Rule]
		if !ok || f.Code != "E006" || f.Severity != "error" || !strings.HasPrefix(f.Field, "spec.patch[0]") || !strings.Contains(f.Message, limit) {
			t.Errorf("unexpected finding %+v", f)
		}
		delete(want, f.Rule)
	}
	for rule := range want {
		t.Errorf("no finding for %s", rule)
	}
}
