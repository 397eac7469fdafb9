package modrule_test

import (
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// TestScopeReasonAgreesWithSnapshot checks that explain's scope reasons
// (ModRule's kinds.Explainer) never contradict the snapshot's candidates, for every rule and a grid of
// namespaces, operations and kinds.
func TestScopeReasonAgreesWithSnapshot(t *testing.T) {
	docs, err := source.ReadPaths([]string{"../../../testdata/cli/explain/rules.yaml", "../../../examples/rules"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, registry())
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	snap := engine.NewSnapshot(res.Rules)
	for _, ns := range []string{"", "shop", "web", "kubemod-system", "other"} {
		for _, op := range []rules.Operation{rules.Create, rules.Update, rules.Delete} {
			for _, kind := range []string{"Pod", "Node", "Deployment", "Service", ""} {
				in := map[engine.Rule]bool{}
				for _, r := range snap.Candidates(ns, op, kind, nil) {
					in[r] = true
				}
				for _, r := range snap.Rules() {
					reason := kinds.ScopeReason(r, r.(kinds.Explainer), ns, kind, op, in[r])
					if got := strings.HasPrefix(reason, "in scope"); got != in[r] {
						t.Errorf("%s for %s %q in %q: candidate %v, but the reason is %q", r.Info().Key, op, kind, ns, in[r], reason)
					}
					if reason == "out of scope" {
						t.Errorf("%s for %s %q in %q: out of scope without a reason", r.Info().Key, op, kind, ns)
					}
				}
			}
		}
	}
}
