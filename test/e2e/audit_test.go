package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/cli"
)

// TestBackgroundScan runs the operator's background scan (--audit) on the
// real API server: objects created before the rule; the rule added;
// reports appear with the right results, the rule's status counts its
// violations; fixing an object flips its
// result (the watches see it, long before the next full scan); a cap truncates with an exact summary; of two replicas only the
// leader scans; deleting the rule removes its results; the cluster's own
// ValidatingAdmissionPolicies are audited too.
func TestBackgroundScan(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	// What the chart grants with kyverno.enabled and audit.enabled.
	grant(t, c, "modwright-kyverno", kyvernoRules...)
	grant(t, c, "modwright-audit",
		rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"wgpolicyk8s.io"}, Resources: []string{"policyreports", "clusterpolicyreports"}, Verbs: []string{"get", "list", "create", "update", "delete"}})
	pod := func(ns, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	}
	// The objects exist before the rule (and before the operator).
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("audit-a")})
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "audit-b", Labels: map[string]string{"tier": "batch"}}})
	create(t, c, pod("audit-a", "good", map[string]string{"team": "x"}))
	create(t, c, pod("audit-a", "bad", nil))
	for i := range 3 {
		create(t, c, pod("audit-b", "bad-"+strconv.Itoa(i), nil))
	}
	// The cluster's own admission policy, which the API server enforces
	// (here: records) and never audits, bound to the namespaces labelled
	// vap=on.
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vap-c", Labels: map[string]string{"vap": "on"}}})
	create(t, c, pod("vap-c", "c-1", nil))
	for _, doc := range []string{`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap-pods-need-team}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: pods need the label team
`, `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vap-pods-need-team}
spec:
  policyName: vap-pods-need-team
  validationActions: [Audit]
  matchResources:
    namespaceSelector: {matchLabels: {vap: "on"}}
`} {
		create(t, c, kinitirasPolicy(t, doc))
	}

	// An hour between full scans: a change is seen by the watches.
	args := []string{"--kyverno", "--audit", "--audit-interval", "1h", "--audit-max-results-per-report", "2"}
	a := cl.startOperator(t, "a", args...)
	a.waitReady(t)
	cl.lb.add(a.webhook)
	b := cl.startOperator(t, "b", args...)
	b.waitReady(t)

	policy := kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
  annotations: {policies.kyverno.io/severity: medium}
spec:
  validationFailureAction: Audit
  rules:
  - name: team-label
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: ["audit-*"]
    validate:
      message: "the label team is required"
      pattern:
        metadata:
          labels:
            team: "?*"
`)
	create(t, c, policy)

	dyn, err := dynamic.NewForConfig(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	reports := dyn.Resource(schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"})
	summary := func(ns string) (string, *unstructured.Unstructured) {
		r, err := reports.Namespace(ns).Get(ctx, "modwright-audit", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "none", nil
		}
		if err != nil {
			t.Fatal(err)
		}
		s, _, _ := unstructured.NestedMap(r.Object, "summary")
		res, _, _ := unstructured.NestedSlice(r.Object, "results")
		return fmt.Sprintf("fail=%v pass=%v results=%d", s["fail"], s["pass"], len(res)), r
	}
	waitSummary := func(ns, want string) *unstructured.Unstructured {
		t.Helper()
		var r *unstructured.Unstructured
		eventually(t, 60*time.Second, func() error {
			var got string
			if got, r = summary(ns); got != want {
				return fmt.Errorf("report of %s: %s, want %s", ns, got, want)
			}
			return nil
		})
		return r
	}

	t.Run("reports appear with the results", func(t *testing.T) {
		r := waitSummary("audit-a", "fail=1 pass=1 results=2")
		res, _, _ := unstructured.NestedSlice(r.Object, "results")
		first := res[0].(map[string]any)
		if first["result"] != "fail" || first["policy"] != "require-team" || first["rule"] != "team-label" || first["severity"] != "medium" ||
			!strings.Contains(fmt.Sprint(first["message"]), "the label team is required") {
			t.Errorf("first result: %v", first)
		}
	})

	t.Run("the rule's status counts its violations", func(t *testing.T) {
		eventually(t, 60*time.Second, func() error {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(policy.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(policy), got); err != nil {
				return err
			}
			n, _, _ := unstructured.NestedInt64(got.Object, "status", "totalViolations")
			at, _, _ := unstructured.NestedString(got.Object, "status", "auditTimestamp")
			if n != 4 || at == "" {
				return fmt.Errorf("status.totalViolations %d, auditTimestamp %q; want 4 (1 in audit-a, 3 in audit-b) and a time", n, at)
			}
			return nil
		})
	})

	t.Run("the cluster's admission policies are audited", func(t *testing.T) {
		r := waitSummary("vap-c", "fail=1 pass=0 results=1")
		res, _, _ := unstructured.NestedSlice(r.Object, "results")
		first := res[0].(map[string]any)
		if first["policy"] != "vap-pods-need-team" || !strings.Contains(fmt.Sprint(first["message"]), "pods need the label team") {
			t.Errorf("result: %v", first)
		}
	})

	t.Run("an admission policy added is audited at once", func(t *testing.T) {
		for _, doc := range []string{`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap-pods-need-owner}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels"
    message: pods need the label owner
`, `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vap-pods-need-owner}
spec:
  policyName: vap-pods-need-owner
  validationActions: [Audit]
  matchResources:
    namespaceSelector: {matchLabels: {vap: "on"}}
`} {
			create(t, c, kinitirasPolicy(t, doc))
		}
		waitSummary("vap-c", "fail=2 pass=0 results=2")
	})

	t.Run("modwright audit --kubeconfig reads the cluster", func(t *testing.T) {
		rules := filepath.Join(t.TempDir(), "policy.yaml")
		data, err := yaml.Marshal(policy.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(rules, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := cli.ExecuteContext(ctx, []string{"audit", "--rules", rules, "--kubeconfig", cl.kubeconfig}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if code != 1 || !strings.Contains(out.String(), "Pod audit-a/bad") || !strings.Contains(out.String(), "Pod audit-b/bad-2") ||
			!strings.Contains(errOut.String(), "5 results: 4 fail, 0 error, 0 warn, 0 skip, 1 pass") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
	})

	t.Run("modwright audit --kubeconfig: rules read the cluster's context", func(t *testing.T) {
		// The Namespace (namespaceObject) and a ConfigMap (Kyverno's
		// resource library) read from the cluster, no --context given.
		teams := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "teams", Namespace: "audit-a"}, Data: map[string]string{"allowed": "payments,search"}}
		create(t, c, teams)
		rules := filepath.Join(t.TempDir(), "vpol.yaml")
		if err := os.WriteFile(rules, []byte(`apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: known-teams}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  variables:
  - name: allowed
    expression: "resource.Get('v1', 'configmaps', 'audit-a', 'teams').data.allowed.split(',')"
  validations:
  - expression: "namespaceObject.metadata.?labels.tier.orValue('') != 'batch' || object.metadata.?labels.team.orValue('') in variables.allowed"
    message: pods of batch namespaces name a known team
`), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := cli.ExecuteContext(ctx, []string{"audit", "--rules", rules, "--kubeconfig", cl.kubeconfig}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if code != 1 || !strings.Contains(out.String(), "pods of batch namespaces name a known team") || !strings.Contains(out.String(), "Pod audit-b/bad-2") ||
			strings.Contains(out.String(), "Pod audit-a/") || !strings.Contains(errOut.String(), " 0 error,") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
	})

	t.Run("modwright audit --kubeconfig audits Kubernetes' admission policies", func(t *testing.T) {
		// Bound to the namespaces labelled tier=batch: the cluster's
		// Namespaces are read for the selector.
		rules := filepath.Join(t.TempDir(), "vap.yaml")
		if err := os.WriteFile(rules, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: batch-pods-need-team}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: batch pods need the label team
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: batch-pods-need-team}
spec:
  policyName: batch-pods-need-team
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {tier: batch}}
`), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := cli.ExecuteContext(ctx, []string{"audit", "--rules", rules, "--kubeconfig", cl.kubeconfig, "-o", "json"}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
		var rep struct {
			Results []struct {
				Policy, Result, Message string
				Resource                struct{ Namespace, Name string }
			}
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("exit %d: %v\n%s\n%s", code, err, out.String(), errOut.String())
		}
		var got []string
		for _, r := range rep.Results {
			if r.Policy == "batch-pods-need-team" {
				got = append(got, r.Result+" "+r.Resource.Namespace+"/"+r.Resource.Name)
				if !strings.HasSuffix(r.Message, "denied request: batch pods need the label team") {
					t.Errorf("message %q", r.Message)
				}
			}
		}
		slices.Sort(got)
		want := []string{"fail audit-b/bad-0", "fail audit-b/bad-1", "fail audit-b/bad-2"}
		if code != 1 || !slices.Equal(got, want) {
			t.Errorf("exit %d, results %q, want %q\nstderr:\n%s", code, got, want, errOut.String())
		}
	})

	t.Run("a cap truncates with an exact summary", func(t *testing.T) {
		r := waitSummary("audit-b", "fail=3 pass=0 results=2")
		if r.GetAnnotations()["modwright.io/truncated"] != "true" || r.GetAnnotations()["modwright.io/results"] != "3" {
			t.Errorf("annotations: %v", r.GetAnnotations())
		}
	})

	t.Run("fixing an object flips its result", func(t *testing.T) {
		fixed := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "audit-a", Name: "bad"}, fixed); err != nil {
			t.Fatal(err)
		}
		fixed.Labels = map[string]string{"team": "y"}
		if err := c.Update(ctx, fixed); err != nil {
			t.Fatal(err)
		}
		waitSummary("audit-a", "fail=0 pass=2 results=2")
	})

	t.Run("only the leader scans", func(t *testing.T) {
		// The replicas share this process's metrics registry: their logs
		// tell them apart.
		sa, sb := strings.Count(a.log.String(), "background scan done"), strings.Count(b.log.String(), "background scan done")
		if (sa == 0) == (sb == 0) {
			t.Errorf("scans: a %d, b %d: want exactly one replica scanning", sa, sb)
		}
	})

	t.Run("deleting the rule removes its results", func(t *testing.T) {
		if err := c.Delete(ctx, policy); err != nil {
			t.Fatal(err)
		}
		waitSummary("audit-a", "none")
		waitSummary("audit-b", "none")
	})
}
