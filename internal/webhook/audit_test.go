package webhook

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
)

func TestAuditAnnotations(t *testing.T) {
	long := strings.Repeat("n", 80)
	got := auditAnnotations([]engine.AuditAnnotation{
		{Kind: "Policy", Rule: "team/p", Key: "replicas", Value: "3"},
		{Kind: "Policy", Rule: "team/p", Key: "validation_failure", Value: `{"i":0}`},
		{Kind: "Policy", Rule: "team/p", Key: "validation_failure", Value: `{"i":1}`},
		{Kind: "Policy", Rule: "team/p", Key: "validation_failure", Value: `{"i":2}`},
		{Kind: "ClusterPolicy", Rule: long, Key: "replicas", Value: "4"},
	})
	var longKey string
	for k := range got {
		if strings.HasPrefix(k, "clusterpolicy.") {
			longKey = k
		}
	}
	if len(longKey) != maxAuditKey || !strings.HasSuffix(longKey, ".replicas") {
		t.Errorf("long key %q (%d bytes), want %d bytes ending in .replicas", longKey, len(longKey), maxAuditKey)
	}
	want := map[string]string{
		"policy.team.p.replicas":           "3",
		"policy.team.p.validation_failure": `[{"i":0},{"i":1},{"i":2}]`,
		longKey:                            "4",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}
