package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestKcloudlabs(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.PolicyApplied("ClusterOverridePolicy", "add-team", "apps/v1, Kind=Deployment")
	m.PolicyApplied("OverridePolicy", "shop/add-owner", "v1, Kind=Pod")
	m.PolicyApplied("ModRule", "shop/not-kinitiras", "v1, Kind=Pod")
	m.PolicyRejected("ClusterValidatePolicy", "no-delete", "v1, Kind=Namespace")
	m.PolicyFailed("ClusterOverridePolicy", "broken", "v1, Kind=Pod")
	m.PolicyTotals(map[string]int{"OverridePolicy": 2, "ClusterValidatePolicy": 1, "ModRule": 5})
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
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kcloudlabs_override_policy_override_count", "kcloudlabs_policy_error_count", "kcloudlabs_policy_total_number", "kcloudlabs_validate_policy_reject_count"); err != nil {
		t.Error(err)
	}
	var none *Metrics
	none.PolicyApplied("OverridePolicy", "x", "y") // a nil *Metrics records nothing
}
