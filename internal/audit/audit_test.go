package audit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/kinds/policy"
	"github.com/modwright/modwright/internal/source"
)

const rulesText = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
  annotations: {policies.kyverno.io/severity: medium, policies.kyverno.io/category: Best Practices}
spec:
  validationFailureAction: Enforce
  rules:
  - name: team
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "label team is required"
      pattern: {metadata: {labels: {team: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: admission-only}
spec:
  background: false
  rules:
  - name: creator
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      deny: {conditions: {any: [{key: "{{ request.userInfo.username }}", operator: Equals, value: ""}]}}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: no-latest, namespace: shop}
spec:
  type: Reject
  rejectMessage: "no :latest images"
  match:
  - select: '$.spec.containers[*].image'
    matchRegex: ':latest$'
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: add-label, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch: [{op: add, path: /metadata/labels/x, value: "z"}]
---
apiVersion: modwright.io/v1alpha1
kind: ModwrightPolicy
metadata: {name: one-container, namespace: shop}
spec:
  match: {resources: [{apiGroups: [""], kinds: [Pod]}]}
  validationActions: [Audit]
  validations:
  - cel: "object.spec.containers.size() == 1"
    message: "one container"
`

func scanner(t testing.TB) *audit.Scanner {
	t.Helper()
	docs, err := source.ParseManifest("rules.yaml", []byte(rulesText))
	if err != nil {
		t.Fatal(err)
	}
	reg := kinds.NewRegistry(append(append(kyverno.NewKinds(), policy.NewKinds()...), modrule.NewKind("modwright-system"))...)
	res := source.LoadRules(docs, reg)
	if len(res.Errors) > 0 {
		t.Fatal(errors.Join(res.Errors...))
	}
	for _, r := range res.Rules {
		if err := r.Info().Err; err != nil {
			t.Fatal(err)
		}
	}
	return audit.NewScanner(engine.NewSnapshot(res.Rules), engine.Options{})
}

func pod(name string, labels map[string]any, images ...string) map[string]any {
	cs := make([]any, len(images))
	for i, im := range images {
		cs[i] = map[string]any{"name": fmt.Sprint("c", i), "image": im}
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "shop", "uid": "u-" + name, "labels": labels},
		"spec":     map[string]any{"containers": cs}}
}

// TestScan: every validating rule of every kind that applies reports, as
// a background scan: Kyverno's rules by name with the policy's severity
// and category (a background: false policy not at all), a ModRule Reject
// by its rejection (a ModRule that does not match reports nothing: its
// match is its condition), a ModwrightPolicy under the Audit action by its
// failed validations; a mutating rule does not report.
func TestScan(t *testing.T) {
	s := scanner(t)
	type row struct{ Policy, Rule, Result, Message, Severity string }
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want []row
	}{
		{"compliant", pod("ok", map[string]any{"team": "a"}, "nginx:1.27"), []row{
			{"require-team", "team", "pass", "validation rule 'team' passed.", "medium"},
			{"shop/one-container", "one-container", "pass", "", ""},
		}},
		{"violating", pod("bad", map[string]any{}, "nginx:latest", "sidecar:1"), []row{
			{"require-team", "team", "fail", "validation error: label team is required. rule team failed at path /metadata/labels/team/", "medium"},
			{"shop/no-latest", "no-latest", "fail", "no :latest images", ""},
			{"shop/one-container", "one-container", "fail", "spec.validations[0]: one container", ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Scan(context.Background(), tc.obj, "shop")
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			for _, r := range res {
				if r.Resource != (audit.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: tc.obj["metadata"].(map[string]any)["name"].(string), UID: "u-" + tc.obj["metadata"].(map[string]any)["name"].(string)}) {
					t.Errorf("resource %+v", r.Resource)
				}
				got = append(got, row{r.Policy, r.Rule, string(r.Result), r.Message, r.Severity})
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestReportCap: a capped report keeps the most pressing results, in
// order, and counts every result in its summary, saying it is truncated.
func TestReportCap(t *testing.T) {
	rp := audit.NewReport(3)
	add := func(ns, name string, st audit.Status) {
		rp.Add(audit.Result{Policy: "p", Rule: "r", Kind: "ModRule", Result: st, Resource: audit.Resource{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name}})
	}
	for i := range 5 {
		add("a", fmt.Sprint("pass-", i), audit.Pass)
	}
	add("a", "warned", audit.Warn)
	add("a", "failed-2", audit.Fail)
	add("a", "failed-1", audit.Fail)
	add("b", "only", audit.Pass)
	add("", "node", audit.Error)
	objs := rp.Objects(time.Unix(100, 0))
	if len(objs) != 3 || objs[0]["kind"] != "ClusterPolicyReport" || objs[1]["kind"] != "PolicyReport" {
		t.Fatalf("reports: %v", objs)
	}
	a := objs[1]
	var names []string
	for _, r := range a["results"].([]any) {
		res := r.(map[string]any)
		names = append(names, res["resources"].([]any)[0].(map[string]any)["name"].(string)+"="+res["result"].(string))
	}
	if d := cmp.Diff([]string{"failed-1=fail", "failed-2=fail", "warned=warn"}, names); d != "" {
		t.Errorf("kept (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"pass": int64(5), "fail": int64(2), "warn": int64(1), "error": int64(0), "skip": int64(0)}, a["summary"]); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	md := a["metadata"].(map[string]any)
	if md["namespace"] != "a" || md["name"] != audit.ReportName || md["annotations"].(map[string]any)[audit.AnnotationResults] != "8" {
		t.Errorf("metadata: %v", md)
	}
	if _, truncated := objs[2]["metadata"].(map[string]any)["annotations"]; truncated {
		t.Errorf("an uncapped report says it is truncated: %v", objs[2]["metadata"])
	}
	if d := cmp.Diff(map[audit.Status]int{audit.Pass: 6, audit.Fail: 2, audit.Warn: 1, audit.Error: 1}, rp.Summary()); d != "" {
		t.Errorf("total summary (-want +got):\n%s", d)
	}
}

// TestReportMessageBound: a result's message an object made large is cut
// in the report (its text could otherwise push a report past etcd's
// limit), on a rune boundary.
func TestReportMessageBound(t *testing.T) {
	rp := audit.NewReport(1)
	long := strings.Repeat("é", audit.MaxMessageBytes) // 2 bytes each
	rp.Add(audit.Result{Policy: "p", Rule: "r", Result: audit.Fail, Message: long, Resource: audit.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "a", Name: "x"}})
	msg := rp.Objects(time.Unix(0, 0))[0]["results"].([]any)[0].(map[string]any)["message"].(string)
	if len(msg) > audit.MaxMessageBytes+len("... (truncated)") || !strings.HasSuffix(msg, "... (truncated)") || !utf8.ValidString(msg) {
		t.Errorf("message of %d bytes (valid UTF-8: %v): %.40q...", len(msg), utf8.ValidString(msg), msg)
	}
}

// TestReportShared: kept results share what they repeat without mixing
// up what they do not (past the shared values' bound too: each result's
// own policy and message), and a result that is not kept allocates
// nothing.
func TestReportShared(t *testing.T) {
	const n = 5000 // over the shared values' bound
	rp := audit.NewReport(n)
	for i := range n {
		rp.Add(audit.Result{Policy: fmt.Sprint("p", i), Rule: "r", Kind: "ModRule", Result: audit.Fail, Message: fmt.Sprint("m", i),
			Resource: audit.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "a", Name: fmt.Sprint("o", i), UID: fmt.Sprint("u", i)}})
	}
	results := rp.Objects(time.Unix(0, 0))[0]["results"].([]any)
	if len(results) != n {
		t.Fatalf("%d results kept, want %d", len(results), n)
	}
	for _, r := range results {
		res := r.(map[string]any)
		i := strings.TrimPrefix(res["policy"].(string), "p")
		ref := res["resources"].([]any)[0].(map[string]any)
		if res["message"] != "m"+i || ref["name"] != "o"+i || ref["uid"] != "u"+i || ref["kind"] != "Pod" || res["result"] != "fail" {
			t.Fatalf("result of p%s: %v", i, res)
		}
	}

	rp = audit.NewReport(10)
	fail := audit.Result{Policy: "p", Rule: "r", Kind: "ModRule", Result: audit.Fail, Message: "missing label team",
		Resource: audit.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "a", Name: "x"}}
	for range 10 {
		rp.Add(fail)
	}
	pass := fail
	pass.Result, pass.Message = audit.Pass, ""
	if allocs := testing.AllocsPerRun(100, func() { rp.Add(pass) }); allocs != 0 {
		t.Errorf("a result not kept allocated %v times, want 0", allocs)
	}
}
