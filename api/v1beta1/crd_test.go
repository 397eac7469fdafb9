package v1beta1_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/testtool"
)

// TestGeneratedCRD regenerates the CRD from the Go types and compares it with
// the committed copies (deploy/crds and the Helm chart's crds/). Run `make
// generate` when it fails.
func TestGeneratedCRD(t *testing.T) {
	cg := testtool.Find(t, "controller-gen")
	root := testtool.RepoRoot(t)
	out := t.TempDir()
	cmd := exec.Command(cg, "crd:crdVersions=v1", "paths=./api/...", "output:crd:dir="+out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	const name = "api.kubemod.io_modrules.yaml"
	want, err := os.ReadFile(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	for _, committed := range []string{
		filepath.Join(root, "deploy", "crds", name),
		filepath.Join(root, "deploy", "helm", "modwright", "crds", name),
	} {
		got, err := os.ReadFile(committed)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run make generate (-committed +generated):\n%s", committed, cmp.Diff(string(got), string(want)))
		}
	}
}
