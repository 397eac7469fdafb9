package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/value"
)

type testOptions struct {
	format string
	run    string
	crds   []string // --crd: CRDs for every suite, with the suites' own
	// registry gives the kinds served (nil: newRegistry); tests set it.
	registry registryFunc
}

func newTestCmd(s Streams) *cobra.Command {
	o := &testOptions{}
	cmd := &cobra.Command{
		Use:   "test PATH...",
		Short: "Run rule test suites (" + suite.FileName + ", Kyverno's " + suite.KyvernoFileName + ", Gatekeeper's " + suite.GatorFileName + ") and report PASS/FAIL per case",
		Long: `test runs test suites for rules of every kind: each suite names rule files, resources and
optional context objects, and the outcome expected for each resource. PATH is a
suite file, or a directory searched recursively for files named
` + suite.FileName + `, ` + suite.KyvernoFileName + ` and ` + suite.GatorFileName + `.

A ` + suite.KyvernoFileName + ` (cli.kyverno.io/v1alpha1 Test) runs as kyverno test runs it:
its policies (Kyverno ClusterPolicy/Policy), resources, values file and
results rows; each row prints its policy, rule and resource, the result
expected and the result got (-o table: kyverno test's columns). A row whose
rule did not match passes, marked (Excluded), as in kyverno test.

A ` + suite.GatorFileName + ` (test.gatekeeper.sh/v1alpha1 Suite) runs as gator verify runs it:
each test's ConstraintTemplate and constraint, each case's object reviewed
with its inventory objects as the cluster's synced data (data.inventory),
and each assertion's count of violations (violations: yes, no or a number;
message: a regular expression the violation's message must match).

A suite (paths are relative to the suite file):

  apiVersion: modwright.io/v1alpha1
  kind: TestSuite
  rules: [rules]                 # rule files or directories (required)
  resources: [manifests]         # objects cases refer to as Kind/name
  context: [namespaces.yaml]     # objects the rules read (Namespaces, Nodes, ConfigMaps)
  operation: CREATE              # default; a case may override it
  namespace: default             # for namespaced objects that carry none
  cases:
    - resource: Deployment/web   # or Kind/namespace/name, or object: {...}
      expect: patched            # admitted | unchanged | patched | rejected
      result: expected/web.yaml  # or resultObject: {...}; compared as JSON
    - resource: Service/web
      expect: unchanged
    - name: external IPs are refused
      resource: Service/sneaky
      expect: rejected
      message: are not allowed   # must occur in the denial text
      messageRegex: '203\.0\.113\.7'
    - resource: Deployment/web
      operation: UPDATE
      old: old/web.yaml          # the old object of an UPDATE, or oldObject: {...}
      expect: admitted

A rule that fails to apply to a case's object fails the case, unless the case
lists the error under errors: [text, ...].

old (a file: its only object, or the one with the case object's apiVersion,
kind, namespace and name) or oldObject is the old object of an UPDATE and must
name the case's object; it is refused with CREATE and DELETE. Admission
warnings are printed on stderr and do not fail a case.

Every case prints one line, PASS or FAIL, with what went wrong and a diff
(- expected, + actual) for a failure, then a summary "N passed, M failed".
-o json prints the same as one JSON document.

Exit status: 0 when every case passed; 1 when any failed; 2 when a suite is
invalid (the file and field are named) or its rules or resources cannot be
loaded.`,
		Example: `  modwright test examples
  modwright test examples/modwright-test.yaml -o json
  modwright test examples/kyverno -o table
  modwright test examples/gatekeeper
  modwright test examples --run 'external IPs'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTest(cmd.Context(), args, o, s)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.format, "output", "o", "text", "output format: text, table or json (--format is an alias)")
	aliasFlags(f, map[string]string{"format": "output"})
	f.StringVar(&o.run, "run", "", "run only the cases whose name contains this text")
	f.StringArrayVar(&o.crds, "crd", nil, "CustomResourceDefinitions for every suite, with each suite's own crds (a file or directory; repeatable): objects of their kinds are validated as the API server does, around the rules")
	return cmd
}

// caseResult is the outcome of one case.
type caseResult struct {
	Suite  string `json:"suite"`
	Case   string `json:"case"`
	Passed bool   `json:"passed"`
	// Reason says why a case failed.
	Reason string `json:"reason,omitempty"`
	// Diff is a unified diff, expected to actual.
	Diff string `json:"diff,omitempty"`
	// A kyverno-test.yaml row: the policy, rule and resource (Kyverno's
	// apiVersion/kind/namespace/name), the result expected and got; Note
	// says a row passed without a result ("Excluded": the rule did not
	// match, which kyverno test passes whatever was expected).
	Policy   string `json:"policy,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Resource string `json:"resource,omitempty"`
	Expected string `json:"expected,omitempty"`
	Got      string `json:"got,omitempty"`
	Note     string `json:"note,omitempty"`
}

type testReport struct {
	Results []caseResult `json:"results"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
}

func runTest(ctx context.Context, paths []string, o *testOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.format != "text" && o.format != "table" && o.format != "json" {
		return usageError("--output must be text, table or json, not %q", o.format)
	}
	files, err := suite.FindFiles(paths, func(p string) bool {
		b := filepath.Base(p)
		return b == suite.FileName || b == suite.KyvernoFileName || b == suite.GatorFileName
	})
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("%w: %v", suite.ErrInvalid, err)}
	}
	if len(files) == 0 {
		return usageError("no %s, %s or %s found under %s", suite.FileName, suite.KyvernoFileName, suite.GatorFileName, strings.Join(paths, ", "))
	}
	run, err := loadSuites(ctx, files, o, s)
	if err != nil {
		return err
	}
	var rep testReport
	for _, f := range run {
		res, err := f()
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Passed {
				rep.Passed++
			} else {
				rep.Failed++
			}
			if o.format == "text" {
				printCase(s, r)
			}
		}
		rep.Results = append(rep.Results, res...)
	}
	switch o.format {
	case "json":
		if rep.Results == nil {
			rep.Results = []caseResult{}
		}
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return &ExitError{Code: 2, Err: err}
		}
	case "table":
		// kyverno-test.yaml rows alone: kyverno test's columns, with the
		// results expected and got.
		kyvernoRows := len(rep.Results) > 0
		for _, r := range rep.Results {
			kyvernoRows = kyvernoRows && r.Policy != ""
		}
		cols := []string{"ID", "Suite", "Case", "Result", "Reason"}
		if kyvernoRows {
			cols = []string{"ID", "Policy", "Rule", "Resource", "Expected", "Got", "Result", "Reason"}
		}
		rows := make([][]any, len(rep.Results))
		for i, r := range rep.Results {
			result := "Pass"
			if !r.Passed {
				result = "Fail"
			}
			rows[i] = []any{i + 1, r.Suite, r.Case, result, r.Reason}
			if kyvernoRows {
				reason := r.Reason
				if reason == "" {
					reason = r.Note
				}
				rows[i] = []any{i + 1, r.Policy, r.Rule, r.Resource, r.Expected, r.Got, result, reason}
			}
		}
		if err := printTable(s.Out, cols, rows); err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		fmt.Fprintf(s.Out, "%d passed, %d failed\n", rep.Passed, rep.Failed)
	default:
		fmt.Fprintf(s.Out, "%d passed, %d failed\n", rep.Passed, rep.Failed)
	}
	if rep.Failed > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}

func printCase(s Streams, r caseResult) {
	if r.Passed {
		fmt.Fprintf(s.Out, "PASS %s: %s\n", r.Suite, r.Case)
		return
	}
	fmt.Fprintf(s.Out, "FAIL %s: %s: %s\n", r.Suite, r.Case, r.Reason)
	if r.Diff != "" {
		for _, l := range splitLines(r.Diff) {
			fmt.Fprintln(s.Out, "    "+l)
		}
	}
}

// suiteError is an exit-2 error naming the suite.
func suiteError(st *suite.Suite, field string, err error) error {
	return &ExitError{Code: 2, Err: fmt.Errorf("%w: %s: %s: %v", suite.ErrInvalid, st.Path, field, err)}
}

// runSuite loads a suite's rules, resources and context and runs its cases
// (those whose title contains o.run).
func runSuite(ctx context.Context, st *suite.Suite, o *testOptions, s Streams) ([]caseResult, error) {
	filter := o.run
	snap, policies, err := loadRules(st.ResolveAll(st.Rules), s, o.registry.kinds(st.ClusterRulesNamespace), ruleLoading{policies: true})
	if err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return nil, suiteError(st, "rules", ee.Err)
		}
		return nil, err
	}
	docs, err := source.ReadPaths(st.ResolveAll(st.Resources), nil)
	if err != nil {
		return nil, suiteError(st, "resources", err)
	}
	resolver, err := resolverFor(st.ResolveAll(st.Context), Streams{Err: s.Err})
	if err != nil {
		return nil, suiteError(st, "context", errors.Unwrap(err))
	}
	var crds *crdschema.Set
	if len(st.CRDs) > 0 || len(o.crds) > 0 {
		if crds, err = loadCRDs(ctx, append(st.ResolveAll(st.CRDs), o.crds...), Streams{Err: s.Err}); err != nil {
			return nil, suiteError(st, "crds", errors.Unwrap(err))
		}
	}
	var authz engine.Authorizer
	if st.Authorizer != nil {
		authz = st.Authorizer
	}
	opts := engineOptions(resolver, crds)
	opts.Authorizer, opts.NoTrace = authz, true
	chain := runner.NewChain(runner.NewEngineOptions(snap, opts), runner.ChainOptions{CRDs: crds, Policies: policies,
		Objects: contextObjects(resolver), User: userOf(resolver)})
	name := st.Name
	if name == "" {
		name = st.Path
	}
	var out []caseResult
	for i := range st.Cases {
		c := &st.Cases[i]
		title := c.Title(i)
		if filter != "" && !strings.Contains(title, filter) {
			continue
		}
		field := fmt.Sprintf("cases[%d]", i)
		obj := c.Obj
		if c.Resource != "" {
			obj, err = findResource(docs, c)
			if err != nil {
				return nil, suiteError(st, field+".resource", err)
			}
		}
		var want map[string]any
		switch {
		case c.ResultObj != nil:
			want = c.ResultObj
		case c.Result != "":
			want, err = readResult(st.Resolve(c.Result), obj)
			if err != nil {
				return nil, suiteError(st, field+".result", err)
			}
		}
		opName := st.Operation
		if c.Operation != "" {
			opName = c.Operation
		}
		ns := st.Namespace
		if c.Namespace != "" {
			ns = c.Namespace
		}
		op := rules.Operation(strings.ToUpper(opName))
		a := newAdmission(obj, ns)
		if a.old, err = caseOld(st, c, obj, ns); err != nil {
			return nil, suiteError(st, field+".old", err)
		}
		a.user = userOf(resolver)
		res, err := chain.Run(ctx, a.request(op))
		if err != nil {
			return nil, suiteError(st, field, err)
		}
		r := caseResult{Suite: name, Case: title}
		printWarnings(s, name+": "+title, res)
		r.Reason, r.Diff = check(c, obj, want, res)
		r.Passed = r.Reason == ""
		out = append(out, r)
	}
	return out, nil
}

// caseOld is the old object of a case's UPDATE (old or oldObject), nil
// when it has none; it must name the case's object.
func caseOld(st *suite.Suite, c *suite.Case, obj map[string]any, ns string) (map[string]any, error) {
	switch {
	case c.OldObj != nil:
		return c.OldObj, sameObject(obj, c.OldObj, ns)
	case c.Old != "":
		docs, err := source.ReadPaths([]string{st.Resolve(c.Old)}, nil)
		if err != nil {
			return nil, err
		}
		return findOld(docs, obj, ns)
	}
	return nil, nil
}

// findResource finds the one document a case refers to.
func findResource(docs []source.Document, c *suite.Case) (map[string]any, error) {
	kind, ns, name := c.Ref()
	var found []*source.Document
	for i := range docs {
		d := &docs[i]
		if d.Kind() == kind && d.Name() == name && (ns == "" || d.Namespace() == ns) {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no %s among the suite's resources", c.Resource)
	case 1:
		return found[0].Object, nil
	}
	origins := make([]string, len(found))
	for i, d := range found {
		origins[i] = d.Origin
	}
	return nil, fmt.Errorf("%s is ambiguous (%s); use Kind/namespace/name", c.Resource, strings.Join(origins, "; "))
}

// readResult reads an expected result: the file's only object, or the one
// with the input's kind, namespace and name.
func readResult(path string, in map[string]any) (map[string]any, error) {
	docs, err := source.ReadPaths([]string{path}, nil)
	if err != nil {
		return nil, err
	}
	if len(docs) == 1 {
		return docs[0].Object, nil
	}
	a := newAdmission(in, "")
	for i := range docs {
		d := &docs[i]
		if d.Kind() == a.kind && d.Name() == a.name && d.Namespace() == a.ns {
			return d.Object, nil
		}
	}
	return nil, fmt.Errorf("%s holds %s and none is %s %s", path, plural(len(docs), "object"), a.kind, a.name)
}

// check compares a result with a case's expectation; the reason is empty
// when the case passed.
func check(c *suite.Case, in, want map[string]any, res *runner.Result) (reason, diff string) {
	var ruleErrors []string
	for _, re := range res.Decision.Errors {
		ruleErrors = append(ruleErrors, re.Error())
	}
	if r := checkErrors(c.Errors, ruleErrors); r != "" {
		return r, ""
	}
	for _, w := range c.Warnings {
		found := false
		for _, got := range res.Decision.Warnings {
			found = found || strings.Contains(runner.WarningText(got), w)
		}
		for _, got := range res.Warnings { // the admission policies' too
			found = found || strings.Contains(got, w)
		}
		if !found {
			return fmt.Sprintf("expected a warning containing %q; got %s", w, plural(len(res.Decision.Warnings), "warning")), ""
		}
	}
	changed := len(res.Patch) > 0
	if c.Expect == suite.ExpectRejected {
		if res.Allowed {
			change := "unchanged"
			if changed {
				change = "patched"
			}
			return "expected a rejection, but the object was admitted (" + change + ")", ""
		}
		text := denialText(res)
		if c.Message != "" && !strings.Contains(text, c.Message) {
			return fmt.Sprintf("the denial text does not contain %q", c.Message), unifiedDiff("expected message", "denial text", c.Message+"\n", text+"\n", false)
		}
		if c.Regex != nil && !c.Regex.MatchString(text) {
			return fmt.Sprintf("the denial text does not match /%s/", c.MessageRegex), unifiedDiff("expected messageRegex", "denial text", c.MessageRegex+"\n", text+"\n", false)
		}
		return "", ""
	}
	if !res.Allowed {
		return "expected admission, but rejected: " + denialText(res), ""
	}
	switch c.Expect {
	case suite.ExpectUnchanged:
		if changed {
			return "expected no change, but the rules patched the object", unifiedDiff("input", "result", toYAML(in), toYAML(res.Object), false)
		}
		return "", ""
	case suite.ExpectPatched:
		if !changed {
			return "expected a patch, but no rule changed the object", ""
		}
	}
	if want != nil && !value.Equal(want, res.Object) {
		return "the result differs from the expected object", unifiedDiff("expected", "result", toYAML(want), toYAML(res.Object), false)
	}
	return "", ""
}

// denialText is the list of rejecting rules a case's message is matched
// against: the engine's DenialText, or the whole denial message when the
// driver gives only that.
func denialText(res *runner.Result) string {
	if res.Decision != nil && !res.Decision.Allowed() {
		return res.Decision.DenialText()
	}
	return res.DenialText() // the engine's refusal, or the API server's (--crd, admission policies)
}

// checkErrors requires every rule error to be expected and every expected
// text to occur in some rule error.
func checkErrors(expected []string, got []string) string {
	var problems []string
	for _, msg := range got {
		ok := false
		for _, x := range expected {
			ok = ok || strings.Contains(msg, x)
		}
		if !ok {
			problems = append(problems, "rule error: "+msg)
		}
	}
	for _, x := range expected {
		ok := false
		for _, msg := range got {
			ok = ok || strings.Contains(msg, x)
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("expected a rule error containing %q", x))
		}
	}
	return strings.Join(problems, "; ")
}

// loadSuites reads and validates every suite file before any runs, and
// returns one runner per suite, in the files' order by format.
func loadSuites(ctx context.Context, files []string, o *testOptions, s Streams) ([]func() ([]caseResult, error), error) {
	// Every suite is validated before any runs.
	suites := make([]*suite.Suite, 0, len(files))
	var kyvernoTests []*suite.KyvernoTest
	var gatorSuites []*suite.GatorSuite
	var errs []error
	for _, f := range files {
		if filepath.Base(f) == suite.GatorFileName {
			gs, err := suite.LoadGator(f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			gatorSuites = append(gatorSuites, gs)
			continue
		}
		if filepath.Base(f) == suite.KyvernoFileName {
			kt, err := suite.LoadKyverno(f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			kyvernoTests = append(kyvernoTests, kt)
			continue
		}
		st, err := suite.Load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		suites = append(suites, st)
	}
	if len(errs) > 0 {
		return nil, &ExitError{Code: 2, Err: errors.Join(errs...)}
	}
	run := make([]func() ([]caseResult, error), 0, len(suites)+len(kyvernoTests))
	for _, st := range suites {
		run = append(run, func() ([]caseResult, error) { return runSuite(ctx, st, o, s) })
	}
	for _, kt := range kyvernoTests {
		run = append(run, func() ([]caseResult, error) { return runKyvernoSuite(ctx, kt, o, s) })
	}
	for _, gs := range gatorSuites {
		run = append(run, func() ([]caseResult, error) { return runGatorSuite(ctx, gs, o, s) })
	}
	return run, nil
}
