package cli

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/testtool"
)

// docCommand is one shell command from a ```sh block of a document.
type docCommand struct {
	doc  string // docs/cli.md
	line int    // where it starts
	text string // continuation lines joined
}

// docCommands returns the commands of the ```sh blocks in the markdown file
// path: continuation lines (ending in a backslash) joined, comments and
// blank lines left out.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		cmds    []docCommand
		inBlock bool
		cur     *docCommand
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !inBlock:
			inBlock = trimmed == "```sh"
			continue
		case trimmed == "```":
			if cur != nil {
				t.Fatalf("%s:%d: a command continues past the end of its block", path, cur.line)
			}
			inBlock = false
			continue
		case cur == nil && (trimmed == "" || strings.HasPrefix(trimmed, "#")):
			continue
		}
		if cur == nil {
			cur = &docCommand{line: n}
		}
		if rest, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.text += rest
			continue
		}
		cur.text += trimmed
		cmds = append(cmds, *cur)
		cur = nil
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inBlock {
		t.Fatalf("%s: an unterminated ```sh block", path)
	}
	return cmds
}

// TestDocsCLIExamples runs every shell command docs/cli.md,
// docs/policy.md and docs/variables.md show, from the
// repository's root as the document says, and checks its exit status: 0
// unless the table below says otherwise. The only rewrites: `go run
// ./cmd/modwright`, `./bin/modwright` and `$PWD/bin` name a modwright built
// once for the test, and `go build -o bin/modwright ./cmd/modwright` is that
// build (the repository's bin/ is not written). Commands that need helm or
// kustomize skip without them (fail under MODWRIGHT_REQUIRE_TOOLS=1, as in
// make test).
func TestDocsCLIExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds modwright and runs the documented commands")
	}
	root := testtool.RepoRoot(t)
	// Commands whose documented outcome is a failure, and the exit status
	// (or, for helm, a text its error output must hold), or whose output
	// must hold a text.
	wantFail := map[string]struct {
		code   int
		stderr string
		stdout string // what stdout must hold; "" anything
	}{
		"modwright lint testdata/cli/lint/errors -o json": {code: 1},
		"modwright version": {stdout: "github.com/google/cel-go v"},
		"modwright audit --rules examples/kyverno/require-team.yaml -f examples/kyverno/resources.yaml": {
			code: 1, stdout: "Pod default/unlabelled   validation error: the label team is required.", stderr: "audit: 4 objects, 1 rule: 12 results: 4 fail"},
		"modwright audit --rules examples/kyverno/require-team.yaml -f examples/kyverno/resources.yaml --all -o yaml": {
			code: 1, stdout: "result: pass"},
		"modwright audit --rules examples/kyverno/require-team.yaml -f examples/kyverno/resources.yaml -o policyreport": {
			code: 1, stdout: "kind: PolicyReport"},
		"modwright audit --rules testdata/native/policies.yaml -f testdata/cli/native/configmaps.yaml --context testdata/cli/native/context.yaml": {
			code: 1, stdout: "with binding 'owner-label': an owner label is expected"},
		"modwright apply --rules examples/kyverno/require-team.yaml -f examples/kyverno/resources.yaml": {
			code: 1, stderr: "validation error: the label team is required. rule autogen-team-label failed at path /spec/template/metadata/labels/"},
		"modwright lint testdata/cli/lint/crd --crd testdata/crd/widgets.yaml": {
			code: 1, stdout: `testdata/cli/lint/crd/policies.yaml:20:15: ModwrightPolicy default/widgets: spec.validations[2].cel: error E201: with self typed by the schema of example.com/v1 Widget at $.spec: undefined field 'mode'`},
		"modwright apply --rules examples/policies -f testdata/cli/policy/web-v2.yaml --operation UPDATE --old testdata/cli/policy/web-v1.yaml": {
			code: 1, stderr: `default/immutable-images: "container nginx: the image cannot change (was nginx:1.25.3)"`},
		"modwright apply --rules examples/graph-protect/rules.yaml --context examples/graph -f examples/graph-protect/secret.yaml --operation DELETE": {
			code: 1, stderr: `kubemod-system/secret-in-use: "this Secret is in use by Deployment web"`},
		"modwright validate -f testdata/cli/validate/widget.yaml --crd testdata/crd/widgets.yaml": {
			code: 1, stderr: `Widget.example.com "crowded" is invalid: [spec: Invalid value: minReplicas must not exceed maxReplicas, spec.size: Forbidden: size small has no mode]`},
		"modwright validate -f testdata/cli/validate/widget-v2.yaml --crd testdata/crd --operation UPDATE --old testdata/cli/validate/widget-v1.yaml": {
			code: 1, stderr: `spec.size: Invalid value: "small": a large widget cannot shrink`},
		"modwright validate -f testdata/cli/validate/widget.yaml --crd testdata/cli/validate/bad-crd.yaml": {
			code: 2, stderr: `x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.startsWith(1)"`},
		"modwright apply --rules testdata/native/policies.yaml -f testdata/cli/native/configmaps.yaml --context testdata/cli/native/context.yaml": {
			code: 1, stderr: `configmaps "big" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys' denied request: at most 2 keys`},
		"modwright apply --rules testdata/native/mutating.yaml -f testdata/cli/native/mutating-objects.yaml --context testdata/cli/native/mutating-context.yaml": {
			stdout: "value: http://proxy:3128"},
		"modwright lint testdata/cli/lint/native": {
			code: 1, stdout: `testdata/cli/lint/native/policies.yaml:13:7: ValidatingAdmissionPolicy replicas: spec.validations[0].expression: error E003`},
		"modwright compile --rules testdata/compile/modrules.yaml --rules testdata/compile/left.yaml 2>&1 | tail -1": {
			stdout: "compiled 0 of 11 rules (10 more translate but run faster in the webhook)"},
		"modwright compile --rules examples/policies --placement native": {
			stderr: "not compiled: examples/policies/image-tags.yaml:1: ClusterModwrightPolicy image-tags: spec.validations[0].scope with Warn or Audit", stdout: "name: modwright.modwrightpolicy.default.replicas"},
		"modwright apply --rules testdata/cli/kyverno/cel-exceptions/policies.yaml -f testdata/cli/kyverno/cel-exceptions/resources.yaml --exception testdata/cli/kyverno/cel-exceptions/exceptions.yaml -o name": {
			code: 1, stdout: "pod/agent-1", stderr: `Pod ops/debug: operation rejected by the following ValidatingPolicy(s): disallow-host-path: "hostPath volumes are forbidden"`},
		"modwright apply --rules testdata/cli/kyverno/json-payloads/policies.yaml --json testdata/cli/kyverno/json-payloads/payloads/bad.json": {
			code: 1, stderr: `pinned-runner-images: "jobs use unpinned images: golang:latest, kind:latest"`},
		"modwright krm < testdata/cli/krm/resource-list.yaml": {
			code: 1, stderr: `operation rejected by the following ModRule(s): shop/no-latest: "bad uses :latest"`},
		"helm template web testdata/cli/helm/chart --set 'externalIPs={203.0.113.7}' --post-renderer ./bin/modwright --post-renderer-args apply --post-renderer-args --rules=examples/rules --post-renderer-args -f --post-renderer-args -": {
			code: 1, stderr: `reject-external-ips: "external IPs [203.0.113.7] are not allowed"`},
	}
	var cmds []docCommand
	for _, doc := range []string{"cli.md", "policy.md", "variables.md", "kinitiras.md", "rule-packs.md", "graph.md", "cel.md", "kyverno.md", "audit.md", "gatekeeper.md"} {
		cs := docCommands(t, filepath.Join(root, "docs", doc))
		if len(cs) < 3 {
			t.Fatalf("found %d commands in docs/%s; the parser is broken", len(cs), doc)
		}
		for i := range cs {
			cs[i].doc = "docs/" + doc
		}
		cmds = append(cmds, cs...)
	}
	bin := buildModwright(t)
	seen := map[string]bool{}
	for _, c := range cmds {
		shown := strings.ReplaceAll(c.text, "go run ./cmd/modwright", "modwright")
		seen[shown] = true
		if shown == "go build -o bin/modwright ./cmd/modwright" {
			continue
		}
		t.Run(shown, func(t *testing.T) {
			code, stdout, stderr := runScript(t, root, bin, shown, c.doc, c.line)
			want := wantFail[shown]
			if code != want.code {
				t.Fatalf("%s:%d: exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", c.doc, c.line, code, want.code, stdout, stderr)
			}
			if !strings.Contains(stderr, want.stderr) {
				t.Errorf("%s:%d: stderr lacks %q:\n%s", c.doc, c.line, want.stderr, stderr)
			}
			if code == 0 && stdout == "" {
				t.Errorf("%s:%d: no output", c.doc, c.line)
			}
			if !strings.Contains(stdout, want.stdout) {
				t.Errorf("%s:%d: stdout lacks %q:\n%s", c.doc, c.line, want.stdout, stdout)
			}
		})
	}
	for shown := range wantFail {
		if !seen[shown] {
			t.Errorf("the docs no longer show %q; update the test's table", shown)
		}
	}
}

// runScript runs a documented shell command line from the repository's
// root with bash -euo pipefail: modwright is bin (./bin/modwright and
// $PWD/bin name it too), helm and kustomize the ones hack/tools.sh builds.
// where and line name the document it comes from in errors.
func runScript(t *testing.T, root, bin, shown, where string, line int) (code int, stdout, stderr string) {
	t.Helper()
	binDir := filepath.Dir(bin)
	path := binDir
	for _, tool := range []string{"helm", "kustomize"} {
		if strings.Contains(shown, tool+" ") || strings.Contains(shown, "tools.sh "+tool) {
			path += string(os.PathListSeparator) + filepath.Dir(testtool.Find(t, tool))
		}
	}
	script := strings.ReplaceAll(shown, "./bin/modwright", bin)
	script = strings.ReplaceAll(script, "$PWD/bin", binDir)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			t.Fatalf("%s:%d: %v", where, line, err)
		}
		code = exitErr.ExitCode()
	}
	return code, out.String(), errOut.String()
}
