package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
)

func TestKRMGolden(t *testing.T) {
	const dir = "../../testdata/cli/krm/"
	read := func(name string) string {
		b, err := os.ReadFile(dir + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	list := read("resource-list.yaml")
	runGolden(t, []goldenCase{
		{name: "krm", args: []string{"krm"}, stdin: list},
		{name: "krm-delete", args: []string{"krm", "--operation", "DELETE"}, stdin: list},
		{name: "krm-single-rule", args: []string{"krm"}, stdin: read("single-rule.yaml")},
		{name: "krm-native", args: []string{"krm"}, stdin: read("native.yaml")},
		{name: "krm-invalid-rule", args: []string{"krm"}, stdin: read("invalid-rule.yaml")},
		{name: "krm-not-a-resource-list", args: []string{"krm"}, stdin: "apiVersion: v1\nkind: List\nitems: []\n"},
		{name: "krm-bad-function-config", args: []string{"krm"}, stdin: "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig: {apiVersion: v1, kind: ConfigMap}\nitems: []\n"},
		{name: "krm-empty", args: []string{"krm"}, stdin: "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"},
		{name: "krm-empty-stdin", args: []string{"krm"}, stdin: ""},
		{name: "krm-crd", args: []string{"krm"}, stdin: read("crd.yaml")},
		{name: "krm-former-name", args: []string{"krm"}, stdin: read("former-name.yaml")},
	})
}

// buildModwright builds the command into a temporary directory, for tests
// that run it through other programs.
func buildModwright(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "modwright")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/modwright")
	cmd.Dir = testtool.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// kustomizeCommand returns a command line that runs the standalone
// kustomize (PATH, or .cache/tools/bin where hack/tools.sh builds it) with
// exec KRM functions enabled. kubectl's embedded kustomize is no substitute:
// kubectl v1.32's has no --enable-exec, and exec functions are then silently
// not run.
func kustomizeCommand(t *testing.T) []string {
	t.Helper()
	return []string{testtool.Find(t, "kustomize"), "build", "--enable-alpha-plugins", "--enable-exec"}
}

// TestKustomizeExecFunction runs examples/kustomize through kustomize with
// modwright as an exec KRM function, then the same with an object a rule
// among the resources rejects.
func TestKustomizeExecFunction(t *testing.T) {
	kustomize := kustomizeCommand(t)
	binDir := filepath.Dir(buildModwright(t))
	example := filepath.Join(testtool.RepoRoot(t), "examples", "kustomize")
	env := append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))

	run := func(dir string) (string, string, error) {
		cmd := exec.Command(kustomize[0], append(kustomize[1:], dir)...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := run(example)
	if err != nil {
		t.Fatalf("%v: %v\n%s", kustomize, err, errOut)
	}
	want, err := os.ReadFile(filepath.Join(example, "expected.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	compareUnordered(t, want, []byte(out))

	// A copy with a Deployment using :latest: the build fails and says why.
	dir := t.TempDir()
	for _, f := range []string{"kustomization.yaml", "harden-nginx.yaml", "no-latest.yaml", "modwright-krm.sh"} {
		b, err := os.ReadFile(filepath.Join(example, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	latest := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: [{name: c, image: 'nginx:latest'}]}}}\n"
	if err := os.WriteFile(filepath.Join(dir, "deployment.yaml"), []byte(latest), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := run(dir); err == nil || !strings.Contains(errOut, "web uses an image tagged :latest") {
		t.Errorf("want a failed build naming the rejection; err %v, stderr:\n%s", err, errOut)
	}
}

// compareUnordered compares two YAML streams as sets of objects (kustomize
// orders its output by kind).
func compareUnordered(t *testing.T, want, got []byte) {
	t.Helper()
	w, err := source.ParseManifest("want", want)
	if err != nil {
		t.Fatal(err)
	}
	g, err := source.ParseManifest("got", got)
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	if len(w) != len(g) {
		t.Fatalf("got %d objects, want %d:\n%s", len(g), len(w), got)
	}
	for i := range w {
		found := false
		for j := range g {
			found = found || toYAML(w[i].Object) == toYAML(g[j].Object)
		}
		if !found {
			t.Errorf("missing from the output:\n%s\noutput:\n%s", toYAML(w[i].Object), got)
		}
	}
}

// TestHelmPostRenderer renders a chart with helm, modwright apply as the
// post-renderer, exactly as docs/cli.md shows.
func TestHelmPostRenderer(t *testing.T) {
	helm := testtool.Find(t, "helm")
	bin := buildModwright(t)
	root := testtool.RepoRoot(t)
	chart := filepath.Join(root, "testdata", "cli", "helm", "chart")
	tests := []struct {
		name     string
		set      []string
		wantErr  string
		wantFile string
	}{
		{name: "patched", wantFile: "expected.yaml"},
		{name: "rejected", set: []string{"--set", "externalIPs={203.0.113.7}"}, wantErr: `reject-external-ips: "external IPs [203.0.113.7] are not allowed"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"template", "web", chart}, tt.set...)
			args = append(args, "--post-renderer", bin,
				"--post-renderer-args", "apply", "--post-renderer-args", "--rules=examples/rules",
				"--post-renderer-args", "-f", "--post-renderer-args", "-")
			cmd := exec.Command(helm, args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(stderr.String(), tt.wantErr) {
					t.Fatalf("want an error with %q; err %v, stderr:\n%s", tt.wantErr, err, stderr.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("helm: %v\n%s", err, stderr.String())
			}
			want, err := os.ReadFile(filepath.Join(root, "testdata", "cli", "helm", tt.wantFile))
			if err != nil {
				t.Fatal(err)
			}
			compareUnordered(t, want, stdout.Bytes())
		})
	}
}
