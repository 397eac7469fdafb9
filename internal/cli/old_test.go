package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// oldKind is a rule kind of the tests that reads the old object: every
// rule warns what the request's old object is ("old version V" from its
// label version, or "no old object"), and rejects when the old object is
// labelled locked: "true". No kind of modwright reads the old object yet;
// this one shows that it reaches the engine from every front end.
type oldKind struct{}

func (oldKind) Name() string       { return "OldCheck" }
func (oldKind) Group() string      { return "test.modwright.io" }
func (oldKind) Versions() []string { return []string{"v1"} }

func (oldKind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	return &oldRule{info: engine.RuleInfo{Kind: "OldCheck", Key: m.Key(), Namespace: m.Namespace(), Name: m.Name(),
		Phase: engine.Validate, Index: engine.IndexKeys{Namespace: m.Namespace(),
			Operations: engine.OpSetOf(rules.Create, rules.Update, rules.Delete)}}}, nil
}

type oldRule struct{ info engine.RuleInfo }

var (
	_ kinds.Kind  = oldKind{}
	_ engine.Rule = (*oldRule)(nil)
)

func (r *oldRule) Info() *engine.RuleInfo { return &r.info }
func (r *oldRule) InScope(string) bool    { return true }

func (r *oldRule) Match(*engine.Handle) (bool, error) { return true, nil }

// Apply reads the old object as a kind would: decoded, or as the JSON text
// the webhook leaves undecoded.
func (r *oldRule) Apply(h *engine.Handle) error {
	req := h.Request()
	old := req.OldObject
	if old == nil && req.OldObjectJSON != nil {
		v, err := value.Decode(req.OldObjectJSON)
		if err != nil {
			return err
		}
		old = v
	}
	if old == nil {
		h.Warn("no old object")
		return nil
	}
	v, _ := value.Lookup(old, "metadata", "labels", "version")
	h.Warn("old version " + v.(string))
	if l, _ := value.Lookup(old, "metadata", "labels", "locked"); l == "true" {
		h.Reject("locked", nil)
	}
	return nil
}

func withOldKind(clusterNS string) *kinds.Registry {
	return kinds.NewRegistry(modrule.NewKind(clusterNS), oldKind{})
}

const (
	oldRules = `apiVersion: test.modwright.io/v1
kind: OldCheck
metadata: {name: check, namespace: shop}
`
	oldNew = `apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: shop, labels: {version: "2"}}
`
	oldOld = `apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: shop, labels: {version: "1"}}
`
	oldLocked = `apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: shop, labels: {version: "1", locked: "true"}}
`
	oldSuite = `apiVersion: modwright.io/v1alpha1
kind: TestSuite
rules: [rules.yaml]
resources: [new.yaml]
operation: UPDATE
cases:
  - name: file
    resource: ConfigMap/cm
    old: old.yaml
    expect: unchanged
  - name: inline
    resource: ConfigMap/cm
    oldObject: {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: shop, labels: {version: "1", locked: "true"}}}
    expect: rejected
    message: locked
  - name: none
    resource: ConfigMap/cm
    expect: unchanged
`
)

// writeFiles writes name -> content under a new directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestOldReachesTheEngine: apply, explain, test and krm evaluate an
// UPDATE with its old object (--old, a case's old or oldObject), print
// the admission warnings on stderr and still exit 0 when admitted.
func TestOldReachesTheEngine(t *testing.T) {
	dir := writeFiles(t, map[string]string{"rules.yaml": oldRules, "new.yaml": oldNew, "old.yaml": oldOld,
		"locked.yaml": oldLocked, "modwright-test.yaml": oldSuite})
	path := func(n string) string { return filepath.Join(dir, n) }
	apply := func(op, old, output string) func(ctx context.Context, s Streams) error {
		return func(ctx context.Context, s Streams) error {
			o := &applyOptions{rules: []string{path("rules.yaml")}, files: []string{path("new.yaml")}, old: old, output: output,
				admissionFlags: admissionFlags{operation: op, namespace: "default", registry: withOldKind}}
			return runApply(ctx, o, s)
		}
	}
	explain := func(old, output string) func(ctx context.Context, s Streams) error {
		return func(ctx context.Context, s Streams) error {
			o := &explainOptions{color: "never", applyOptions: applyOptions{rules: []string{path("rules.yaml")}, files: []string{path("new.yaml")},
				old: old, output: output, admissionFlags: admissionFlags{operation: "UPDATE", namespace: "default", registry: withOldKind}}}
			return runExplain(ctx, o, s)
		}
	}
	tests := []struct {
		name       string
		run        func(ctx context.Context, s Streams) error
		code       int
		stderr     []string
		stdout     []string
		noInStderr string
	}{
		{name: "apply with --old", run: apply("UPDATE", path("old.yaml"), "yaml"),
			stderr: []string{"ConfigMap shop/cm: OldCheck shop/check: old version 1"}, stdout: []string{`version: "2"`}},
		{name: "apply UPDATE without --old", run: apply("UPDATE", "", "yaml"),
			stderr: []string{"ConfigMap shop/cm: OldCheck shop/check: no old object"}},
		{name: "apply CREATE", run: apply("CREATE", "", "yaml"),
			stderr: []string{"OldCheck shop/check: no old object"}},
		{name: "apply locked", run: apply("UPDATE", path("locked.yaml"), "yaml"), code: 1,
			stderr: []string{"old version 1", `rejected: ` + path("new.yaml") + `:1: ConfigMap shop/cm: operation rejected by the following OldCheck(s): shop/check: "locked"`}},
		{name: "explain text", run: explain(path("old.yaml"), "text"),
			stderr: []string{"OldCheck shop/check: old version 1"},
			stdout: []string{"UPDATE (old object: " + path("old.yaml") + ":1)", "warning: OldCheck shop/check: old version 1", "admitted"}},
		{name: "explain json", run: explain(path("old.yaml"), "json"),
			stderr: []string{"OldCheck shop/check: old version 1"},
			stdout: []string{`"old": "` + path("old.yaml") + `:1"`, `"warnings": [`, `"OldCheck shop/check: old version 1"`}},
		{name: "test suite", run: func(ctx context.Context, s Streams) error {
			return runTest(ctx, []string{dir}, &testOptions{format: "text", registry: withOldKind}, s)
		}, stdout: []string{"PASS", "3 passed, 0 failed"},
			stderr: []string{": file: OldCheck shop/check: old version 1", ": inline: OldCheck shop/check: old version 1", ": none: OldCheck shop/check: no old object"}},
		{name: "krm", run: func(ctx context.Context, s Streams) error {
			s.In = strings.NewReader("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- " +
				strings.ReplaceAll(strings.TrimSpace(oldRules), "\n", "\n  ") + "\n- " + strings.ReplaceAll(strings.TrimSpace(oldNew), "\n", "\n  ") + "\n")
			return runKRM(ctx, &krmOptions{admissionFlags{operation: "CREATE", namespace: "default", registry: withOldKind}}, s)
		}, stdout: []string{"message: 'OldCheck shop/check: no old object'", "severity: warning"}, noInStderr: "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := tt.run(context.Background(), Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			if code := exitCode(Streams{Err: io.Discard}, err); code != tt.code {
				t.Errorf("exit %d (%v), want %d; stderr:\n%s", code, err, tt.code, stderr.String())
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if tt.noInStderr != "" && strings.Contains(stderr.String(), tt.noInStderr) {
				t.Errorf("stderr has %q:\n%s", tt.noInStderr, stderr.String())
			}
		})
	}
}

// TestOldDrivers: the Engine and Webhook drivers see the same old object
// (the webhook's as the review's oldObject) and give the same result,
// admission warnings included.
func TestOldDrivers(t *testing.T) {
	docs := func(text string) map[string]any {
		d, err := source.ParseManifest("object", []byte(text))
		if err != nil || len(d) != 1 {
			t.Fatalf("%d documents, %v", len(d), err)
		}
		return d[0].Object
	}
	var discard bytes.Buffer
	dir := writeFiles(t, map[string]string{"rules.yaml": oldRules})
	snap, err := loadSnapshot([]string{filepath.Join(dir, "rules.yaml")}, Streams{Err: &discard}, withOldKind(""))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		req     runner.Request
		allowed bool
		warning string
	}{
		{"update with old", runner.Request{Operation: rules.Update, Namespace: "shop", Object: docs(oldNew), Old: docs(oldOld)}, true, "OldCheck shop/check: old version 1"},
		{"update locked", runner.Request{Operation: rules.Update, Namespace: "shop", Object: docs(oldNew), Old: docs(oldLocked)}, false, "old version 1"},
		{"update without old", runner.Request{Operation: rules.Update, Namespace: "shop", Object: docs(oldNew)}, true, "no old object"},
		{"delete", runner.Request{Operation: rules.Delete, Namespace: "shop", Object: docs(oldLocked)}, false, "old version 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []*runner.Result
			for _, d := range []runner.Driver{runner.NewEngine(snap, nil), runner.NewWebhook(snap, nil)} {
				res, err := d.Run(context.Background(), tt.req)
				if err != nil {
					t.Fatalf("%T: %v", d, err)
				}
				if res.Allowed != tt.allowed || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tt.warning) {
					t.Errorf("%T: allowed %v, warnings %q; want %v and %q", d, res.Allowed, res.Warnings, tt.allowed, tt.warning)
				}
				got = append(got, res)
			}
			if d := runner.Diff(got[0], got[1]); d != "" {
				t.Errorf("the drivers disagree: %s", d)
			}
		})
	}
}

// TestOldFlagErrors: --old is refused, with exit status 2 and a message
// saying why, where it has no meaning or names other objects.
func TestOldFlagErrors(t *testing.T) {
	other := strings.Replace(oldOld, "name: cm", "name: other", 1)
	// A ModRule that changes nothing: --rules must hold a rule.
	const rule = "apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: none, namespace: shop}\nspec: {type: Reject, match: [{select: '$.kind', matchValue: Never}]}\n"
	dir := writeFiles(t, map[string]string{"rules.yaml": rule, "new.yaml": oldNew, "old.yaml": oldOld, "other.yaml": other,
		"two.yaml": oldNew + "---\n" + other, "twice.yaml": oldOld + "---\n" + oldLocked, "empty.yaml": "# nothing\n"})
	p := func(n string) string { return filepath.Join(dir, n) }
	base := []string{"--rules", p("rules.yaml"), "-f", p("new.yaml"), "--operation", "UPDATE"}
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"create", []string{"apply", "--rules", p("rules.yaml"), "-f", p("new.yaml"), "--old", p("old.yaml")},
			"", "--old is the old object of an UPDATE, and the operation is CREATE: give --operation UPDATE"},
		{"delete", []string{"explain", "--rules", p("rules.yaml"), "-f", p("new.yaml"), "--operation", "delete", "--old", p("old.yaml")},
			"", "--old is refused with --operation DELETE: the object being deleted is the old object, given with -f"},
		{"directory", append([]string{"apply", "--old", dir}, base...), "", "--old must be a file or -, not a directory"},
		{"stdin twice", []string{"apply", "--rules", p("rules.yaml"), "-f", "-", "--operation", "UPDATE", "--old", "-"},
			oldNew, "standard input (-) can be read only once"},
		{"another object", append([]string{"apply", "--old", p("other.yaml")}, base...), "",
			"--old: no old object for ConfigMap shop/cm (v1) (" + p("new.yaml") + ":1)\n" +
				"--old: the old object ConfigMap shop/other (v1) (" + p("other.yaml") + ":1) is none of the objects (-f): an UPDATE keeps apiVersion, kind, namespace and name"},
		{"an object without its old one", []string{"apply", "--rules", p("rules.yaml"), "-f", p("two.yaml"), "--operation", "UPDATE", "--old", p("old.yaml")},
			"", "--old: no old object for ConfigMap shop/other (v1) (" + p("two.yaml") + ":5)"},
		{"given twice", append([]string{"apply", "--old", p("twice.yaml")}, base...), "",
			"--old: ConfigMap shop/cm (v1) is given twice (" + p("twice.yaml") + ":1; " + p("twice.yaml") + ":5)"},
		{"empty", append([]string{"explain", "--old", p("empty.yaml")}, base...), "", "--old holds no object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := ExecuteContext(context.Background(), tt.args, Streams{In: strings.NewReader(tt.stdin), Out: &stdout, Err: &stderr})
			if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", code, stdout.String(), stderr.String(), tt.want)
			}
		})
	}
	// Paired by identity, not by order: the old objects may come in any
	// order, stdin among them.
	var stdout, stderr bytes.Buffer
	args := []string{"apply", "--rules", p("rules.yaml"), "-f", p("two.yaml"), "--operation", "UPDATE", "--old", "-"}
	if code := ExecuteContext(context.Background(), args, Streams{In: strings.NewReader(other + "---\n" + oldOld), Out: &stdout, Err: &stderr}); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestSuiteOldErrors: a case's old object must name the case's object.
func TestSuiteOldErrors(t *testing.T) {
	other := strings.Replace(oldOld, "name: cm", "name: other", 1)
	suiteOf := func(old string) string {
		return "apiVersion: modwright.io/v1alpha1\nkind: TestSuite\nrules: [rules.yaml]\nresources: [new.yaml]\noperation: UPDATE\ncases:\n  - resource: ConfigMap/cm\n    expect: unchanged\n    " + old + "\n"
	}
	tests := []struct{ name, old, want string }{
		{"file", "old: other.yaml", "cases[0].old: no old object for ConfigMap shop/cm (v1) (the file holds ConfigMap shop/other (v1))"},
		{"inline", "oldObject: {apiVersion: v1, kind: ConfigMap, metadata: {name: other, namespace: shop}}",
			"cases[0].old: the old object is ConfigMap shop/other (v1), the object ConfigMap shop/cm (v1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"rules.yaml": oldRules, "new.yaml": oldNew, "other.yaml": other, "modwright-test.yaml": suiteOf(tt.old)})
			var stdout, stderr bytes.Buffer
			err := runTest(context.Background(), []string{dir}, &testOptions{format: "text", registry: withOldKind}, Streams{Out: &stdout, Err: &stderr})
			if exitCode(Streams{Err: io.Discard}, err) != 2 || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want exit 2 and %q", err, tt.want)
			}
		})
	}
}
