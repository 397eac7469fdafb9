package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/testtool"
)

// commands are the root and every command a user may call (not the
// hidden CUE worker), in order.
func commands() []*cobra.Command {
	root := NewRoot(Streams{})
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		if !c.Hidden && c.IsAvailableCommand() {
			out = append(out, c)
		}
	}
	return out
}

// TestHelpGolden: every command's --help, as a user reads it; a change of
// flags or text shows in the goldens' diff (refresh with -update).
func TestHelpGolden(t *testing.T) {
	var cases []goldenCase
	for _, c := range commands() {
		args := []string{"--help"}
		name := "help-modwright"
		if c.HasParent() {
			args = []string{c.Name(), "--help"}
			name = "help-" + c.Name()
		}
		cases = append(cases, goldenCase{name: name, args: args})
	}
	if len(cases) < 12 {
		t.Fatalf("%d commands; the walk is broken", len(cases))
	}
	runGolden(t, cases)
}

// helpExample is one command line of a command's Example.
type helpExample struct {
	command, line string
}

// helpExamples are the command lines of every command's Example (comments
// and blank lines left out).
func helpExamples() []helpExample {
	var out []helpExample
	for _, c := range commands() {
		for _, l := range strings.Split(c.Example, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				out = append(out, helpExample{command: c.Name(), line: l})
			}
		}
	}
	return out
}

// TestHelpExamples runs every example of every command's --help from the
// repository's root, as docs_test runs the documents' commands, and checks
// its exit status (0 unless the table says otherwise). Long-running
// commands are run by the end-to-end tests instead, as the table says.
func TestHelpExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds modwright and runs every example")
	}
	wantCode := map[string]int{
		"modwright apply --rules examples/rules -f examples/manifests":                                                                                1, // examples/manifests holds a Service a rule rejects
		"modwright apply --rules examples/policies -f testdata/cli/policy/web-v2.yaml --operation UPDATE --old testdata/cli/policy/web-v1.yaml":       1,
		"modwright lint testdata/cli/lint/crd --crd testdata/crd/widgets.yaml":                                                                        1,
		"modwright krm < testdata/cli/krm/resource-list.yaml":                                                                                         1,
		"modwright audit --rules examples/kyverno/require-team.yaml -f examples/kyverno/resources.yaml":                                               1, // examples/kyverno/resources.yaml holds violating objects
		"modwright audit --rules examples/kyverno/require-team.yaml -f examples/kyverno/resources.yaml -o policyreport":                               1,
		"modwright validate -f testdata/cli/validate/widget.yaml --crd testdata/crd/widgets.yaml":                                                     1,
		"modwright validate -f testdata/cli/validate/widget-v2.yaml --crd testdata/crd --operation UPDATE --old testdata/cli/validate/widget-v1.yaml": 1,
	}
	// Examples of commands that run until stopped, with the end-to-end
	// test that runs them.
	longRunning := map[string]string{
		"serve":   "TestServeStandalone (--standalone, with its /readyz) and test/e2e (the operator)",
		"sandbox": "test/e2e TestSandbox",
	}
	root := testtool.RepoRoot(t)
	bin := buildModwright(t)
	t.Run("quick help", func(t *testing.T) { checkQuickHelp(t, bin) })
	ran := 0
	for _, ex := range helpExamples() {
		if why, ok := longRunning[ex.command]; ok {
			t.Logf("modwright %s: %q runs in %s", ex.command, ex.line, why)
			continue
		}
		ran++
		t.Run(ex.command+": "+ex.line, func(t *testing.T) {
			code, stdout, stderr := runScript(t, root, bin, ex.line, "modwright "+ex.command+" --help", 0)
			if want := wantCode[ex.line]; code != want {
				t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
			}
			if stdout == "" && stderr == "" {
				t.Errorf("no output")
			}
		})
	}
	if ran < 20 {
		t.Errorf("ran %d examples; the walk is broken", ran)
	}
}
