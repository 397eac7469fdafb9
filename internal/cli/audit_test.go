package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestAuditPolicyReport: -o policyreport writes one capped report per
// namespace, the most pressing results kept, the summary exact, the cap
// said in its annotations, every result stamped with the run's time.
func TestAuditPolicyReport(t *testing.T) {
	var out, errOut bytes.Buffer
	o := &auditOptions{rules: []string{"../../examples/kyverno/require-team.yaml"}, files: []string{"../../examples/kyverno/resources.yaml"},
		namespace: "default", clusterRules: defaultClusterRulesNamespace, output: "policyreport", maxResults: 2,
		now: func() time.Time { return time.Unix(1700000000, 0) }}
	err := runAudit(context.Background(), o, Streams{Out: &out, Err: &errOut})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Fatalf("err = %v, want exit 1 (results fail)", err)
	}
	var rep struct {
		Kind     string
		Metadata struct {
			Namespace   string
			Annotations map[string]string
		}
		Summary map[string]int
		Results []struct {
			Rule, Result string
			Timestamp    struct{ Seconds int64 }
		}
	}
	if err := yaml.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "PolicyReport" || rep.Metadata.Namespace != "default" || rep.Metadata.Annotations["modwright.io/truncated"] != "true" || rep.Metadata.Annotations["modwright.io/results"] != "12" {
		t.Errorf("report: %+v", rep)
	}
	if rep.Summary["fail"] != 4 || rep.Summary["pass"] != 8 || len(rep.Results) != 2 {
		t.Errorf("summary %v with %d results, want 4 fail, 8 pass, 2 kept", rep.Summary, len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Result != "fail" || r.Timestamp.Seconds != 1700000000 {
			t.Errorf("kept %+v, want fails stamped with the run's time", r)
		}
	}
	if !strings.Contains(errOut.String(), "audit: 4 objects, 1 rule: 12 results: 4 fail, 0 error, 0 warn, 0 skip, 8 pass\n") {
		t.Errorf("summary line: %q", errOut.String())
	}
}

// TestAuditUsage: bad flags exit 2 before anything is read.
func TestAuditUsage(t *testing.T) {
	for _, tc := range []struct {
		o    auditOptions
		want string
	}{
		{auditOptions{output: "wide", maxResults: 1}, "--output must be table, json, yaml or policyreport"},
		{auditOptions{output: "table", maxResults: 0}, "--max-results-per-report must be positive"},
	} {
		err := runAudit(context.Background(), &tc.o, Streams{})
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want exit 2: %s", err, tc.want)
		}
	}
}
