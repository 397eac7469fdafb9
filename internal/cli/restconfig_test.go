package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRestConfigRate: an operator started with --kubeconfig has the clients
// it would have in the cluster (controller-runtime's: no client-side rate
// limit), not client-go's 5 requests per second; a rate the kubeconfig
// cannot set stays the caller's to choose.
func TestRestConfigRate(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const doc = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(kubeconfig, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	flagged, err := restConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	ambient, err := restConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if flagged.QPS != ambient.QPS || flagged.Burst != ambient.Burst || flagged.QPS >= 0 {
		t.Errorf("--kubeconfig: QPS %v burst %d; controller-runtime's configuration: QPS %v burst %d; want the same, without a limiter (QPS < 0)",
			flagged.QPS, flagged.Burst, ambient.QPS, ambient.Burst)
	}
}
