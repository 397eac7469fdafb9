package kinitiras

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

// TestMetrics: the kinds' observer counts their policies' outcomes under
// kinitiras' metric names, and no other kind's; the registry gives it
// once for the three kinds.
func TestMetrics(t *testing.T) {
	reg := kinds.NewRegistry(NewKinds()...)
	obs := reg.Observers()
	if len(obs) != 1 {
		t.Fatalf("observers %d, want 1 shared by the three kinds", len(obs))
	}
	m := obs[0]
	preg := prometheus.NewRegistry()
	preg.MustRegister(m.Collectors()...)
	deploy := engine.Request{Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}
	pod := engine.Request{Kind: engine.GroupVersionKind{Version: "v1", Kind: "Pod"}}
	ns := engine.Request{Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}}
	m.Decided(deploy, &engine.Decision{Applied: []engine.RuleRef{{Kind: KindClusterOverride, Key: "add-team"}}})
	m.Decided(pod, &engine.Decision{Applied: []engine.RuleRef{{Kind: KindOverridePolicy, Key: "shop/add-owner"}, {Kind: "ModRule", Key: "shop/not-kinitiras"}},
		Errors: []engine.RuleError{{Kind: KindClusterOverride, Rule: "broken"}, {Field: "no rule"}}})
	m.Decided(ns, &engine.Decision{Rejections: []engine.Rejection{{Kind: KindClusterValidate, Rule: "no-delete"}}})
	var rs []engine.Rule
	for _, r := range []struct{ kind, key string }{{KindOverridePolicy, "a/x"}, {KindOverridePolicy, "b/y"}, {KindClusterValidate, "z"}, {"ModRule", "m/r"}} {
		rs = append(rs, &stubRule{engine.RuleInfo{Kind: r.kind, Key: r.key, Phase: engine.Validate, Index: engine.IndexKeys{AnyNamespace: true, Operations: engine.OpSetOf(rules.Create)}}})
	}
	m.Published(engine.NewSnapshot(rs))
	want := `
# HELP kcloudlabs_override_policy_override_count Objects overridden by each override policy (kinitiras' name).
# TYPE kcloudlabs_override_policy_override_count counter
kcloudlabs_override_policy_override_count{name="add-owner",resource_type="v1, Kind=Pod"} 1
kcloudlabs_override_policy_override_count{name="add-team",resource_type="apps/v1, Kind=Deployment"} 1
# HELP kcloudlabs_policy_error_count Policy failures on an object (kinitiras' name).
# TYPE kcloudlabs_policy_error_count counter
kcloudlabs_policy_error_count{error_type="cue_execute_error",name="broken",resource_type="v1, Kind=Pod"} 1
# HELP kcloudlabs_policy_total_number kinitiras' policies in the serving snapshot, by policy_type (kinitiras' name).
# TYPE kcloudlabs_policy_total_number gauge
kcloudlabs_policy_total_number{policy_type="ClusterOverridePolicy"} 0
kcloudlabs_policy_total_number{policy_type="ClusterValidatePolicy"} 1
kcloudlabs_policy_total_number{policy_type="OverridePolicy"} 2
# HELP kcloudlabs_validate_policy_reject_count Objects rejected by each validate policy (kinitiras' name).
# TYPE kcloudlabs_validate_policy_reject_count counter
kcloudlabs_validate_policy_reject_count{name="no-delete",resource_type="v1, Kind=Namespace"} 1
`
	if err := testutil.GatherAndCompare(preg, strings.NewReader(want),
		"kcloudlabs_override_policy_override_count", "kcloudlabs_policy_error_count", "kcloudlabs_policy_total_number", "kcloudlabs_validate_policy_reject_count"); err != nil {
		t.Error(err)
	}
	paths := reg.Paths()
	if len(paths) != 2 || paths[0].Path != MutatePath || len(paths[0].Kinds) != 2 || paths[1].Path != ValidatePath || paths[1].Kinds[0] != KindClusterValidate {
		t.Errorf("paths %+v", paths)
	}
}

type stubRule struct{ info engine.RuleInfo }

func (r *stubRule) Info() *engine.RuleInfo             { return &r.info }
func (r *stubRule) InScope(string) bool                { return true }
func (r *stubRule) Match(*engine.Handle) (bool, error) { return false, nil }
func (r *stubRule) Apply(*engine.Handle) error         { return nil }
