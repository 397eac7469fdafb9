package load

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// objectsDir is the load mix's objects, relative to this package.
const objectsDir = "../../testdata/bench/objects"

func loadSnapshot(t *testing.T, total, matching int) *engine.Snapshot {
	t.Helper()
	return loadSet(t, RuleSet(total, matching), total, matching)
}

// loadSet compiles a generated set of total rules.
func loadSet(t *testing.T, data []byte, total, matching int) *engine.Snapshot {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := source.ReadPaths([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, testKinds())
	if len(res.Errors) > 0 || len(res.Skipped) > 0 {
		t.Fatalf("rule set (%d, %d): errors %v, skipped %v", total, matching, res.Errors, res.Skipped)
	}
	if len(res.Rules) != total {
		t.Fatalf("rule set (%d, %d): %d rules, want %d", total, matching, len(res.Rules), total)
	}
	seen := map[string]bool{}
	for _, r := range res.Rules {
		if seen[r.Info().Key] {
			t.Fatalf("duplicate rule %s", r.Info().Key)
		}
		seen[r.Info().Key] = true
	}
	return engine.NewSnapshot(res.Rules)
}

// TestRuleSetMatches checks generated rule sets (checkSetMatches).
func TestRuleSetMatches(t *testing.T) {
	for _, tc := range []struct{ total, matching int }{
		{5, 1}, {100, 10}, {1000, 10}, {37, 3},
	} {
		checkSetMatches(t, loadSnapshot(t, tc.total, tc.matching), tc.total, tc.matching, "rule-")
	}
}

// TestPolicySetMatches is TestRuleSetMatches for PolicySet.
func TestPolicySetMatches(t *testing.T) {
	for _, tc := range []struct{ total, matching int }{
		{5, 1}, {100, 10}, {1000, 10}, {37, 3},
	} {
		checkSetMatches(t, loadSet(t, PolicySet(tc.total, tc.matching), tc.total, tc.matching), tc.total, tc.matching, "policy-")
	}
}

// checkSetMatches runs every object of the mix through the engine with a
// generated set: each is matched by exactly matching rules, which apply
// without error and add their labels (prefix), and objects moved to the
// quiet namespace (namespaced kinds only) meet no rule at all.
func checkSetMatches(t *testing.T, snap *engine.Snapshot, total, matching int, prefix string) {
	t.Helper()
	objs, err := source.ReadPaths([]string{objectsDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(Mix()) {
		t.Fatalf("%d objects in %s, want %d", len(objs), objectsDir, len(Mix()))
	}
	eng := engine.New(engine.Options{})
	ctx := context.Background()
	tc := struct{ total, matching int }{total, matching}
	for _, d := range objs {
		ns := d.Namespace()
		dec, err := eng.Evaluate(ctx, snap, engine.Request{Operation: rules.Create, Namespace: ns, Kind: engine.GroupVersionKind{Kind: d.Kind()}, Object: d.Object})
		if err != nil {
			t.Fatalf("(%d, %d) %s: %v", tc.total, tc.matching, d.Kind(), err)
		}
		if len(dec.Errors) > 0 {
			t.Errorf("(%d, %d) %s: rule errors: %v", tc.total, tc.matching, d.Kind(), dec.Errors)
		}
		matched, evaluated := 0, 0
		for _, tr := range dec.Trace {
			switch tr.Outcome {
			case engine.Matched:
				matched++
			case engine.NotMatched:
				evaluated++
			default:
				t.Errorf("(%d, %d) %s: rule %s: outcome %s (%s)", tc.total, tc.matching, d.Kind(), tr.Rule, tr.Outcome, tr.Reason)
			}
		}
		if matched != tc.matching {
			t.Errorf("(%d, %d) %s: %d rules matched, want %d", tc.total, tc.matching, d.Kind(), matched, tc.matching)
		}
		if tc.total >= 100 && evaluated == 0 {
			t.Errorf("(%d, %d) %s: no non-matching rule was evaluated", tc.total, tc.matching, d.Kind())
		}
		if tc.matching > 0 && !dec.Changed() {
			t.Errorf("(%d, %d) %s: not patched", tc.total, tc.matching, d.Kind())
		}
		labels := dec.Object.(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
		n := 0
		for k, v := range labels {
			if strings.HasPrefix(k, prefix) {
				n++
				if s, _ := v.(string); !strings.HasPrefix(s, d.Name()+"-") {
					t.Errorf("%s: label %s=%v", d.Kind(), k, v)
				}
			}
		}
		if n != tc.matching {
			t.Errorf("(%d, %d) %s: %d rule labels, want %d", tc.total, tc.matching, d.Kind(), n, tc.matching)
		}

		if d.Kind() == "Namespace" {
			continue
		}
		dec, err = eng.Evaluate(ctx, snap, engine.Request{Operation: rules.Create, Namespace: QuietNamespace, Kind: engine.GroupVersionKind{Kind: d.Kind()}, Object: d.Object})
		if err != nil {
			t.Fatal(err)
		}
		if len(dec.Trace) != 0 || dec.Changed() {
			t.Errorf("(%d, %d) %s in %s: %d rules considered, want none", tc.total, tc.matching, d.Kind(), QuietNamespace, len(dec.Trace))
		}
	}
}

func TestRuleSetShape(t *testing.T) {
	if got := RuleSet(0, 0); strings.Contains(string(got), "kind: ModRule") {
		t.Errorf("RuleSet(0, 0) holds rules:\n%s", got)
	}
	y := string(RuleSet(1000, 10))
	if n := strings.Count(y, "\nkind: ModRule\n"); n != 1000 {
		t.Errorf("%d rules, want 1000", n)
	}
	pinned := strings.Count(y, "- select: '$.kind'\n")
	unpinned := strings.Count(y, "- select: '$.metadata.labels.team'\n")
	if pinned != 50+475 || unpinned != 475 {
		t.Errorf("%d rules pinned by kind, %d unpinned; want 525 and 475", pinned, unpinned)
	}
	for _, name := range []string{"rule-00001", "rule-01000"} {
		if !strings.Contains(y, "name: "+name+"\n") {
			t.Errorf("no rule %s", name)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("RuleSet(10, 10) did not panic")
		}
	}()
	RuleSet(10, 10)
}

func TestPolicySetShape(t *testing.T) {
	y := string(PolicySet(1000, 10))
	policies, cluster := strings.Count(y, "\nkind: ModwrightPolicy\n"), strings.Count(y, "\nkind: ClusterModwrightPolicy\n")
	if policies+cluster != 1000 {
		t.Errorf("%d policies and %d cluster policies, want 1000 in all", policies, cluster)
	}
	if n := strings.Count(y, "- name: team\n"); n != 475 {
		t.Errorf("%d policies stopped by a match condition, want 475", n)
	}
	defer func() {
		if recover() == nil {
			t.Error("PolicySet(10, 10) did not panic")
		}
	}()
	PolicySet(10, 10)
}
