package runner_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// quotaKind is the worked example of docs/architecture.md ("Adding a rule
// kind"), kept compiling and working here: a kind of its own, loaded by
// the same source, evaluated by the same kernel beside ModRules, and
// served by the same webhook handler.
type quotaKind struct{}

func (quotaKind) Name() string       { return "Quota" }
func (quotaKind) Group() string      { return "quota.example.io" }
func (quotaKind) Versions() []string { return []string{"v1"} }

func (quotaKind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	max, ok := value.Lookup(m.Object, "spec", "maxLabels")
	n, err := strconv.Atoi(fmt.Sprint(max))
	r := &quotaRule{info: engine.RuleInfo{Kind: "Quota", Key: m.Key(), Namespace: m.Namespace(), Name: m.Name(),
		Phase: engine.Validate, Index: engine.IndexKeys{Namespace: m.Namespace(),
			Operations: engine.OpSetOf(rules.Create, rules.Update)}}, max: n}
	if !ok || err != nil {
		r.info.Err = &rules.CompileError{Kind: "Quota", Rule: m.Key(),
			Errors: []rules.FieldError{{Field: "spec.maxLabels", Pos: -1, Msg: "must be an integer"}}}
		return r, r.info.Err
	}
	return r, nil
}

type quotaRule struct {
	info engine.RuleInfo
	max  int
}

var (
	_ kinds.Kind  = quotaKind{}
	_ engine.Rule = (*quotaRule)(nil)
)

func (r *quotaRule) Info() *engine.RuleInfo { return &r.info }
func (r *quotaRule) InScope(string) bool    { return true }
func (r *quotaRule) Match(h *engine.Handle) (bool, error) {
	labels, _ := value.Lookup(h.Object(), "metadata", "labels")
	m, _ := labels.(map[string]any)
	return len(m) > r.max, nil
}
func (r *quotaRule) Apply(h *engine.Handle) error {
	h.Reject(fmt.Sprintf("more than %d labels", r.max), nil)
	return nil
}

const twoKinds = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: label, namespace: ns}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch: [{op: add, path: /metadata/labels/team, value: web}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: no-latest, namespace: ns}
spec:
  type: Reject
  match: [{select: '$.spec.containers[*].image', matchRegex: ':latest$'}]
  rejectMessage: no latest
---
apiVersion: quota.example.io/v1
kind: Quota
metadata: {name: two, namespace: ns}
spec: {maxLabels: 2}
---
apiVersion: quota.example.io/v1
kind: Quota
metadata: {name: broken, namespace: ns}
spec: {maxLabels: many}
`

// TestAKindOfItsOwn: the ModRule mutation runs first, so the Quota sees
// three labels; the denial lists the rejecting rules of both kinds; the
// broken Quota is kept with its positioned error and never evaluated; the
// Engine and Webhook drivers agree.
func TestAKindOfItsOwn(t *testing.T) {
	docs, err := source.ParseManifest("rules.yaml", []byte(twoKinds))
	if err != nil {
		t.Fatal(err)
	}
	reg := kinds.NewRegistry(modrule.NewKind(""), quotaKind{})
	res := source.LoadRules(docs, reg)
	if len(res.Errors) != 1 || len(res.Rules) != 4 {
		t.Fatalf("rules %d, errors %v", len(res.Rules), res.Errors)
	}
	if want := "rules.yaml:26:19: Quota ns/broken: spec.maxLabels: must be an integer"; res.Errors[0].Error() != want {
		t.Errorf("error %q, want %q", res.Errors[0], want)
	}
	snap := engine.NewSnapshot(res.Rules)
	if len(snap.Broken()) != 1 || snap.Broken()[0].Info().Key != "ns/broken" {
		t.Fatalf("broken: %v", snap.Broken())
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "labels": map[string]any{"a": "1", "b": "2"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:latest"}}}}
	want := `operation rejected by the following ModRule(s): ns/no-latest: "no latest"; operation rejected by the following Quota(s): ns/two: "more than 2 labels"`
	var results []*runner.Result
	for _, d := range []runner.Driver{runner.NewEngine(snap, nil), runner.NewWebhook(snap, nil)} {
		r, err := d.Run(context.Background(), runner.Request{Operation: rules.Create, Namespace: "ns", Object: pod})
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed || r.Denial != want {
			t.Errorf("%T: allowed %v, denial %q, want %q", d, r.Allowed, r.Denial, want)
		}
		results = append(results, r)
	}
	if diff := runner.Diff(results[0], results[1]); diff != "" {
		t.Errorf("the drivers disagree: %s", diff)
	}
	delete(pod["metadata"].(map[string]any)["labels"].(map[string]any), "b")
	pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = "nginx:1"
	r, err := runner.NewWebhook(snap, nil).Run(context.Background(), runner.Request{Operation: rules.Create, Namespace: "ns", Object: pod})
	if err != nil || !r.Allowed {
		t.Fatalf("admitted %v, err %v, denial %q", r != nil && r.Allowed, err, r.Denial)
	}
}
