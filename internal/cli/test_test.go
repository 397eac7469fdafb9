package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// goldenDir holds the expected output of command lines, one txtar archive
// per test case with the sections exit, stdout and stderr. Refresh them
// with `go test ./internal/cli -run Golden -update` and review the diff.
const goldenDir = "../../testdata/cli/golden"

type goldenCase struct {
	name  string
	args  []string
	stdin string
}

// runGolden runs each command line and compares its exit code and output
// with the golden archive of the same name.
func runGolden(t *testing.T, cases []goldenCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := ExecuteContext(context.Background(), tc.args,
				Streams{In: strings.NewReader(tc.stdin), Out: &stdout, Err: &stderr})
			got := &txtar.Archive{
				Comment: []byte("modwright " + strings.Join(tc.args, " ") + "\n"),
				Files: []txtar.File{
					{Name: "exit", Data: []byte(strconv.Itoa(code) + "\n")},
					{Name: "stdout", Data: stdout.Bytes()},
					{Name: "stderr", Data: stderr.Bytes()},
				},
			}
			path := filepath.Join(goldenDir, tc.name+".txtar")
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, txtar.Format(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(data), string(txtar.Format(got))); diff != "" {
				t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
			}
		})
	}
}

func TestTestGolden(t *testing.T) {
	const dir = "../../testdata/cli/test/"
	runGolden(t, []goldenCase{
		{name: "test-pass", args: []string{"test", dir + "pass"}},
		{name: "test-fail", args: []string{"test", dir + "fail"}},
		{name: "test-fail-json", args: []string{"test", "--format", "json", dir + "fail/modwright-test.yaml"}},
		{name: "test-fail-table", args: []string{"test", "-o", "table", dir + "fail"}},
		{name: "test-run-filter", args: []string{"test", "--run", "message", dir + "fail"}},
		{name: "test-invalid", args: []string{"test", dir}},
		{name: "test-bad-rules", args: []string{"test", dir + "badrules"}},
		{name: "test-missing-resource", args: []string{"test", dir + "missing"}},
		{name: "test-no-suites", args: []string{"test", dir + "rules"}},
		{name: "test-kyverno-exceptions", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/exceptions"}},
		{name: "audit-kyverno", args: []string{"audit", "--rules", "../../examples/kyverno/require-team.yaml", "-f", "../../examples/kyverno/resources.yaml"}},
		{name: "audit-native", args: []string{"audit", "--rules", "../../testdata/native/policies.yaml", "-f", "../../testdata/cli/native/configmaps.yaml", "--context", "../../testdata/cli/native/context.yaml"}},
		{name: "audit-kyverno-json", args: []string{"audit", "--rules", "../../examples/kyverno/require-team.yaml", "-f", "../../examples/kyverno/resources.yaml", "-o", "json"}},
		{name: "test-kyverno-requester", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/requester"}},
		{name: "test-kyverno-params", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/params"}},
		{name: "test-kyverno-json-payloads", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/json-payloads"}},
		{name: "apply-kyverno-json", args: []string{"apply", "--rules", "../../testdata/cli/kyverno/json-payloads/policies.yaml",
			"--json", "../../testdata/cli/kyverno/json-payloads/payloads/good.json", "--json", "../../testdata/cli/kyverno/json-payloads/payloads/bad.json"}},
		{name: "test-gatekeeper", args: []string{"test", "-o", "table", "../../examples/gatekeeper"}},
		{name: "test-gatekeeper-review", args: []string{"test", "-o", "table", "../../testdata/cli/gatekeeper/review"}},
		{name: "test-gatekeeper-fail", args: []string{"test", "../../testdata/cli/gatekeeper/fail"}},
		{name: "test-kyverno-fail", args: []string{"test", "../../testdata/cli/kyverno/fail"}},
		{name: "test-kyverno-mutate", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/mutate"}},
		{name: "test-kyverno-mutate-fail", args: []string{"test", "../../testdata/cli/kyverno/mutate-fail"}},
		{name: "test-kyverno-generate", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/generate"}},
		{name: "test-kyverno-generate-fail", args: []string{"test", "../../testdata/cli/kyverno/generate-fail"}},
		{name: "test-kyverno-generatingpolicy", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/generatingpolicy"}},
		{name: "test-kyverno-mutate-existing", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/mutate-existing"}},
		{name: "test-kyverno-cel-data", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/cel-data"}},
		{name: "test-kyverno-global-context", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/global-context"}},
		{name: "test-kyverno-cel-exceptions", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/cel-exceptions"}},
		{name: "apply-kyverno-exceptions", args: []string{"apply", "--rules", "../../testdata/cli/kyverno/cel-exceptions/policies.yaml",
			"-f", "../../testdata/cli/kyverno/cel-exceptions/resources.yaml", "--exception", "../../testdata/cli/kyverno/cel-exceptions/exceptions.yaml", "-o", "name"}},
		{name: "apply-kyverno-exceptions-invalid", args: []string{"apply", "--rules", "../../testdata/cli/kyverno/cel-exceptions/policies.yaml",
			"-f", "../../testdata/cli/kyverno/cel-exceptions/resources.yaml", "--exception", "../../testdata/cli/kyverno/cel-exceptions/policies.yaml"}},
		{name: "apply-kyverno-cel-data", args: []string{"apply", "--rules", "../../testdata/cli/kyverno/cel-data/policies.yaml",
			"-f", "../../testdata/cli/kyverno/cel-data/resources.yaml", "--context", "../../testdata/cli/kyverno/cel-data/context.yaml", "-o", "name"}},
		{name: "apply-kyverno-mutate-existing", args: []string{"apply", "--rules", "../../testdata/cli/kyverno/mutate-existing/policy.yaml",
			"-f", "../../testdata/cli/kyverno/mutate-existing/resources.yaml", "--context", "../../testdata/cli/kyverno/mutate-existing/targets.yaml"}},
		{name: "apply-kyverno-generate", args: []string{"apply", "--rules", "../../testdata/cli/kyverno/generate/policy.yaml",
			"-f", "../../testdata/cli/kyverno/generate/resources.yaml", "--context", "../../testdata/cli/kyverno/generate/source.yaml"}},
		{name: "test-kyverno-validatingpolicy", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/validatingpolicy"}},
		{name: "test-kyverno-mutatingpolicy", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/mutatingpolicy"}},
		{name: "test-kyverno-mutatingpolicy-existing", args: []string{"test", "-o", "table", "../../testdata/cli/kyverno/mutatingpolicy-existing"}},
		{name: "test-kyverno-fail-json", args: []string{"test", "-o", "json", "../../testdata/cli/kyverno/fail"}},
		{name: "test-bad-format", args: []string{"test", "--format", "xml", dir + "pass"}},
		{name: "test-scalar", args: []string{"test", dir + "scalar"}},
		{name: "test-policy-fail", args: []string{"test", "../../testdata/cli/policy/suite"}},
		{name: "test-policy-authz", args: []string{"test", "../../testdata/cli/policy/authz"}},
		{name: "test-crd-flag", args: []string{"test", "--crd", "../../testdata/crd/widgets.yaml", "../../testdata/cli/validate/flag"}},
		{name: "test-crd-flag-absent", args: []string{"test", "../../testdata/cli/validate/flag"}},
	})
}

// TestExampleSuites runs the suites shipped with examples/: they must pass.
func TestExampleSuites(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := ExecuteContext(context.Background(), []string{"test", "../../examples"},
		Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.HasSuffix(stdout.String(), " passed, 0 failed\n") || strings.Contains(stdout.String(), "FAIL") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

func TestExplainGolden(t *testing.T) {
	const dir = "../../testdata/cli/explain/"
	base := []string{"explain", "--rules", dir + "rules.yaml", "-f", dir + "objects.yaml", "--context", dir + "context.yaml"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	runGolden(t, []goldenCase{
		{name: "explain-examples", args: []string{"explain", "--rules", "../../examples/rules", "-f", "../../examples/manifests"}},
		{name: "explain-gatekeeper", args: []string{"explain", "--rules", "../../examples/gatekeeper/template.yaml", "--rules", "../../examples/gatekeeper/constraint.yaml", "-f", "../../examples/gatekeeper/samples"}},
		{name: "explain-kyverno", args: []string{"explain", "--rules", "../../examples/kyverno/require-team.yaml", "-f", "../../examples/kyverno/resources.yaml"}},
		{name: "explain-policies", args: []string{"explain", "--rules", "../../examples/policies", "-f", "../../testdata/cli/policy/web-v2.yaml",
			"--operation", "UPDATE", "--old", "../../testdata/cli/policy/web-v1.yaml"}},
		{name: "explain-policies-json", args: []string{"explain", "-o", "json", "--rules", "../../examples/policies", "-f", "../../examples/manifests/web.yaml"}},
		{name: "explain-scopes", args: with()},
		{name: "explain-json", args: with("-o", "json")},
		{name: "explain-delete", args: with("--operation", "delete")},
		{name: "explain-color", args: []string{"explain", "--color", "always", "--rules", "../../examples/rules", "-f", "-"},
			stdin: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: c, image: redis}]}}}\n"},
		{name: "explain-bad-output", args: with("-o", "yaml")},
		{name: "explain-bad-rules", args: []string{"explain", "--rules", "../../testdata/cli/test/badrules/rules.yaml", "-f", dir + "objects.yaml"}},
	})
}

func TestLintGolden(t *testing.T) {
	const dir = "../../testdata/cli/lint/"
	runGolden(t, []goldenCase{
		{name: "lint-examples", args: []string{"lint", "../../examples/rules", "--strict"}},
		{name: "lint-policies", args: []string{"lint", "../../testdata/cli/policy/lint", "-f", "../../examples/manifests/web.yaml"}},
		{name: "lint-example-policies", args: []string{"lint", "../../examples/policies", "--strict", "-f", "../../examples/manifests"}},
		{name: "lint-warnings", args: []string{"lint", dir + "warnings", "-f", dir + "samples.yaml"}},
		{name: "lint-kyverno-not-yet", args: []string{"lint", dir + "kyverno-not-yet"}},
		{name: "lint-warnings-strict", args: []string{"lint", "--strict", dir + "warnings/rules.yaml"}},
		{name: "lint-native", args: []string{"lint", dir + "native"}},
		{name: "lint-unknown-kinds", args: []string{"lint", dir + "unknown"}},
		{name: "lint-unknown-kinds-skipped", args: []string{"lint", dir + "unknown", "--skip-unknown-kinds"}},
		{name: "lint-no-rules", args: []string{"lint", dir + "norules", "--skip-unknown-kinds"}},
		// Templates alone are checked: not "no rules".
		{name: "lint-templates-alone", args: []string{"lint", "../../examples/gatekeeper/template.yaml", "--strict"}},
		{name: "lint-crd", args: []string{"lint", dir + "crd", "--crd", "../../testdata/crd/widgets.yaml"}},
		{name: "lint-crd-none", args: []string{"lint", dir + "crd"}},
		{name: "lint-crd-invalid", args: []string{"lint", dir + "crd", "--crd", dir + "bad-crd.yaml"}},
		{name: "lint-native-json", args: []string{"lint", dir + "native", "-o", "json"}},
		{name: "lint-former-names", args: []string{"lint", dir + "former"}},
		{name: "lint-warnings-table", args: []string{"lint", dir + "warnings", "-f", dir + "samples.yaml", "-o", "table"}},
		{name: "lint-rules-flag", args: []string{"lint", "--rules", dir + "errors/dup.yaml", "--rules", dir + "errors/rules.yaml"}},
		{name: "lint-no-paths", args: []string{"lint"}},
		{name: "lint-errors", args: []string{"lint", dir + "errors"}},
		{name: "lint-errors-json", args: []string{"lint", "-o", "json", dir + "errors"}},
		{name: "lint-missing-path", args: []string{"lint", dir + "nope"}},
		{name: "lint-cluster-namespace-flag", args: []string{"lint", "--cluster-rules-namespace", "other", dir + "warnings/rules.yaml"}},
	})
}

func TestCompileGolden(t *testing.T) {
	runGolden(t, []goldenCase{
		{name: "compile-modrules", args: []string{"compile", "--rules", "../../testdata/compile/modrules.yaml"}},
		// A rule left to the webhook keeps there the ten of its namespace.
		{name: "compile-left", args: []string{"compile", "--rules", "../../testdata/compile/modrules.yaml", "--rules", "../../testdata/compile/left.yaml"}},
		{name: "compile-left-native", args: []string{"compile", "--rules", "../../testdata/compile/modrules.yaml", "--rules", "../../testdata/compile/left.yaml", "--placement", "native"}},
		{name: "compile-bad-placement", args: []string{"compile", "--rules", "../../testdata/compile/modrules.yaml", "--placement", "webhook"}},
		{name: "compile-kyverno-cel", args: []string{"compile", "--rules", "../../testdata/compile/kyverno-cel.yaml", "--placement", "native"}},
		{name: "compile-kyverno-cel-fastest", args: []string{"compile", "--rules", "../../testdata/compile/kyverno-cel.yaml"}},
		{name: "compile-example-policies-json", args: []string{"compile", "--rules", "../../examples/policies", "-o", "json", "--placement", "native"}},
		{name: "compile-example-policies", args: []string{"compile", "--rules", "../../examples/policies"}},
		{name: "compile-scoped-validations", args: []string{"compile", "--rules", "../../testdata/cli/lint/crd/policies.yaml"}},
		{name: "compile-example-rules", args: []string{"compile", "--rules", "../../examples/rules"}},
		{name: "compile-no-rules", args: []string{"compile"}},
		{name: "compile-bad-output", args: []string{"compile", "--rules", "../../examples/policies", "-o", "xml"}},
		{name: "compile-invalid-rules", args: []string{"compile", "--rules", "../../testdata/cli/test/badrules/rules.yaml"}},
	})
}
