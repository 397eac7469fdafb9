package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/cases from the actual results")

// corpusDir is the shared case corpus: every case is a txtar archive run
// through `modwright apply` exactly as a user would run it.
//
// Sections: args (extra flags, one line, shell-like words; a word that is
// the name of a section, as in "--old old.yaml", names the file the section
// was written to), rules.yaml, input.yaml, context.yaml (optional, passed
// as --context), old.yaml (optional: the old objects of an UPDATE, passed
// with --old old.yaml in args), files in a directory (pack/metadata.yaml:
// a rule pack, passed with --rule-pack pack in args), other sections args
// name (--crd crd.yaml), want.yaml or
// want.json (the expected stdout, compared as JSON values document by
// document), stderr (each non-blank line must occur in stderr), exit (the
// expected exit code, default 0). The comment at the top says what the case
// shows. Every case that admits objects (exit 0 or 1) then runs through the
// dragnet webhook handler too (webhookPass), so that the corpus proves the
// server as well as the command.
const corpusDir = "../../testdata/cases"

func TestCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no cases found in testdata/cases")
	}
	tally := &compiledTally{}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, corpusDir+"/"), ".txtar")
		t.Run(name, func(t *testing.T) { runCase(t, f, tally) })
	}
	if !*update && !testing.Short() && len(files) > 500 {
		tally.report(t, minCompiledCases)
	}
}

// minCompiledCases is how many corpus cases the compiled pass must compare
// at least (it only grows).
const minCompiledCases = 340

type corpusCase struct {
	path    string
	archive *txtar.Archive
}

func (c *corpusCase) section(name string) ([]byte, bool) {
	for _, f := range c.archive.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func (c *corpusCase) set(name string, data []byte) {
	for i, f := range c.archive.Files {
		if f.Name == name {
			c.archive.Files[i].Data = data
			return
		}
	}
	c.archive.Files = append(c.archive.Files, txtar.File{Name: name, Data: data})
}

// caseFiles are where a case's sections were written.
type caseFiles struct{ rules, input, context, old string }

func (f *caseFiles) field(section string) *string {
	switch section {
	case "rules.yaml":
		return &f.rules
	case "input.yaml":
		return &f.input
	}
	return &f.context
}

// runCase runs one case through `modwright apply` (exit code, stderr and
// output as a user sees them), then through the webhook handler
// (webhookPass).
func runCase(t *testing.T, path string, tally *compiledTally) {
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &corpusCase{path: path, archive: a}
	if strings.TrimSpace(string(a.Comment)) == "" {
		t.Errorf("%s: the case has no description at the top", path)
	}
	dir := t.TempDir()
	var files caseFiles
	args := []string{"apply"}
	for _, sec := range []struct{ name, flag string }{{"rules.yaml", "--rules"}, {"input.yaml", "-f"}, {"context.yaml", "--context"}} {
		data, ok := c.section(sec.name)
		if !ok {
			if sec.name == "context.yaml" {
				continue
			}
			t.Fatalf("%s: section %s is missing", path, sec.name)
		}
		p := filepath.Join(dir, sec.name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, sec.flag, p)
		*files.field(sec.name) = p
	}
	// Sections in a directory (pack/metadata.yaml) are written there; an
	// args word naming the directory (--rule-pack pack) names the copy.
	dirs := map[string]bool{}
	for _, f := range a.Files {
		top, _, nested := strings.Cut(f.Name, "/")
		if !nested {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs[top] = true
	}
	if extra, ok := c.section("args"); ok {
		for _, w := range strings.Fields(string(extra)) {
			if dirs[w] {
				w = filepath.Join(dir, w)
			}
			if w == "old.yaml" {
				data, ok := c.section(w)
				if !ok {
					t.Fatalf("%s: args name %s, but the section is missing", path, w)
				}
				files.old = filepath.Join(dir, w)
				if err := os.WriteFile(files.old, data, 0o644); err != nil {
					t.Fatal(err)
				}
				w = files.old
			} else if data, ok := c.section(w); ok && strings.HasSuffix(w, ".yaml") {
				// Another section the args name (--crd crd.yaml).
				p := filepath.Join(dir, w)
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				w = p
			}
			args = append(args, w)
		}
	}
	if _, ok := c.section("old.yaml"); ok && files.old == "" {
		t.Fatalf("%s: section old.yaml is not passed (add --old old.yaml to args)", path)
	}
	wantExit := 0
	if e, ok := c.section("exit"); ok {
		wantExit, err = strconv.Atoi(strings.TrimSpace(string(e)))
		if err != nil {
			t.Fatalf("%s: exit section: %v", path, err)
		}
	}

	var stdout, stderr bytes.Buffer
	code := ExecuteContext(context.Background(), args, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	t.Logf("modwright %s\nexit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr.String())

	jsonOut := slices.Contains(args, "json")
	wantName := "want.yaml"
	if jsonOut {
		wantName = "want.json"
	}
	if *update {
		// Only what no longer holds is rewritten, so that -update on an
		// unchanged tree changes nothing (the authored key order and the
		// implicit exit 0 stay).
		changed := false
		if want, ok := c.section(wantName); !ok || !sameOutput(want, stdout.Bytes()) {
			c.set(wantName, stdout.Bytes())
			changed = true
		}
		if code != wantExit {
			c.set("exit", []byte(strconv.Itoa(code)+"\n"))
			changed = true
		}
		if changed {
			if err := os.WriteFile(path, txtar.Format(c.archive), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if code != wantExit {
		t.Errorf("exit code %d, want %d", code, wantExit)
	}
	if wantStderr, ok := c.section("stderr"); ok {
		for _, line := range strings.Split(string(wantStderr), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.Contains(stderr.String(), line) {
				t.Errorf("stderr lacks %q", line)
			}
		}
	}
	want, ok := c.section(wantName)
	if !ok {
		t.Fatalf("%s: section %s is missing", path, wantName)
	}
	if code == 2 && stdout.Len() != 0 {
		t.Errorf("exit 2 must leave stdout empty, got:\n%s", stdout.String())
	}
	compareOutput(t, want, stdout.Bytes())
	compiledPass(t, tally, args, files, code, stdout.String(), stderr.String())

	name := strings.TrimSuffix(strings.TrimPrefix(path, corpusDir+"/"), ".txtar")
	// The suite pass: test suites run the same chain as apply.
	if code != 2 && (strings.HasPrefix(name, "kyverno-") || strings.HasPrefix(name, "native/") && !slices.Contains(args, "--old") && (code == 0 || inputCount(t, files) == 1)) {
		c.suitePass(t, dir, files, suiteFlags(args), want, code)
	}
	webhookPass(t, args, code, stdout.String(), stderr.String())
}

// inputCount is the number of a case's input objects.
func inputCount(t *testing.T, files caseFiles) int {
	docs, err := source.ReadPaths([]string{files.input}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(docs)
}

// docPrefix is how apply names an object in a stderr line.
var docPrefix = regexp.MustCompile(`^\S+:\d+: \S+ \S+: `)

// suitePass runs a Kyverno case (or a native policies' one) once more as a `modwright test` suite
// written beside its files: one case per input object, expecting what
// apply gave (the want section's object, or the denial the stderr section
// names) and the warnings the stderr section lists.
func (c *corpusCase) suitePass(t *testing.T, dir string, files caseFiles, f caseFlags, want []byte, code int) {
	t.Helper()
	docs, err := source.ReadPaths([]string{files.input}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wants, err := source.ParseManifest("want", want)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	if sec, ok := c.section("stderr"); ok {
		for _, l := range strings.Split(string(sec), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	if code == 1 && len(docs) != 1 {
		t.Fatalf("suite pass: a denial case must have one input object")
	}
	st := map[string]any{"apiVersion": "modwright.io/v1alpha1", "kind": "TestSuite", "rules": []any{files.rules}, "operation": f.operation}
	if files.context != "" {
		st["context"] = []any{files.context}
	}
	var cases []any
	for i, d := range docs {
		tc := map[string]any{"name": fmt.Sprintf("object %d", i+1), "object": d.Object}
		if code == 1 {
			tc["expect"] = "rejected"
			tc["message"] = docPrefix.ReplaceAllString(lines[0], "")
		} else {
			tc["expect"] = "admitted"
			tc["resultObject"] = wants[i].Object
			if len(lines) > 0 {
				tc["warnings"] = lines
			}
		}
		cases = append(cases, tc)
	}
	st["cases"] = cases
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	suiteFile := filepath.Join(dir, "modwright-test.yaml")
	if err := os.WriteFile(suiteFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if rc := ExecuteContext(context.Background(), []string{"test", suiteFile}, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr}); rc != 0 {
		t.Errorf("suite pass: modwright test exit %d\n%s\n%s", rc, stdout.String(), stderr.String())
		return
	}
	t.Logf("suite pass: %d cases passed", len(cases))
}

// caseFlags are the apply flags the suite pass reproduces.
type caseFlags struct {
	operation string
}

// suiteFlags reads the operation of a case's apply run.
func suiteFlags(args []string) caseFlags {
	f := caseFlags{operation: "CREATE"}
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--operation="); ok {
			f.operation = v
		} else if a == "--operation" && i+1 < len(args) {
			f.operation = args[i+1]
		}
	}
	return f
}

// webhookPass runs a case's apply once more with the rules served by the
// dragnet webhook handler (runner.Webhook: each object an AdmissionReview,
// the returned JSONPatch applied as the API server applies it) inside the
// same admission chain: the exit code, the admitted objects and every
// refusal must be apply's. Warnings are not compared: the webhook bounds
// their number and length.
func webhookPass(t *testing.T, args []string, code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	s := Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}
	cmd := newApplyCmdFor(s, &applyOptions{admissionFlags: admissionFlags{webhook: true}})
	cmd.SetArgs(args[1:])
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	got := exitCode(s, cmd.ExecuteContext(context.Background()))
	if code == 2 && got == 1 && sameFailure(errOut.String(), stderr) {
		// Offline, a rule reading data the context does not give cannot
		// be evaluated (exit 2); the server refuses the object with the
		// same error.
		t.Logf("webhook pass: the webhook refused with apply's evaluation error")
		return
	}
	if got != code {
		t.Fatalf("webhook pass: exit %d, apply %d\nstderr:\n%s\napply stderr:\n%s", got, code, errOut.String(), stderr)
	}
	if code == 2 {
		t.Logf("webhook pass: exit 2 as apply")
		return
	}
	compareOutput(t, []byte(stdout), out.Bytes())
	refusals := 0
	for _, l := range strings.Split(errOut.String(), "\n") {
		if l == "" || strings.HasPrefix(l, "warning: ") {
			continue
		}
		if strings.HasPrefix(l, "apply: ") {
			// The summary: the same objects, patched and refused (the
			// warnings are bounded by the webhook, the rules that patched
			// known to the engine's driver only).
			if counts, _, _ := strings.Cut(l, "; "); !strings.Contains(stderr, counts+"; ") {
				t.Errorf("webhook pass: summary %q, apply's stderr:\n%s", l, stderr)
			}
			continue
		}
		refusals++
		if !strings.Contains(stderr, l+"\n") {
			t.Errorf("webhook pass: %q is not in apply's stderr:\n%s", l, stderr)
		}
	}
	t.Logf("webhook pass: exit %d, %d refusals, as apply", got, refusals)
}

// sameFailure reports whether every refusal of the webhook run (its
// stderr) carries an error apply's stderr reports.
func sameFailure(webhook, apply string) bool {
	n := 0
	for _, l := range strings.Split(webhook, "\n") {
		if _, msg, ok := strings.Cut(l, ": modwright: "); ok && strings.HasPrefix(l, "rejected: ") {
			if !strings.Contains(apply, msg) {
				return false
			}
			n++
		}
	}
	return n > 0
}

// sameOutput reports whether two YAML or JSON streams hold equal objects.
func sameOutput(want, got []byte) bool {
	w, err1 := source.ParseManifest("want", want)
	g, err2 := source.ParseManifest("stdout", got)
	if err1 != nil || err2 != nil || len(w) != len(g) {
		return false
	}
	for i := range w {
		if !value.Equal(w[i].Object, g[i].Object) {
			return false
		}
	}
	return true
}

// compareOutput compares two YAML or JSON streams document by document as
// JSON values.
func compareOutput(t *testing.T, want, got []byte) {
	t.Helper()
	w, err := source.ParseManifest("want", want)
	if err != nil {
		t.Fatalf("want section: %v", err)
	}
	g, err := source.ParseManifest("stdout", got)
	if err != nil {
		t.Fatalf("stdout: %v\n%s", err, got)
	}
	if len(w) != len(g) {
		t.Fatalf("stdout has %d objects, want %d:\n%s", len(g), len(w), got)
	}
	for i := range w {
		if !value.Equal(w[i].Object, g[i].Object) {
			t.Errorf("object %d differs (-want +got):\n%s", i+1, cmp.Diff(w[i].Object, g[i].Object))
		}
	}
}
