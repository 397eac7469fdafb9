package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/testtool"
)

// TestManifestsServerSideDryRun checks that what `kubectl apply -k deploy/`
// and `helm template deploy/helm/modwright` produce is valid for a real API
// server: every object is applied server-side with dryRun=All.
func TestManifestsServerSideDryRun(t *testing.T) {
	cl := startCluster(t, false)
	cl.installCRDs(t)
	root := testtool.RepoRoot(t)
	render := func(name string, args ...string) []byte {
		cmd := exec.Command(testtool.Find(t, name), args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
		}
		return out
	}
	ctx := context.Background()
	for _, ns := range []string{operatorNS, "other"} { // a dry run does not create them
		if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(ns)}); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string][]byte{
		"kustomize build deploy": render("kustomize", "build", filepath.Join(root, "deploy")),
		"helm template":          render("helm", "template", "modwright", "deploy/helm/modwright", "--namespace", "other", "--set", "replicaCount=3"),
	} {
		objs := cl.manifests(t, data)
		if len(objs) < 10 {
			t.Errorf("%s: only %d objects", name, len(objs))
		}
		for _, u := range objs {
			if err := cl.c.Patch(ctx, u, client.Apply, client.FieldOwner("dry-run"), client.ForceOwnership, client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s: %v", name, u.GetKind(), u.GetName(), err)
			}
		}
	}
}
