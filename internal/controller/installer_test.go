package controller

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/translate"
)

// TestHolds: a stored spec holds the translation when every field of the
// translation is there as it is (the API server's defaults aside).
func TestHolds(t *testing.T) {
	want := map[string]any{"failurePolicy": "Fail", "validations": []any{map[string]any{"expression": "true", "message": "m"}}, "n": float64(3)}
	for _, c := range []struct {
		name string
		cur  map[string]any
		ok   bool
	}{
		{"defaults added", map[string]any{"failurePolicy": "Fail", "matchPolicy": "Equivalent", "validations": []any{map[string]any{"expression": "true", "message": "m", "reason": "Invalid"}}, "n": int64(3)}, true},
		{"a field changed", map[string]any{"failurePolicy": "Ignore", "validations": []any{map[string]any{"expression": "true", "message": "m"}}, "n": int64(3)}, false},
		{"a list longer", map[string]any{"failurePolicy": "Fail", "validations": []any{map[string]any{"expression": "true", "message": "m"}, map[string]any{"expression": "false"}}, "n": int64(3)}, false},
		{"a field missing", map[string]any{"failurePolicy": "Fail", "n": int64(3)}, false},
	} {
		if got := holds(c.cur, want); got != c.ok {
			t.Errorf("%s: holds = %v, want %v", c.name, got, c.ok)
		}
	}
}

// TestNarrowExpression: the dragnet's condition from the rules left to it.
func TestNarrowExpression(t *testing.T) {
	rule := func(ns string, any bool) engine.Rule {
		return &keyedRule{engine.RuleInfo{Kind: "ModRule", Key: ns + "/r", Index: engine.IndexKeys{Namespace: ns, AnyNamespace: any}}}
	}
	for _, c := range []struct {
		name  string
		rules []engine.Rule
		want  string
	}{
		{"none left", nil, "false"},
		{"namespaced", []engine.Rule{rule("b", false), rule("a", false), rule("", false)},
			`(request.kind.group == '' && request.kind.kind == 'Namespace' ? '' : (has(request.namespace) ? request.namespace : '')) in ["", "a", "b"]`},
		{"one anywhere", []engine.Rule{rule("a", false), rule("", true)}, ""},
	} {
		if got := narrowExpression(engine.NewSnapshot(c.rules)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

type keyedRule struct{ info engine.RuleInfo }

func (r *keyedRule) Info() *engine.RuleInfo             { return &r.info }
func (r *keyedRule) InScope(string) bool                { return true }
func (r *keyedRule) Match(*engine.Handle) (bool, error) { return false, nil }
func (r *keyedRule) Apply(*engine.Handle) error         { return nil }

// TestCompileReused: a pass whose rules did not change (the same kinds,
// keys, uids and generations) reuses the last compilation; a changed
// generation compiles again.
func TestCompileReused(t *testing.T) {
	rule := func(name string) []translate.Rule {
		return []translate.Rule{{Kind: "ModRule", Origin: "test", Object: map[string]any{
			"apiVersion": "api.kubemod.io/v1beta1", "kind": "ModRule",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec":     map[string]any{"type": "Reject", "match": []any{map[string]any{"select": "$.kind", "matchValue": "Pod"}}}}}}
	}
	n := &PolicyInstaller{}
	built := 0
	compile := func(of string, name string) translate.Result {
		return n.compile([]string{of}, func() translate.Result { built++; return translate.Compile(rule(name), translate.Options{}) })
	}
	first := compile("ModRule default/a uid 1", "a")
	if built != 1 || len(first.Translated) != 1 {
		t.Fatalf("first pass: built %d, %+v", built, first)
	}
	if again := compile("ModRule default/a uid 1", "b"); built != 1 || again.Translated[0].Rules[0].Key() != "default/a" {
		t.Errorf("unchanged rules compiled again (built %d times)", built)
	}
	if changed := compile("ModRule default/a uid 2", "b"); built != 2 || changed.Translated[0].Rules[0].Key() != "default/b" {
		t.Errorf("a new generation was not compiled (built %d times)", built)
	}
}

// TestSetConditionBounded checks that a NativeAdmission message longer
// than the API server takes (a reason quoting a rule's expression) is cut
// to its bound at a whole rune: the API server would refuse the status
// write, and the report with it.
func TestSetConditionBounded(t *testing.T) {
	u := fence("long", map[string]any{})
	c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(u).WithStatusSubresource(u.DeepCopy()).Build()
	n := &PolicyInstaller{Client: c}
	long := "runs in the webhook: " + strings.Repeat("é", rules.MaxConditionMessage)
	if err := n.setCondition(context.Background(), u, metav1.Condition{Type: ConditionNative, Status: metav1.ConditionFalse, Reason: "Webhook", Message: long}); err != nil {
		t.Fatal(err)
	}
	msg := onlyCondition(t, c, "long").Message
	if len(msg) > rules.MaxConditionMessage || !utf8.ValidString(msg) || !strings.HasPrefix(long, msg[:len(msg)-len("…")]) {
		t.Errorf("message of %d bytes (valid UTF-8 %v), want the reason's beginning within %d", len(msg), utf8.ValidString(msg), rules.MaxConditionMessage)
	}
}
