package modrule_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
)

// deepObject is a ConfigMap holding arrays nested depth levels ([[[...]]]):
// 2,000 levels are a 4 KB object.
func deepObject(depth int) map[string]any {
	var v any = []any{}
	for i := 1; i < depth; i++ {
		v = []any{v}
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "deep", "namespace": "ns1"},
		"x":        v,
	}
}

const deepReject = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: deep-reject, namespace: ns1}
spec:
  type: Reject
  match:
    - select: '$..*..*'
      matchValue: forbidden
`

// bigText is a ConfigMap whose items are 100 copies of a 1 MiB string
// (shared: the object is small in memory, its values' text is 100 MiB).
func bigText() map[string]any {
	items := make([]any, 100)
	s := strings.Repeat("a", 1<<20)
	for i := range items {
		items[i] = s
	}
	return map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "big"}, "items": items}
}

// TestRejectRuleHittingABoundIsUndecided: '$..*..*' on a 2,000-deep object
// (4 KB) selects 2 million values, quadratic in the depth: a Reject rule
// hitting a bound must not be skipped as if it had not matched (it answered
// allowed after 32.9 s turning the values into text), with or without
// negate, whatever the deadline; neither when its values' text exceeds
// MaxMatchText.
func TestRejectRuleHittingABoundIsUndecided(t *testing.T) {
	eng := engine.New(engine.Options{NoTrace: true})
	for _, tt := range []struct {
		name string
		rule string
		obj  map[string]any
		want error
	}{
		{"2,000 levels", deepReject, deepObject(2000), jsonpath.ErrTooManyValues},
		{"2,000 levels, negated", deepReject + "      negate: true\n", deepObject(2000), jsonpath.ErrTooManyValues},
		{"100 MiB of text", strings.Replace(deepReject, "'$..*..*'", "'$.items[*]'", 1), bigText(), modrule.ErrTooMuchText},
	} {
		snap := snapshotOf(t, tt.rule)
		req := engine.Request{Operation: rules.Create, Namespace: "ns1", Object: tt.obj}
		d, err := eng.Evaluate(context.Background(), snap, req)
		if !errors.Is(err, engine.ErrUndecided) || !errors.Is(err, tt.want) {
			t.Fatalf("%s: got %+v, %v; want an error wrapping ErrUndecided and %v", tt.name, d, err, tt.want)
		}
		var re engine.RuleError
		if !errors.As(err, &re) || re.Rule != "ns1/deep-reject" || !strings.HasPrefix(re.Field, "spec.match[0]") {
			t.Errorf("%s: the error does not name the rule and criterion: %#v", tt.name, err)
		}
		// With a short deadline: an error either way (the deadline or the
		// bound, whichever comes first), never an admission.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		d, err = eng.Evaluate(ctx, snap, req)
		cancel()
		if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, engine.ErrUndecided)) {
			t.Errorf("%s, 200 ms deadline: got %+v, %v", tt.name, d, err)
		}
	}
}

// TestPatchRuleHittingABoundFails: the same select in a Patch rule (which
// used 2.2 GB on a 2 KB object) fails that rule alone, atomically, by a bound
// on what the select may hold, and the other rules still run.
func TestPatchRuleHittingABoundFails(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: a-deep-patch, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch:
    - {op: add, path: /metadata/labels/first, value: x}
    - {op: add, select: '$..*..*', path: /metadata/labels/seen, value: 'yes'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: b-deep-match, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$..*..*', matchValue: x, negate: true}]
  patch: [{op: add, path: /metadata/labels/second, value: x}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: c-good, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch: [{op: add, path: /metadata/labels/third, value: x}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: d-reject, namespace: ns1}
spec:
  type: Reject
  match: [{select: '$.metadata.labels.third', matchValue: x}]
`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := evaluate(t, engine.New(engine.Options{}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: deepObject(1000)})
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("the evaluation allocated %d MB", got>>20)
	}
	if len(d.Errors) != 2 {
		t.Fatalf("errors: %v", d.Errors)
	}
	// Criteria are matched before operations are built: b fails first.
	for i, want := range []struct {
		rule, field string
		err         error
	}{
		{"ns1/b-deep-match", "spec.match[0].select", jsonpath.ErrTooManyValues},
		{"ns1/a-deep-patch", "spec.patch[1].select", jsonpath.ErrTooManyValues},
	} {
		if e := d.Errors[i]; e.Rule != want.rule || e.Field != want.field || !errors.Is(e, want.err) {
			t.Errorf("error %d: %v, want %s %s: %v", i, e, want.rule, want.field, want.err)
		}
	}
	labels := d.Object.(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	if _, ok := labels["first"]; ok || len(labels) != 1 || labels["third"] != "x" {
		t.Errorf("labels: %v", labels)
	}
	if d.Allowed() {
		t.Error("the Reject rule did not run")
	}
	if d.Trace[0].Outcome != engine.Failed || d.Trace[1].Outcome != engine.Failed {
		t.Errorf("outcomes %s, %s", d.Trace[0].Outcome, d.Trace[1].Outcome)
	}
}

// TestRenderedTextBound: a Patch rule whose operations write values of more
// than MaxRenderText bytes of text in all fails: templates rendering a big
// value for each of many selected elements, or a static value copied to
// each (a small object then makes the rule write a lot).
func TestRenderedTextBound(t *testing.T) {
	n := 1000
	big := strings.Repeat("b", modrule.MaxRenderText/n+1)
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: a-template, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch:
    - {op: replace, select: '$.items[*]', path: '/items/#0', value: '{{ .Target.data.blob | quote }}'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: b-static, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch:
    - {op: replace, select: '$.items[*]', path: '/items/#0', value: '`+big+`'}
`)
	items := make([]any, n)
	for i := range items {
		items[i] = "x"
	}
	obj := map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"blob": big}, "items": items}
	d := evaluate(t, engine.New(engine.Options{}), snap, engine.Request{Operation: rules.Create, Namespace: "ns1", Object: obj})
	if len(d.Errors) != 2 || d.Changed() {
		t.Fatalf("errors %v, patch %d ops", d.Errors, len(d.Patch))
	}
	for _, e := range d.Errors {
		if e.Field != "spec.patch[0].value" || !errors.Is(e, modrule.ErrTooMuchText) {
			t.Errorf("error %v", e)
		}
	}
}

// countingCtx is a context that counts the calls of Err and reports
// cancellation after limit of them (never, when limit < 0).
type countingCtx struct {
	context.Context
	mu           sync.Mutex
	calls, limit int
}

func (c *countingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.limit >= 0 && c.calls > c.limit {
		return context.Canceled
	}
	return nil
}

// TestDeadlineInsideMatching: the context is checked while the values of a
// criterion are turned into text (here 100 values of 100 KB each, selected
// in one step), and a context that ends at any of its checks ends the
// evaluation with its error, never with a decision.
func TestDeadlineInsideMatching(t *testing.T) {
	snap := snapshotOf(t, `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: ns1}
spec:
  type: Reject
  match: [{select: '$.items[*]', matchRegex: forbidden}]
`)
	big := map[string]any{"s": strings.Repeat("a", 100<<10)}
	items := make([]any, 100)
	for i := range items {
		items[i] = []any{big}
	}
	req := engine.Request{Operation: rules.Create, Namespace: "ns1", Object: map[string]any{"kind": "ConfigMap", "items": items}}
	eng := engine.New(engine.Options{})
	all := &countingCtx{Context: context.Background(), limit: -1}
	if d, err := eng.Evaluate(all, snap, req); err != nil || !d.Allowed() {
		t.Fatalf("%+v, %v", d, err)
	}
	if all.calls < 10 {
		t.Errorf("the context was checked %d times while testing 10 MB of text", all.calls)
	}
	for limit := 0; limit < all.calls; limit++ {
		d, err := eng.Evaluate(&countingCtx{Context: context.Background(), limit: limit}, snap, req)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled at check %d of %d: got %+v, %v", limit+1, all.calls, d, err)
		}
	}
}
