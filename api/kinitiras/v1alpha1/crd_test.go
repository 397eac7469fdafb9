package v1alpha1_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/testtool/crdtest"
)

var crds = map[string]string{
	"OverridePolicy":        "policy.kcloudlabs.io_overridepolicies.yaml",
	"ClusterOverridePolicy": "policy.kcloudlabs.io_clusteroverridepolicies.yaml",
	"ClusterValidatePolicy": "policy.kcloudlabs.io_clustervalidatepolicies.yaml",
}

func TestGeneratedFiles(t *testing.T) {
	committed := map[string][]string{"zz_generated.deepcopy.go": {"api/kinitiras/v1alpha1"}}
	for _, f := range crds {
		committed[f] = []string{"deploy/crds", "deploy/helm/modwright/crds"}
	}
	crdtest.GeneratedFiles(t, "./api/kinitiras/v1alpha1", committed)
}

// documents splits YAML documents into objects.
func documents(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

type policy struct {
	origin string
	obj    map[string]any
	bad    bool // a case of an invalid template
}

func policiesIn(t *testing.T, origin string, data []byte, bad bool) []policy {
	var out []policy
	for _, obj := range documents(t, data) {
		kind, _ := obj["kind"].(string)
		av, _ := obj["apiVersion"].(string)
		if _, ok := crds[kind]; ok && strings.HasPrefix(av, "policy.kcloudlabs.io/") {
			out = append(out, policy{origin, obj, bad})
		}
	}
	return out
}

// admit validates each policy as the API server would on create: a valid
// one must pass (no field unknown to the schema, every enum admitted); it
// returns how many invalid ones the schema refused.
func admit(t *testing.T, policies []policy) (refused int) {
	t.Helper()
	validators := map[string]*crdtest.Validator{}
	for kind, f := range crds {
		validators[kind] = crdtest.Load(t, f)
	}
	for _, p := range policies {
		errs := validators[p.obj["kind"].(string)].Validate(p.obj)
		switch {
		case len(errs) > 0 && !p.bad:
			t.Errorf("%s: %s %v refused: %v", p.origin, p.obj["kind"], p.obj["metadata"], errs.ToAggregate())
		case len(errs) > 0:
			refused++
		}
	}
	t.Logf("%d policies admitted by the CRDs, %d invalid ones refused", len(policies)-refused, refused)
	return refused
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestCRDsTakeModwrightPolicies: modwright's example and corpus policies;
// the corpus' cases of bad templates are refused by the schema where it
// can tell (an unknown type, operation, source, cond or affectMode).
func TestCRDsTakeModwrightPolicies(t *testing.T) {
	root := testtool.RepoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "examples", "kinitiras", "*.yaml"))
	var ps []policy
	for _, f := range files {
		ps = append(ps, policiesIn(t, f, readFile(t, f), false)...)
	}
	cases, _ := filepath.Glob(filepath.Join(root, "testdata", "cases", "kinitiras*", "*.txtar"))
	for _, f := range cases {
		a, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range a.Files {
			if sec.Name == "rules.yaml" {
				ps = append(ps, policiesIn(t, f, sec.Data, strings.Contains(filepath.Base(f), "error-"))...)
			}
		}
	}
	if len(ps) < 100 {
		t.Fatalf("only %d policies found", len(ps))
	}
	if refused := admit(t, ps); refused < 5 {
		t.Errorf("the schema refused %d of the invalid templates, want at least the 5 enum cases", refused)
	}
}

// TestCRDsTakeKinitirasExamples: kinitiras' published examples are created
// as they are (validate-pab.yaml's template type pab is not in v0.4.5's
// enum: refused by the schema, as by kinitiras' own CRD).
func TestCRDsTakeKinitirasExamples(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kinitiras", "MODWRIGHT_KINITIRAS_DIR", "examples")
	files, _ := filepath.Glob(filepath.Join(dir, "examples", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join(dir, "examples", "templates", "*.yaml"))
	var ps []policy
	for _, f := range append(files, more...) {
		ps = append(ps, policiesIn(t, f, readFile(t, f), strings.HasSuffix(f, "validate-pab.yaml"))...)
	}
	if len(ps) != 11 {
		t.Errorf("%d kinitiras example policies, want 11", len(ps))
	}
	admit(t, ps)
}
