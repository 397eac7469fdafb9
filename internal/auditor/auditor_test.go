package auditor_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/auditor"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/source"
)

const policy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  rules:
  - name: team
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "label team is required"
      pattern: {metadata: {labels: {team: "?*"}}}
`

var (
	pods     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	reports  = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	creports = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "clusterpolicyreports"}
)

type store struct{ p *engine.Snapshot }

func (s *store) Current() *engine.Snapshot { return s.p }

func snapshot(t *testing.T, text string) *engine.Snapshot {
	t.Helper()
	docs, err := source.ParseManifest("p.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, kinds.NewRegistry(kyverno.NewKinds()...))
	if len(res.Errors) > 0 {
		t.Fatal(errors.Join(res.Errors...))
	}
	return engine.NewSnapshot(res.Rules)
}

func pod(ns, name string, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels}, "spec": map[string]any{}}}
}

func fakeClients(objs ...runtime.Object) (*dynamicfake.FakeDynamicClient, *discoveryfake.FakeDiscovery) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		pods: "PodList", reports: "PolicyReportList", creports: "ClusterPolicyReportList",
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
	}, objs...)
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "list"}},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: []string{"get"}},
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get", "list"}},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: []string{"list"}},
		}},
	}
	return dyn, disc
}

// summaries are the reports' summaries, by namespace.
func summaries(t *testing.T, dyn *dynamicfake.FakeDynamicClient) map[string]string {
	t.Helper()
	list, err := dyn.Resource(reports).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range list.Items {
		s, _, _ := unstructured.NestedMap(r.Object, "summary")
		out[r.GetNamespace()] = fmt.Sprintf("fail=%v pass=%v", s["fail"], s["pass"])
	}
	return out
}

// TestScan: a scan writes a report per namespace with the results, an
// object fixed flips its result when its namespace is scanned again (only
// that namespace listed), an unchanged report is not written again, and
// with the rule gone the reports go.
func TestScan(t *testing.T) {
	dyn, disc := fakeClients(pod("a", "good", map[string]any{"team": "x"}), pod("a", "bad", nil), pod("b", "bad", nil))
	st := &store{p: snapshot(t, policy)}
	rec := &recorder{}
	// DuringScan brackets each scan: begun before the first list, ended
	// by the time Scan or Rescan returns.
	var begun, ended int
	during := func() func() {
		if len(dyn.Actions()) != 0 && begun == 0 {
			t.Error("DuringScan called after the scan listed objects")
		}
		begun++
		return func() { ended++ }
	}
	a := auditor.New(auditor.Options{Snapshots: st, Client: dyn, Discovery: disc, Store: &auditor.CRDStore{Client: dyn, Metadata: dynMeta{dyn}}, Log: logr.Discard(), Violations: rec,
		Now: func() time.Time { return time.Unix(1000, 0) }, DuringScan: during})
	ctx := context.Background()
	if err := a.Scan(ctx, st.p); err != nil {
		t.Fatal(err)
	}
	if begun != 1 || ended != 1 {
		t.Errorf("DuringScan begun %d and ended %d times by a scan, want 1 and 1", begun, ended)
	}
	if d := cmp.Diff(map[string]string{"a": "fail=1 pass=1", "b": "fail=1 pass=0"}, summaries(t, dyn)); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"kyverno.io ClusterPolicy require-team: 2 [Pod a/bad Pod b/bad]"}, countsOf(rec.counts)); d != "" {
		t.Errorf("violations (-want +got):\n%s", d)
	}
	// The fail results a count carries are capped; the count is exact.
	capped := &recorder{}
	if err := auditor.New(auditor.Options{Snapshots: st, Client: dyn, Discovery: disc, Store: &auditor.MemoryStore{}, Log: logr.Discard(), Violations: capped,
		MaxViolations: 1}).Scan(ctx, st.p); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"kyverno.io ClusterPolicy require-team: 2 [Pod a/bad]"}, countsOf(capped.counts)); d != "" {
		t.Errorf("violations capped at 1 (-want +got):\n%s", d)
	}
	for _, act := range dyn.Actions() {
		if act.GetResource().Resource == "events" || act.GetResource().Resource == "configmaps" {
			t.Errorf("listed %s, which no rule validates", act.GetResource().Resource)
		}
	}
	// Fix b/bad; a's report does not change and is not written again.
	if _, err := dyn.Resource(pods).Namespace("b").Update(ctx, pod("b", "bad", map[string]any{"team": "y"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn.ClearActions()
	if err := a.Rescan(ctx, []string{"b"}); err != nil { // as a watch's change of b starts it
		t.Fatal(err)
	}
	if begun != 2 || ended != 2 {
		t.Errorf("DuringScan begun %d and ended %d times after a rescan, want 2 and 2", begun, ended)
	}
	if d := cmp.Diff(map[string]string{"a": "fail=1 pass=1", "b": "fail=0 pass=1"}, summaries(t, dyn)); d != "" {
		t.Fatalf("after the fix (-want +got):\n%s", d)
	}
	var writes []string
	for _, act := range dyn.Actions() {
		if v := act.GetVerb(); v == "update" || v == "create" || v == "delete" {
			writes = append(writes, v+" "+act.GetNamespace()+"/"+act.GetResource().Resource)
		}
	}
	if d := cmp.Diff([]string{"update b/policyreports"}, writes); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}
	for _, act := range dyn.Actions() {
		if act.GetVerb() == "list" && act.GetNamespace() != "b" && act.GetResource().Group != "wgpolicyk8s.io" {
			t.Errorf("the rescan of b listed %s in %q", act.GetResource().Resource, act.GetNamespace())
		}
	}
	if rec.counts[0].Fails != 1 {
		t.Errorf("violations after the rescan: %+v, want 1", rec.counts)
	}
	// No rule: no results, no reports.
	st.p = engine.NewSnapshot(nil)
	if err := a.Scan(ctx, st.p); err != nil {
		t.Fatal(err)
	}
	if got := summaries(t, dyn); len(got) != 0 {
		t.Errorf("reports left without rules: %v", got)
	}
}

// TestWalkAdmissionPolicies: Kubernetes' admission policies audit the
// objects of the resources their match names (no rule of the snapshot
// needs them listed), each object once; the others are not listed.
func TestWalkAdmissionPolicies(t *testing.T) {
	cm := func(name string, data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "a"}, "data": data}}
	}
	dyn, disc := fakeClients(cm("small", map[string]any{"k": "v"}), cm("empty", nil), pod("a", "p", nil))
	set := admissionpolicy.NewSet()
	docs, err := source.ParseManifest("vap.yaml", []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: data-required}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - {expression: "has(object.data)", message: data is required}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: data-required}
spec: {policyName: data-required, validationActions: [Deny]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := set.Add(d.Object); err != nil {
			t.Fatal(err)
		}
	}
	vaps, err := audit.NewAdmissionPolicies(set, nil, "default")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	w, err := auditor.New(auditor.Options{Client: dyn, Discovery: disc, Policies: vaps, Log: logr.Discard()}).Walk(context.Background(), engine.NewSnapshot(nil), func(rs []audit.Result) {
		for _, r := range rs {
			got = append(got, fmt.Sprintf("%s %s %s: %s", r.Policy, r.Result, r.Resource, r.Message))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`data-required fail ConfigMap a/empty: configmaps "empty" is forbidden: ValidatingAdmissionPolicy 'data-required' with binding 'data-required' denied request: data is required`}, got); d != "" || w.Objects != 2 {
		t.Errorf("%d objects; results (-want +got):\n%s", w.Objects, d)
	}
	for _, act := range dyn.Actions() {
		if act.GetResource().Resource == "pods" {
			t.Error("listed pods, which no policy matches")
		}
	}
}

// TestMemoryStore: reports kept out of etcd are served as a List.
func TestMemoryStore(t *testing.T) {
	dyn, disc := fakeClients(pod("a", "bad", nil), pod("b", "bad", nil))
	mem := &auditor.MemoryStore{}
	st := &store{p: snapshot(t, policy)}
	a := auditor.New(auditor.Options{Snapshots: st, Client: dyn, Discovery: disc, Store: mem, Log: logr.Discard()})
	if err := a.Scan(context.Background(), st.p); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	mem.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, auditor.MemoryPath+"?namespace=b", nil))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `"kind":"List"`) || !strings.Contains(body, `"namespace":"b"`) || strings.Contains(body, `"namespace":"a"`) {
		t.Errorf("%d %s", rec.Code, body)
	}
	for _, act := range dyn.Actions() {
		if act.GetResource().Group == "wgpolicyk8s.io" {
			t.Errorf("a memory store wrote to the API server: %v", act)
		}
	}
}

// dynMeta reads metadata through the fake dynamic client (whose objects
// the store writes).
type dynMeta struct {
	c *dynamicfake.FakeDynamicClient
}

func (d dynMeta) GetMeta(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (metav1.Object, error) {
	return d.c.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
}

func (d dynMeta) ListMeta(ctx context.Context, gvr schema.GroupVersionResource, selector string) ([]metav1.Object, error) {
	list, err := d.c.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// recorder keeps the last counts it was given.
type recorder struct{ counts []auditor.RuleCount }

func (r *recorder) Record(_ context.Context, counts []auditor.RuleCount, _ time.Time) error {
	r.counts = counts
	return nil
}

// TestWatch: after a scan, a change of an object marks its namespace for a
// rescan, which Start then makes (the report of b rewritten without a full
// scan); a watch whose resourceVersion expired asks for a full scan.
func TestWatch(t *testing.T) {
	dyn, disc := fakeClients(pod("a", "good", map[string]any{"team": "x"}), pod("b", "bad", nil))
	st := &store{p: snapshot(t, policy)}
	var watched []*watch.FakeWatcher
	var mu sync.Mutex
	latest := func() *watch.FakeWatcher { mu.Lock(); defer mu.Unlock(); return watched[len(watched)-1] }
	a := auditor.New(auditor.Options{Snapshots: st, Client: dyn, Discovery: disc, Store: &auditor.CRDStore{Client: dyn, Metadata: dynMeta{dyn}},
		Log: logr.Discard(), Poll: 10 * time.Millisecond, Settle: time.Millisecond, Interval: time.Hour,
		Watch: func(_ context.Context, gvr schema.GroupVersionResource, rv string) (watch.Interface, error) {
			mu.Lock()
			defer mu.Unlock()
			if gvr.Resource != "pods" || rv == "" {
				t.Errorf("watch of %s from %q, want pods from the list's resourceVersion", gvr.Resource, rv)
			}
			fw := watch.NewFake()
			watched = append(watched, fw)
			return fw, nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = a.Start(ctx) }()
	wait := func(what string, ok func() bool) {
		t.Helper()
		for range 500 {
			if ok() {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	wait("the first scan's reports", func() bool { return len(summaries(t, dyn)) == 2 })
	wait("the watch", func() bool { mu.Lock(); defer mu.Unlock(); return len(watched) == 1 })
	if _, err := dyn.Resource(pods).Namespace("b").Update(ctx, pod("b", "bad", map[string]any{"team": "y"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := pod("b", "bad", nil)
	changed.SetResourceVersion("7")
	latest().Modify(changed)
	wait("b's report to flip", func() bool { return summaries(t, dyn)["b"] == "fail=0 pass=1" })
	// An expired resourceVersion: a full scan, and a new watch.
	latest().Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired})
	wait("a new watch after the full scan", func() bool { mu.Lock(); defer mu.Unlock(); return len(watched) >= 2 })
}

// countsOf describes counts: "group kind key: fails [violations]".
func countsOf(counts []auditor.RuleCount) []string {
	var out []string
	for _, c := range counts {
		var vs []string
		for _, v := range c.Violations {
			vs = append(vs, v.Resource.Kind+" "+v.Resource.Namespace+"/"+v.Resource.Name)
		}
		out = append(out, fmt.Sprintf("%s %s %s: %d [%s]", c.Group, c.Kind, c.Key, c.Fails, strings.Join(vs, " ")))
	}
	return out
}

// countingMeta is Metadata that counts the reads in flight (each takes a
// while: the API server's), and fails those of namespace failIn.
type countingMeta struct {
	auditor.Metadata
	failIn   string
	mu       sync.Mutex
	inflight int
	most     int
}

func (m *countingMeta) GetMeta(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (metav1.Object, error) {
	m.mu.Lock()
	m.inflight++
	m.most = max(m.most, m.inflight)
	m.mu.Unlock()
	time.Sleep(50 * time.Millisecond) // long enough for the others to start, when they may
	m.mu.Lock()
	m.inflight--
	m.mu.Unlock()
	if namespace == m.failIn {
		return nil, errors.New("refused")
	}
	return m.Metadata.GetMeta(ctx, gvr, namespace, name)
}

// TestCRDStoreWriters: reports are written Writers at a time (the API
// server validates each on a core of its own), every one of them, and a
// write that fails fails the whole.
func TestCRDStoreWriters(t *testing.T) {
	rp := audit.NewReport(0)
	nss := []string{"a", "b", "c", "d", "e", "f"}
	for _, ns := range nss {
		rp.Add(audit.Result{Policy: "p", Kind: "ClusterPolicy", Rule: "r", Result: audit.Fail,
			Resource: audit.Resource{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "x"}})
	}
	for _, tt := range []struct {
		writers, want int
		failIn        string
	}{
		{1, 1, ""},
		{3, 3, ""},
		{0, auditor.DefaultWriters, ""},
		{3, 0, "d"},
	} {
		t.Run(fmt.Sprintf("writers=%d fail=%q", tt.writers, tt.failIn), func(t *testing.T) {
			dyn, _ := fakeClients()
			meta := &countingMeta{Metadata: dynMeta{dyn}, failIn: tt.failIn}
			err := (&auditor.CRDStore{Client: dyn, Metadata: meta, Writers: tt.writers}).Write(context.Background(), rp, time.Unix(1000, 0))
			if tt.failIn != "" {
				if err == nil || !strings.Contains(err.Error(), "refused") {
					t.Fatalf("Write: %v, want the failed write's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if meta.most != tt.want {
				t.Errorf("%d reports written at once at most, want %d", meta.most, tt.want)
			}
			if got := summaries(t, dyn); len(got) != len(nss) {
				t.Errorf("reports written: %v, want one in each of %v", got, nss)
			}
		})
	}
}

// TestViolationMessageCut: a rule's message quoting the object (here an
// annotation of 5,000 bytes) is cut in the violations a count carries, as
// in the reports.
func TestViolationMessageCut(t *testing.T) {
	quoting := strings.Replace(policy, `message: "label team is required"`, `message: "{{ request.object.metadata.annotations.note }}"`, 1)
	bad := pod("a", "bad", nil)
	bad.SetAnnotations(map[string]string{"note": strings.Repeat("x", 5000)})
	dyn, disc := fakeClients(bad)
	st := &store{p: snapshot(t, quoting)}
	rec := &recorder{}
	a := auditor.New(auditor.Options{Snapshots: st, Client: dyn, Discovery: disc, Store: &auditor.MemoryStore{}, Log: logr.Discard(), Violations: rec})
	if err := a.Scan(context.Background(), st.p); err != nil {
		t.Fatal(err)
	}
	if len(rec.counts) != 1 || len(rec.counts[0].Violations) != 1 {
		t.Fatalf("counts %+v, want one violation", rec.counts)
	}
	msg := rec.counts[0].Violations[0].Message
	if len(msg) > audit.MaxMessageBytes+len("... (truncated)") || !strings.HasSuffix(msg, "... (truncated)") || !strings.Contains(msg, "xxxx") {
		t.Errorf("violation message of %d bytes: %.60q...", len(msg), msg)
	}
}
