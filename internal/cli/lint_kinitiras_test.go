package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintKinitirasTemplate: lint refuses a kinitiras template that does
// not render even when the policy carries a stored renderedCue (which is
// what runs): the policy webhook would refuse it.
func TestLintKinitirasTemplate(t *testing.T) {
	dir := t.TempDir()
	policy := `apiVersion: policy.kcloudlabs.io/v1alpha1
kind: ClusterOverridePolicy
metadata:
  name: stored-bad-template
spec:
  overrideRules:
  - overriders:
      template:
        type: labels
        operation: upsert
        path: a
        value: {string: b}
      renderedCue: |
        data: _ @tag(data)
        patches: []
`
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	code, rep, _ := runLintJSON(t, dir)
	if code != 1 || rep.Errors != 1 || len(rep.Findings) != 1 {
		t.Fatalf("exit %d, report %+v", code, rep)
	}
	f := rep.Findings[0]
	if f.Field != "spec.overrideRules[0].overriders.template.operation" || !strings.Contains(f.Message, `"upsert"`) {
		t.Errorf("finding %+v", f)
	}
}
