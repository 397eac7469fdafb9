package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.Review("dragnet", "CREATE", OutcomePatched, 3*time.Millisecond)
	m.Review("dragnet", "CREATE", OutcomePatched, time.Millisecond)
	m.Panic("dragnet")
	m.RuleError("ModRule", "ns/r")
	m.SnapshotBuild(time.Second, 2*time.Second, 0)
	m.SnapshotPublished(time.Unix(100, 0), 3, 0, []RuleRef{{Kind: "ModRule", Rule: "ns/bad"}})
	m.SnapshotPublished(time.Unix(200, 0), 4, 0, nil)
	m.SnapshotPublished(time.Unix(300, 0), 4, 1, []RuleRef{{Kind: "Policy", Rule: "ns/bad"}})
	want := `
# HELP modwright_admission_reviews_total Admission reviews answered, by webhook, operation and outcome (allowed, patched, denied, error, invalid).
# TYPE modwright_admission_reviews_total counter
modwright_admission_reviews_total{operation="CREATE",outcome="patched",webhook="dragnet"} 2
# HELP modwright_rule_broken 1 for every rule that does not compile (kept, reported, never applied), by kind and rule.
# TYPE modwright_rule_broken gauge
modwright_rule_broken{kind="Policy",rule="ns/bad"} 1
# HELP modwright_rule_evaluation_errors_total Rules that failed while being applied to an object (the rule was skipped for that object), by kind and rule.
# TYPE modwright_rule_evaluation_errors_total counter
modwright_rule_evaluation_errors_total{kind="ModRule",rule="ns/r"} 1
# HELP modwright_rules Rules of every kind in the serving snapshot, by state (ready, broken).
# TYPE modwright_rules gauge
modwright_rules{state="broken"} 2
modwright_rules{state="ready"} 4
# HELP modwright_snapshot_build_seconds Duration of the last snapshot build, by phase (read, compile, index).
# TYPE modwright_snapshot_build_seconds gauge
modwright_snapshot_build_seconds{phase="compile"} 2
modwright_snapshot_build_seconds{phase="read"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "modwright_admission_reviews_total", "modwright_rules", "modwright_snapshot_build_seconds", "modwright_rule_broken", "modwright_rule_evaluation_errors_total"); err != nil {
		t.Fatal(err)
	}
	var nilM *Metrics
	nilM.Review("x", "y", "z", 0) // must not panic
	nilM.SnapshotPublished(time.Now(), 0, 0, nil)
}
