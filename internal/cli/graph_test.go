package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/testtool"
)

func TestGraphCmd(t *testing.T) {
	root := testtool.RepoRoot(t)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := ExecuteContext(context.Background(), append([]string{"graph"}, args...), Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	code, out, errs := run("-f", filepath.Join(root, "examples", "graph"), "--pack", filepath.Join(root, "examples", "rule-packs", "config-bundles"), "-o", "json")
	var g struct {
		Edges []graph.Edge `json:"edges"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	types := map[string]int{}
	for _, e := range g.Edges {
		types[e.Type]++
	}
	for typ, n := range map[string]int{"ATTACHED_TO": 1, "MOUNTS_VOLUME": 2, "OWNS": 1, "ROUTES_TO": 1, "SELECTS": 2, "USES_CONFIGMAP": 3, "USES_SECRET": 2, "USES_SERVICEACCOUNT": 2} {
		if types[typ] != n {
			t.Errorf("%d %s edges, want %d (%v)", types[typ], typ, n, types)
		}
	}
	if code, _, _ := run("-o", "json"); code != 2 {
		t.Errorf("no -f: exit %d", code)
	}
	if code, _, _ := run("-f", filepath.Join(root, "examples", "graph"), "-o", "yaml"); code != 2 {
		t.Errorf("-o yaml: exit %d", code)
	}
}

// TestRulePackInApply: --rule-pack adds a pack's edges to the context
// objects' graph that ModRules read (syntheticRefs.edges).
func TestRulePackInApply(t *testing.T) {
	root := testtool.RepoRoot(t)
	dir := t.TempDir()
	rule := `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: cm-in-use, namespace: shop}
spec:
  type: Reject
  admissionOperations: [DELETE]
  match:
  - select: '$.kind'
    matchValue: ConfigMap
  - select: '$.syntheticRefs.edges.incoming[*].from.kind'
    matchValue: ConfigBundle
  rejectMessage: a ConfigBundle bundles this ConfigMap
`
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-settings, namespace: shop}\n"
	for name, text := range map[string]string{"rule.yaml": rule, "cm.yaml": cm} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(extra ...string) (int, string) {
		var out, errb bytes.Buffer
		args := append([]string{"apply", "--rules", filepath.Join(dir, "rule.yaml"), "--context", filepath.Join(root, "examples", "graph"),
			"-f", filepath.Join(dir, "cm.yaml"), "--operation", "DELETE"}, extra...)
		code := ExecuteContext(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, errb.String()
	}
	if code, errs := run(); code != 0 {
		t.Errorf("without the pack: exit %d, %s", code, errs)
	}
	if code, errs := run("--rule-pack", filepath.Join(root, "examples", "rule-packs", "config-bundles")); code != 1 || !strings.Contains(errs, "a ConfigBundle bundles this ConfigMap") {
		t.Errorf("with the pack: exit %d, %s", code, errs)
	}
}
