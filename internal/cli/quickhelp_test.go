package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/quickhelp"
	"github.com/modwright/modwright/internal/testtool"
)

// commandPaths are the paths of every command of the tree that is not
// hidden (cobra's help and completion commands included), the root's first, each starting with the root's name.
func commandPaths() [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		out = append(out, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(slices.Clip(path), sub.Name()))
			}
		}
	}
	root := NewRoot(Streams{})
	// cobra adds these two when a command line runs.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	walk(root, []string{root.Name()})
	return out
}

// renderHelp is what the command tree prints for path's --help.
func renderHelp(t *testing.T, path []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append(slices.Clone(path[1:]), "--help")
	if code := ExecuteContext(context.Background(), args, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr}); code != 0 || stderr.Len() > 0 {
		t.Fatalf("%s: exit %d, stderr %q", strings.Join(path, " "), code, stderr.String())
	}
	return stdout.String()
}

// TestQuickHelp: the texts internal/quickhelp answers help requests with
// before the engines initialize are the command tree's own help, one per
// command, none left over (refresh with -update).
func TestQuickHelp(t *testing.T) {
	dir := filepath.Join(testtool.RepoRoot(t), "internal", "quickhelp", quickhelp.Dir)
	paths := commandPaths()
	if len(paths) < 15 {
		t.Fatalf("%d commands; the walk is broken", len(paths))
	}
	want := map[string]bool{}
	for _, path := range paths {
		name := quickhelp.FileName(path)
		want[name] = true
		text := renderHelp(t, path)
		if *update {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, ok := quickhelp.Answer(append(slices.Clone(path[1:]), "--help"))
		if !ok {
			t.Errorf("%s --help is not answered quickly (run go test ./internal/cli -run TestQuickHelp -update)", strings.Join(path, " "))
			continue
		}
		if diff := cmp.Diff(text, got); diff != "" {
			t.Errorf("%s --help: the quick text differs from the command's help (-command +quick; run go test ./internal/cli -run TestQuickHelp -update):\n%s", strings.Join(path, " "), diff)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if want[e.Name()] {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: no command has this help (run go test ./internal/cli -run TestQuickHelp -update)", e.Name())
	}
}

// quickhelpPackage answers help requests while it initializes.
const quickhelpPackage = "github.com/modwright/modwright/internal/quickhelp"

// heavyPackages are among the costly packages to initialize (the Kubernetes
// libraries' schemes, the engines), all linked by the binary.
var heavyPackages = []string{
	"k8s.io/client-go/kubernetes/scheme",
	"k8s.io/apiserver/pkg/cel/library",
	"github.com/google/cel-go/cel",
	"github.com/open-policy-agent/opa/v1/rego",
	"cuelang.org/go/cue",
	"sigs.k8s.io/controller-runtime/pkg/client",
}

// initTrace runs bin with args and GODEBUG=inittrace=1 and returns its
// stdout and the packages whose initialization completed, in order.
func initTrace(t *testing.T, bin string, args ...string) (string, []string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	var inits []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			inits = append(inits, f[1])
		}
	}
	return stdout.String(), inits
}

// checkQuickHelp runs the binary bin for help requests: each prints the
// command's help, exit 0, from internal/quickhelp's init (which never
// completes), before the Kubernetes libraries and the engines initialize.
// The control, a command that is no help request, initializes them all.
func checkQuickHelp(t *testing.T, bin string) {
	_, control := initTrace(t, bin, "version")
	at := slices.Index(control, quickhelpPackage)
	if at < 0 {
		t.Fatalf("%s version: %s was not initialized", bin, quickhelpPackage)
	}
	for _, heavy := range heavyPackages {
		if i := slices.Index(control, heavy); i < at {
			t.Fatalf("%s version: %s initialized at %d, %s at %d: the control cannot tell", bin, heavy, i, quickhelpPackage, at)
		}
	}
	cases := []struct {
		args []string
		path []string
	}{
		{nil, []string{"modwright"}},
		{[]string{"--help"}, []string{"modwright"}},
		{[]string{"apply", "--help"}, []string{"modwright", "apply"}},
		{[]string{"-h", "test"}, []string{"modwright", "test"}},
		{[]string{"help", "serve"}, []string{"modwright", "serve"}},
		{[]string{"completion", "bash", "-h"}, []string{"modwright", "completion", "bash"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(append([]string{"modwright"}, tc.args...), " "), func(t *testing.T) {
			stdout, inits := initTrace(t, bin, tc.args...)
			if diff := cmp.Diff(renderHelp(t, tc.path), stdout); diff != "" {
				t.Errorf("help differs from the command tree's (-tree +binary):\n%s", diff)
			}
			for _, p := range inits {
				if i := slices.Index(control, p); i < 0 || i >= at {
					t.Errorf("a help request initialized %s (after %s in a command's start)", p, quickhelpPackage)
				}
			}
		})
	}
}
