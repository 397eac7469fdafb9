// Package testtool finds the external programs some tests need (helm,
// controller-gen, kubectl) and the repository root. Tests that need a missing
// program skip, unless MODWRIGHT_REQUIRE_TOOLS=1 (set by `make test`), when
// they fail: a test that should have run is never silently skipped in CI.
//
// It is imported by tests only and must not know anything about rules.
package testtool

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
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
