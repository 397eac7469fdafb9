package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/translate"
	"github.com/modwright/modwright/internal/value"
)

// TestKyvernoPoliciesCompiled: the library's ValidatingPolicy and
// MutatingPolicy suites with their policies compiled to admission policies
// (modwright compile), run offline as the API server runs them, give the
// suites' results: each translated validating policy's bindings set to
// Deny, an object the policies refuse is one the suite expects to fail,
// one they admit one it expects to pass or skip; an object the mutating
// policies change equals the row's patchedResources. Suites reading values, a requester, exceptions or context data
// are left out, as rows of policies left to the webhook (each counted).
func TestKyvernoPoliciesCompiled(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kyverno-policies", "MODWRIGHT_KYVERNO_POLICIES_DIR", "library")
	var compared, mutated, policies, translated, leftOut, deviations int
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
		if err != nil || len(docs) == 0 {
			continue
		}
		mutating := allKind(docs, kpoliciesv1.KindMutatingPolicy)
		if !mutating && !allKind(docs, kpoliciesv1.KindValidatingPolicy) {
			continue
		}
		res, err := compileRules(kt.ResolveAll(kt.Policies), Streams{Out: io.Discard, Err: io.Discard}, defaultClusterRulesNamespace, false, translate.PlaceNative)
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
				object := obj.Object
				if ns == "" && !kinds.IsClusterScoped(obj.Kind()) {
					// As kyverno test places it.
					ns = "default"
					object = value.DeepCopy(obj.Object).(map[string]any)
					object["metadata"].(map[string]any)["namespace"] = ns
				}
				req := admissionpolicy.Request{Operation: "CREATE", Object: object, Namespace: ns,
					Objects: []map[string]any{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}}
				if mutating {
					if row.PatchedResources == "" {
						leftOut++
						continue
					}
					got, err := set.Mutate(context.Background(), req, nil)
					if err != nil {
						t.Errorf("%s: %s %s: %v", f, row.Policy, name, err)
						continue
					}
					reason, missing := comparePatched(kt, row.PatchedResources, got, "")
					if missing {
						leftOut++ // kyverno test skips the row too
						continue
					}
					if reason != "" {
						t.Errorf("%s: %s %s: the compiled policy's object differs from patchedResources: %s", f, row.Policy, name, reason)
					}
					mutated++
					continue
				}
				r := set.Validate(context.Background(), req)
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
	t.Logf("kyverno-policies compiled: %d of %d ValidatingPolicies and MutatingPolicies translated (bindings, autogen policies included); %d validation rows compared with the suites' results (%d more differ as the documented null-field deviation does), %d mutated objects equal to their patchedResources, %d rows left out; not translated: %v",
		translated, policies, compared, deviations, mutated, leftOut, reasons)
	if compared < 100 || mutated < 10 {
		t.Errorf("%d validation rows and %d mutations compared, want at least 100 and 10: the translation must keep covering the library", compared, mutated)
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
