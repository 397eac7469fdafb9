package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/testtool"
)

// Kyverno's policy library with its own `kyverno test` suites
// (../shared/conformance/kyverno-policies, or $MODWRIGHT_KYVERNO_POLICIES_DIR):
// every suite whose policies are all kyverno.io ClusterPolicy/Policy with
// validate rules runs through `modwright test`, as `kyverno test` would run
// it. Stricter than kyverno test: a row whose rule did not match
// ("Excluded", which kyverno test passes whatever was expected) fails here
// unless the row expects skip.

// kyvernoPending are the validate features modwright does not evaluate yet:
// a suite using one must fail, and only with the rule's "not evaluated yet"
// error (docs/compatibility.md lists them); one that starts to pass fails
// the test, so that the list stays true.
var kyvernoPending = []string{}

// kyvernoDeviations are the suites where modwright deliberately differs
// from kyverno test, each with its reason (docs/compatibility.md, Kyverno's
// policies) and the text every differing row's reason holds. A listed
// suite that starts to pass fails the test, so that the list stays true.
var kyvernoDeviations = map[string]struct{ reason, rows string }{
	"other-cel/restrict-clusterrole-nodesproxy":  nullField,
	"other-cel/restrict-secret-role-verbs":       nullField,
	"other-cel/restrict-wildcard-resources":      nullField,
	"other-cel/restrict-wildcard-verbs":          nullField,
	"other-vpol/restrict-clusterrole-nodesproxy": nullField,
	"other-vpol/restrict-wildcard-resources":     nullField,
	"other-vpol/restrict-wildcard-verbs":         nullField,
	"other-vpol/require-annotations": {
		reason: "a field written null (a pod template's metadata:) is absent for CEL, as the API server stores the object; kyverno test keeps the null, which optional selection reads as absent",
		rows:   "no such key: metadata",
	},
}

var nullField = struct{ reason, rows string }{
	reason: "a field written null (rules: null) is absent for CEL, as the API server stores the object; kyverno test keeps the null",
	rows:   "no such key: rules",
}

// kyvernoExcluded are rows kyverno test passes as Excluded too (the rule
// does not match there either), by suite and case.
var kyvernoExcluded = map[string]string{
	"other-cel/memory-requests-equal-limits": "batch/v1beta1/CronJob/default/hello", // autogen rules match batch/v1 CronJobs
	// Its rows name a rule the policy does not have (check-ambient-mode-enabled;
	// the policy's rule is add-ambient-mode-enabled): every row.
	"istio/add-ambient-mode-namespace": "",
}

// kyvernoExcludedRow: kyverno test passes the row as Excluded too, as
// kyvernoExcluded lists it.
func kyvernoExcludedRow(suite string, r caseResult) bool {
	want, ok := kyvernoExcluded[suite]
	return ok && strings.HasSuffix(r.Resource, want)
}

// kyvernoSuiteInfo classifies a suite by its policies: legacy policies
// with validate, mutate and generate rules only (mutates: some mutate or
// generate, which a background scan does not), and the
// pending validate features they use.
func kyvernoSuiteInfo(t *testing.T, file string) (ok, mutates bool, pending []string) {
	t.Helper()
	kt, err := suite.LoadKyverno(file)
	if err != nil || (kt.Context != "" && !exists(kt.Resolve(kt.Context))) {
		// A test-level context file (Kyverno's CEL libraries' data) the
		// copy does not hold: counted as left out.
		return false, false, nil
	}
	docs, err := source.ReadPaths(kt.ResolveAll(kt.Policies), nil)
	if err != nil || len(docs) == 0 {
		return false, false, nil
	}
	for _, d := range docs {
		if strings.HasPrefix(d.APIVersion(), "policies.kyverno.io/") {
			switch d.Kind() {
			case "ValidatingPolicy", "NamespacedValidatingPolicy":
			case "MutatingPolicy", "NamespacedMutatingPolicy", "GeneratingPolicy", "NamespacedGeneratingPolicy":
				mutates = true
			default:
				return false, false, nil
			}
			pending = append(pending, vpolPending(d.Object)...)
			continue
		}
		if av := d.APIVersion(); (av != "kyverno.io/v1" && av != "kyverno.io/v2beta1") || (d.Kind() != "ClusterPolicy" && d.Kind() != "Policy") {
			return false, false, nil
		}
		spec, _ := d.Object["spec"].(map[string]any)
		rs, _ := spec["rules"].([]any)
		for _, r := range rs {
			rm, _ := r.(map[string]any)
			v, ok := rm["validate"].(map[string]any)
			if (rm["mutate"] != nil) != (rm["generate"] != nil) && rm["validate"] == nil && rm["verifyImages"] == nil {
				mutates = true // or generates: what a background scan does not do
				continue
			}
			if !ok || rm["mutate"] != nil || rm["generate"] != nil || rm["verifyImages"] != nil {
				return false, false, nil
			}
			for _, f := range kyvernoPending {
				if v[f] != nil && !slices.Contains(pending, f) {
					pending = append(pending, f)
				}
			}
		}
	}
	return true, mutates, pending
}

// exists reports whether a file exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// vpolPending are the parts of a ValidatingPolicy or MutatingPolicy
// modwright does not evaluate yet (its result is then an error saying so).
func vpolPending(obj map[string]any) []string {
	var out []string
	spec, _ := obj["spec"].(map[string]any)
	if ev, _ := spec["evaluation"].(map[string]any); ev != nil && ev["mode"] != nil && ev["mode"] != "Kubernetes" {
		out = append(out, "evaluation.mode")
	}
	return out
}

// kyvernoSuiteFiles are the library's kyverno-test.yaml files.
func kyvernoSuiteFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(dir, "library"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == suite.KyvernoFileName {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestKyvernoPolicies(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kyverno-policies", "MODWRIGHT_KYVERNO_POLICIES_DIR", "library")
	files := kyvernoSuiteFiles(t, dir)
	var passed, pendingN, rows, withContext, skippedRows int
	for _, f := range files {
		ok, _, pending := kyvernoSuiteInfo(t, f)
		if !ok {
			if kt, err := suite.LoadKyverno(f); err == nil && kt.Context != "" && !exists(kt.Resolve(kt.Context)) {
				withContext++
			}
			continue
		}
		name, _ := filepath.Rel(filepath.Join(dir, "library"), filepath.Dir(filepath.Dir(f)))
		var out, errOut bytes.Buffer
		err := runTest(context.Background(), []string{f}, &testOptions{format: "json"}, Streams{Out: &out, Err: &errOut})
		var rep testReport
		if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
			t.Errorf("%s: no report (%v): %v\n%s", name, err, jerr, errOut.String())
			continue
		}
		rows += len(rep.Results)
		var bad []string
		for _, r := range rep.Results {
			if strings.HasPrefix(r.Note, "Skipped") {
				skippedRows++ // kyverno test leaves them out too
			}
			switch {
			case !r.Passed:
				bad = append(bad, r.Case+": "+r.Reason)
			case r.Note == "Excluded" && r.Expected != "skip" && len(pending) == 0 && !kyvernoExcludedRow(name, r):
				bad = append(bad, r.Case+": the rule did not match (kyverno test passes it: Excluded), want "+r.Expected)
			}
		}
		if len(pending) > 0 {
			pendingN++
			if len(bad) == 0 {
				t.Errorf("%s uses %v, listed as not evaluated yet, and passes: update kyvernoPending and docs/compatibility.md", name, pending)
			}
			for _, b := range bad {
				if !strings.Contains(b, "is not evaluated yet") {
					t.Errorf("%s (uses %v): a failure other than the pending feature's: %s", name, pending, b)
				}
			}
			continue
		}
		if dev, ok := kyvernoDeviations[name]; ok {
			if len(bad) == 0 {
				t.Errorf("%s passes: remove it from kyvernoDeviations (%s)", name, dev.reason)
			}
			for _, b := range bad {
				if !strings.Contains(b, dev.rows) {
					t.Errorf("%s (a deviation: %s): a row differs otherwise: %s", name, dev.reason, b)
				}
			}
			continue
		}
		if len(bad) > 0 || err != nil {
			t.Errorf("%s: %v\n  %s", name, err, strings.Join(bad, "\n  "))
			continue
		}
		passed++
	}
	t.Logf("kyverno-policies: %d suites pass (%d rows; ClusterPolicy/Policy validate, mutate and generate, ValidatingPolicy, MutatingPolicy, GeneratingPolicy); %d use features not evaluated yet (%v, and in CEL policies evaluation.mode); %d left out: a test-level context file the copy does not hold (TestKyvernoPoliciesContext runs them with modwright's own); %d rows skipped as kyverno test skips them (their patchedResources file lacks the object)", passed, rows, pendingN, kyvernoPending, withContext, skippedRows)
	if passed == 0 {
		t.Fatal("no suite ran")
	}
}

// TestKyvernoPoliciesContext: the library's suites whose context file
// (objects and image data for Kyverno's CEL libraries) the shared copy
// does not hold, each run with modwright's own context file for it
// (testdata/kyverno-library-contexts) in a copy of the suite.
func TestKyvernoPoliciesContext(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kyverno-policies", "MODWRIGHT_KYVERNO_POLICIES_DIR", "library")
	contexts, err := filepath.Glob("../../testdata/kyverno-library-contexts/*/context.yaml")
	if err != nil || len(contexts) == 0 {
		t.Fatalf("no context files: %v", err)
	}
	for _, c := range contexts {
		name := filepath.Base(filepath.Dir(c))
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(dir, "library", "other-vpol", name)
			tmp := filepath.Join(t.TempDir(), name)
			if err := os.CopyFS(tmp, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(tmp, ".kyverno-test", suite.KyvernoFileName)
			kt, err := suite.LoadKyverno(f)
			if err != nil || kt.Context == "" {
				t.Fatalf("%s: %v (context %q)", f, err, kt.Context)
			}
			data, err := os.ReadFile(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(kt.Resolve(kt.Context), data, 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			err = runTest(context.Background(), []string{f}, &testOptions{format: "json"}, Streams{Out: &out, Err: &errOut})
			var rep testReport
			if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
				t.Fatalf("%v (%v)\n%s", err, jerr, errOut.String())
			}
			for _, r := range rep.Results {
				if !r.Passed {
					t.Errorf("%s: %s", r.Case, r.Reason)
				}
			}
			if len(rep.Results) == 0 {
				t.Error("no rows")
			}
		})
	}
}

// TestKyvernoPoliciesAudit: `modwright audit -f` on each suite's resources
// with its policies gives the results the suite expects, as a background
// scan gives them (every object as a CREATE with no requester). Suites
// whose results need what a background scan does not have (values files,
// a requester, an operation, exceptions) and policies with background:
// false (which a background scan does not run) are left out, counted.
func TestKyvernoPoliciesAudit(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kyverno-policies", "MODWRIGHT_KYVERNO_POLICIES_DIR", "library")
	files := kyvernoSuiteFiles(t, dir)
	var suites, rows, leftOut int
	for _, f := range files {
		name, _ := filepath.Rel(filepath.Join(dir, "library"), filepath.Dir(filepath.Dir(f)))
		// A background scan runs no mutate rule.
		if ok, mutates, pending := kyvernoSuiteInfo(t, f); !ok || mutates || len(pending) > 0 || kyvernoDeviations[name].reason != "" {
			continue
		}
		kt, err := suite.LoadKyverno(f)
		if err != nil {
			t.Fatal(err)
		}
		if kt.Values != nil || kt.UserInfo != "" || len(kt.Exceptions) > 0 || slices.ContainsFunc(kt.Results, func(r suite.KyvernoResult) bool { return r.Operation != "" }) {
			leftOut++
			continue
		}
		admissionOnly := map[string]bool{}
		policies, err := source.ReadPaths(kt.ResolveAll(kt.Policies), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range policies {
			if spec, _ := p.Object["spec"].(map[string]any); spec["background"] == false {
				admissionOnly[p.Name()] = true
			}
		}
		var out, errOut bytes.Buffer
		o := &auditOptions{rules: kt.ResolveAll(kt.Policies), files: kt.ResolveAll(kt.Resources), namespace: "default",
			clusterRules: defaultClusterRulesNamespace, output: "json", all: true, quiet: true, maxResults: 1}
		err = runAudit(context.Background(), o, Streams{Out: &out, Err: &errOut})
		var ee *ExitError
		if err != nil && !(errors.As(err, &ee) && ee.Code == 1) {
			t.Errorf("%s: %v\n%s", name, err, errOut.String())
			continue
		}
		var rep struct{ Results []audit.Result }
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		suites++
		for _, row := range kt.Results {
			policy := lastSegment(row.Policy)
			if admissionOnly[policy] {
				continue
			}
			for _, r := range rep.Results {
				if lastSegment(r.Policy) != policy || (row.Rule != "" && r.Rule != row.Rule && r.Rule != "autogen-"+row.Rule && r.Rule != "autogen-cronjob-"+row.Rule) {
					continue
				}
				if len(row.Resources) > 0 && !slices.ContainsFunc(row.Resources, func(n string) bool {
					return n == r.Resource.Name || n == r.Resource.Namespace+"/"+r.Resource.Name
				}) {
					continue
				}
				rows++
				if string(r.Result) != row.Result {
					t.Errorf("%s: %s %s %s: audit gives %s, the suite expects %s (%s)", name, policy, r.Rule, r.Resource, r.Result, row.Result, r.Message)
				}
			}
		}
	}
	t.Logf("kyverno-policies: audit agrees with %d suites (%d results compared); %d suites left out (values, requester, operations or exceptions)", suites, rows, leftOut)
	if suites == 0 || rows == 0 {
		t.Fatal("nothing compared")
	}
}
