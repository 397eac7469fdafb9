package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/testtool"
)

// TestKyvernoPoliciesCompiled: the library's ValidatingPolicy suites with
// their policies compiled to admission policies (modwright compile), run
// offline as the API server runs them, give the suites' results: each
// translated policy's bindings set to Deny, an object the policies refuse
// is one the suite expects to fail, one they admit one it expects to pass
// or skip. Suites reading values, a requester, exceptions or context data
// are left out, as rows of policies left to the webhook (each counted).
func TestKyvernoPoliciesCompiled(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kyverno-policies", "MODWRIGHT_KYVERNO_POLICIES_DIR", "library")
	var compared, policies, translated, leftOut, deviations int
	reasons := map[string]int{}
	for _, f := range kyvernoSuiteFiles(t, dir) {
		kt, err := suite.LoadKyverno(f)
		if err != nil {
			continue // TestKyvernoPolicies says why
		}
		name0, _ := filepath.Rel(filepath.Join(dir, "library"), filepath.Dir(filepath.Dir(f)))
		if kt.Values != nil || kt.UserInfo != "" || len(kt.Exceptions) > 0 || kt.Context != "" {
			continue
		}
		docs, err := source.ReadPaths(kt.ResolveAll(kt.Policies), nil)
		if err != nil || len(docs) == 0 || !allKind(docs, kpoliciesv1.KindValidatingPolicy) {
			continue
		}
		res, err := compileRules(kt.ResolveAll(kt.Policies), Streams{Out: io.Discard, Err: io.Discard}, defaultClusterRulesNamespace, false)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		policies += len(docs)
		for _, s := range res.Skipped {
			reason := s.Reason
			if strings.Contains(reason, "orValue on a value that may not be optional") {
				reason = "orValue on a value that may not be optional"
			}
			reasons[reason]++
		}
		sets := map[string]*admissionpolicy.Set{} // by policy name
		for _, tr := range res.Translated {
			translated++
			set := admissionpolicy.NewSet()
			for _, o := range tr.Objects {
				if o["kind"] == "ValidatingAdmissionPolicyBinding" {
					o["spec"].(map[string]any)["validationActions"] = []any{"Deny"}
				}
				if err := set.Add(o); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
			sets[tr.Rules[0].Key()] = set
		}
		resources, err := source.ReadPaths(kt.ResolveAll(kt.Resources), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range kt.Results {
			set := sets[row.Policy]
			if set == nil || row.Operation != "" {
				leftOut += len(row.Resources)
				continue
			}
			for _, name := range row.Resources {
				obj := suiteResource(resources, row.Kind, name)
				if obj == nil {
					leftOut++
					continue
				}
				ns := obj.Namespace()
				if ns == "" {
					ns = "default"
				}
				r := set.Validate(context.Background(), admissionpolicy.Request{Operation: "CREATE", Object: obj.Object, Namespace: ns,
					Objects: []map[string]any{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}})
				refused := r.Err != nil
				if dev, ok := kyvernoDeviations[name0]; ok && refused != (row.Result == "fail") && r.Err != nil && strings.Contains(r.Err.Error(), dev.rows) {
					deviations++ // documented: the API server reads the object as modwright does
					continue
				}
				if refused != (row.Result == "fail") {
					t.Errorf("%s: %s %s: the compiled policy %s it, the suite expects %s (%v)", f, row.Policy, name, map[bool]string{true: "refuses", false: "admits"}[refused], row.Result, r.Err)
				}
				compared++
			}
		}
	}
	t.Logf("kyverno-policies compiled: %d of %d ValidatingPolicies translated (bindings, autogen policies included); %d rows compared with the suites' results (%d more differ as the documented null-field deviation does), %d left out; not translated: %v",
		translated, policies, compared, deviations, leftOut, reasons)
	if compared < 100 {
		t.Errorf("%d rows compared, want at least 100: the translation must keep covering the library", compared)
	}
}

// allKind: every document is of kind.
func allKind(docs []source.Document, kind string) bool {
	for _, d := range docs {
		if d.Kind() != kind {
			return false
		}
	}
	return true
}

// suiteResource is the suite resource of kind named name ("ns/name" or
// "name").
func suiteResource(docs []source.Document, kind, name string) *source.Document {
	ns, n, ok := strings.Cut(name, "/")
	if !ok {
		ns, n = "", name
	}
	for i := range docs {
		d := &docs[i]
		if d.Name() == n && (kind == "" || d.Kind() == kind || strings.HasSuffix(kind, "/"+d.Kind())) && (ns == "" || d.Namespace() == ns) {
			return d
		}
	}
	return nil
}
