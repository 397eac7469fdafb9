package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/testtool"
)

func runRulesTestCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := ExecuteContext(context.Background(), append([]string{"rules-test"}, args...), Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestRulesTest: the example pack passes; every public pack written for
// KubeAtlas' contract passes unchanged, through the command; a sample
// without edges exits 2, a pack that does not load 1.
func TestRulesTest(t *testing.T) {
	root := testtool.RepoRoot(t)
	if code, out, errs := runRulesTestCmd("--pack", filepath.Join(root, "examples", "rule-packs", "config-bundles")); code != 0 || !strings.Contains(out, "1 sample(s), 3 edge(s), 0 failed") {
		t.Errorf("example pack: exit %d\n%s%s", code, out, errs)
	}
	t.Run("public packs", func(t *testing.T) {
		dir := testtool.ConformanceDir(t, "kubeatlas-rules", "MODWRIGHT_KUBEATLAS_RULES_DIR", "packs")
		entries, err := os.ReadDir(filepath.Join(dir, "packs"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			code, out, errs := runRulesTestCmd("--pack", filepath.Join(dir, "packs", e.Name()), "--format", "json")
			var rep rulesTestReport
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Pack == "" || len(rep.Samples) == 0 {
				t.Errorf("%s: exit %d\n%s%s", e.Name(), code, out, errs)
			}
		}
	})
	pack := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(pack, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pack, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("metadata.yaml", "name: p\nversion: 0.1.0\nrego_api: v1\nkubeatlas: \">= 1.0.0\"\nmodules:\n- {name: m, file: m.rego, entrypoint: data.p.derive, match: {group: \"\", kind: ConfigMap}}\n")
	write("m.rego", "package p\nimport rego.v1\nderive contains {\"type\": \"T\", \"from\": {\"kind\": \"ConfigMap\", \"name\": input.metadata.name}, \"to\": {\"kind\": \"Secret\", \"name\": input.data.secret}} if input.data.secret\n")
	write("samples/none.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	if code, out, _ := runRulesTestCmd("--pack", pack); code != 2 || !strings.Contains(out, "FAIL samples/none.yaml: no edge") {
		t.Errorf("a sample without edges: exit %d\n%s", code, out)
	}
	write("metadata.yaml", "name: p\nversion: 0.1.0\nrego_api: v2\nkubeatlas: \">= 1.0.0\"\n")
	if code, _, errs := runRulesTestCmd("--pack", pack); code != 1 || !strings.Contains(errs, "rego_api") {
		t.Errorf("rego_api v2: exit %d, %s", code, errs)
	}
	if code, _, _ := runRulesTestCmd(); code != 1 {
		t.Errorf("no --pack: exit %d", code)
	}
}

// TestRulesTestOCI: rules-test pulls a pack from a registry (pushed as
// kubeatlas-rules publishes packs) and runs the samples given.
func TestRulesTestOCI(t *testing.T) {
	root := testtool.RepoRoot(t)
	example := filepath.Join(root, "examples", "rule-packs", "config-bundles")
	ref := "oci://" + testtool.Registry(t, "") + "/rules/config-bundles:0.1.0"
	if _, err := packs.Push(context.Background(), example, ref, packs.OCIOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runRulesTestCmd("--pack", ref, "--samples", filepath.Join(example, "samples")); code != 0 || !strings.Contains(out, "1 sample(s), 3 edge(s), 0 failed") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runRulesTestCmd("--pack", ref); code != 1 || !strings.Contains(errs, "give --samples DIR") {
		t.Errorf("without --samples: exit %d, %s", code, errs)
	}
	if code, _, errs := runRulesTestCmd("--pack", strings.TrimSuffix(ref, "0.1.0")+"latest", "--samples", example); code != 1 || !strings.Contains(errs, ":latest is refused") {
		t.Errorf(":latest: exit %d, %s", code, errs)
	}
}
