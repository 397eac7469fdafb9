package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestGrammar: one grammar for every command: -o/--output (test and
// rules-test take it, --format stays an alias), --rule-pack (graph and
// rules-test; --pack stays an alias), -n/--namespace, version and
// --version.
func TestGrammar(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := ExecuteContext(context.Background(), args, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
		return code, stdout.String(), stderr.String()
	}
	const root = "../../"
	same := [][2][]string{
		{{"test", root + "examples", "-o", "json"}, {"test", root + "examples", "--format", "json"}},
		{{"test", root + "examples", "--output=json"}, {"test", root + "examples", "--format=json"}},
		{{"rules-test", "--rule-pack", root + "examples/rule-packs/config-bundles", "-o", "json"}, {"rules-test", "--pack", root + "examples/rule-packs/config-bundles", "--format", "json"}},
		{{"graph", "-f", root + "examples/graph", "--rule-pack", root + "examples/rule-packs/config-bundles"}, {"graph", "-f", root + "examples/graph", "--pack", root + "examples/rule-packs/config-bundles"}},
		{{"apply", "--rules", root + "examples/rules", "-f", root + "examples/manifests", "-n", "prod"}, {"apply", "--rules", root + "examples/rules", "-f", root + "examples/manifests", "--namespace", "prod"}},
	}
	for _, pair := range same {
		c1, out1, err1 := run(pair[0]...)
		c2, out2, err2 := run(pair[1]...)
		if c1 != c2 || out1 != out2 || err1 != err2 || out1 == "" {
			t.Errorf("%v: exit %d, %d bytes; %v: exit %d, %d bytes; want the same output\nstderr: %s\n%s", pair[0], c1, len(out1), pair[1], c2, len(out2), err1, err2)
		}
	}
	if c, out, _ := run("apply", "--rules", root+"examples/rules", "-f", root+"examples/manifests", "-o", "name"); c != 1 || out != "deployment.apps/web\nservice/web\n" {
		t.Errorf("apply -o name: exit %d:\n%s", c, out)
	}
	if c, out, _ := run("test", root+"examples", "-o", "json"); c != 0 || !json.Valid([]byte(out)) {
		t.Errorf("test -o json: exit %d, not JSON:\n%s", c, out)
	}

	code, text, _ := run("version")
	if code != 0 || !strings.HasPrefix(text, "modwright ") {
		t.Fatalf("version: exit %d:\n%s", code, text)
	}
	// A test binary carries no module list: the engines' versions are
	// checked on the built binary (docs/cli.md's `modwright version`, run
	// by TestDocsCLIExamples).
	if code, flag, _ := run("--version"); code != 0 || flag != text {
		t.Errorf("--version: exit %d:\n%s\nwant what version prints:\n%s", code, flag, text)
	}
	var v versionInfo
	if code, out, _ := run("version", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || v.GoVersion == "" {
		t.Errorf("version -o json: exit %d, %+v:\n%s", code, v, out)
	}
	if code, _, stderr := run("version", "-o", "table"); code != 2 || !strings.Contains(stderr, "--output must be text, yaml or json") {
		t.Errorf("version -o table: exit %d: %s", code, stderr)
	}
}
