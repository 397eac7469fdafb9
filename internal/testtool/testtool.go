// Package testtool finds the external programs some tests need (helm,
// controller-gen, kubectl, the OCI registry, which Registry runs), the peer conformance data sets beside the
// repository, and the repository root. Tests that need a missing program
// skip, unless MODWRIGHT_REQUIRE_TOOLS=1 (set by `make test`), when they
// fail; tests that need missing conformance data skip, unless
// MODWRIGHT_REQUIRE_CONFORMANCE=1 (set by .ci/run), when they fail: a test
// that should have run is never silently skipped in CI.
//
// It is imported by tests only and must not know anything about rules.
package testtool

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/value"
)

// RepoRoot is the repository's root directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testtool: cannot locate the repository")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Required reports whether missing tools fail tests (MODWRIGHT_REQUIRE_TOOLS=1).
func Required() bool { return os.Getenv("MODWRIGHT_REQUIRE_TOOLS") == "1" }

// Find returns the path of the named program, looked up on PATH and then in
// <repo>/.cache/tools/bin (where hack/tools.sh builds it). When it is
// missing the test is skipped, or failed when Required.
func Find(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := filepath.Join(RepoRoot(t), ".cache", "tools", "bin", name)
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p
	}
	if Required() {
		t.Fatalf("%s is required (MODWRIGHT_REQUIRE_TOOLS=1) but not found; run hack/tools.sh %s", name, name)
	}
	t.Skipf("%s not found (run hack/tools.sh %s, or make test)", name, name)
	return ""
}

// ConformanceRequired reports whether missing conformance data fails tests
// (MODWRIGHT_REQUIRE_CONFORMANCE=1, set by .ci/run).
func ConformanceRequired() bool { return os.Getenv("MODWRIGHT_REQUIRE_CONFORMANCE") == "1" }

// ConformanceDir returns the directory of the peer conformance data set
// name: $env when set, else shared/conformance/<name> beside the
// repository (../shared from its root). The data is not part of the
// project. The directory must hold probe (a file or directory the data set
// always has); when it does not, the test is skipped with a message saying
// where the data was looked for, or failed when ConformanceRequired.
func ConformanceDir(t testing.TB, name, env, probe string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		root, err := filepath.Abs(RepoRoot(t))
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(filepath.Dir(root), "shared", "conformance", name)
	}
	if _, err := os.Stat(filepath.Join(dir, probe)); err != nil {
		msg := fmt.Sprintf("conformance data %s not found (%v): set %s, or put shared/conformance/%s beside the repository", name, err, env, name)
		if ConformanceRequired() {
			t.Fatalf("%s; it is required (MODWRIGHT_REQUIRE_CONFORMANCE=1)", msg)
		}
		t.Skipf("%s; skipped (MODWRIGHT_REQUIRE_CONFORMANCE=1 makes this a failure)", msg)
	}
	return dir
}

// Registry runs the distribution registry (hack/tools.sh registry) on a
// loopback port until the test ends; with htpasswd it asks for basic
// credentials. It returns host:port.
func Registry(t testing.TB, htpasswd string) string {
	t.Helper()
	bin := Find(t, "registry")
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog: {level: error}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: %s}\n", filepath.Join(dir, "data"), addr)
	if htpasswd != "" {
		if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(htpasswd), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("auth: {htpasswd: {realm: test, path: %s}}\n", filepath.Join(dir, "htpasswd"))
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not answer: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchDeployment is the load test's 3.3 KB Deployment
// (testdata/bench/objects/deployment.json, namespace bench), decoded;
// compliant adds what the Pod Security Standards' restricted level asks of
// its pod template (a securityContext on the pod and on each container).
func BenchDeployment(t testing.TB, compliant bool) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(t), "testdata", "bench", "objects", "deployment.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := value.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	obj := v.(map[string]any)
	if compliant {
		spec := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		spec["securityContext"] = map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
		for _, c := range spec["containers"].([]any) {
			c.(map[string]any)["securityContext"] = map[string]any{
				"allowPrivilegeEscalation": false,
				"capabilities":             map[string]any{"drop": []any{"ALL"}},
			}
		}
	}
	return obj
}
