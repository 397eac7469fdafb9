package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
	"github.com/modwright/modwright/internal/webhook"
)

// fenceKind is a made-up cluster-scoped rule kind, the shape of
// ClusterPolicy: a Fence does not compile when it has spec.broken (a
// string there is quoted in the error, as a rule's own text can be). The
// validating webhook and the status reconciler serve it beside ModRule
// with nothing of their own for it.
type fenceKind struct{}

var _ kinds.Kind = fenceKind{}

func (fenceKind) Name() string       { return "Fence" }
func (fenceKind) Group() string      { return "fence.example.io" }
func (fenceKind) Versions() []string { return []string{"v1"} }

func (fenceKind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	if b, broken := value.Lookup(m.Object, "spec", "broken"); broken {
		msg := "is broken"
		if s, ok := b.(string); ok {
			msg += ": " + s
		}
		return nil, &rules.CompileError{Kind: "Fence", Rule: m.Key(), Errors: []rules.FieldError{{Field: "spec.broken", Pos: 4, Msg: msg}}}
	}
	return nil, nil
}

func fence(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fence.example.io/v1", "kind": "Fence",
		"metadata": map[string]any{"name": name, "generation": int64(1)},
		"spec":     spec,
	}}
}

func TestSecondKind(t *testing.T) {
	t.Run("validating webhook", func(t *testing.T) {
		h := ValidateHandler{Kinds: kinds.NewRegistry(modrule.NewKind(""), fenceKind{})}
		req := func(kind string, data string) *engine.Request {
			return &engine.Request{Operation: rules.Create, Kind: engine.GroupVersionKind{Kind: kind}, Name: "f", ObjectJSON: []byte(data)}
		}
		for _, tc := range []struct {
			name string
			req  *engine.Request
			want webhook.Verdict
		}{
			{
				name: "cluster-scoped rule of the second kind",
				req:  req("Fence", `{"apiVersion":"fence.example.io/v1","kind":"Fence","metadata":{"name":"f"},"spec":{"broken":true}}`),
				want: webhook.Verdict{Code: 422, Reason: "Invalid", Message: "Fence f is invalid: spec.broken: column 5: is broken",
					Details: &webhook.StatusDetails{Name: "f", Group: "fence.example.io", Kind: "Fence", Causes: []webhook.StatusCause{
						{Type: "FieldValueInvalid", Field: "spec.broken", Message: "column 5: is broken"}}}},
			},
			{
				name: "good rule of the second kind",
				req:  req("Fence", `{"apiVersion":"fence.example.io/v1","kind":"Fence","metadata":{"name":"f"},"spec":{}}`),
				want: webhook.Verdict{Allowed: true},
			},
			{
				name: "ModRule beside it",
				req:  req("ModRule", `{"apiVersion":"api.kubemod.io/v1beta1","kind":"ModRule","metadata":{"name":"f","namespace":"team"},"spec":{"type":"Patch","match":"$.kind"}}`),
				want: webhook.Verdict{Code: 422, Reason: "Invalid", Message: "ModRule team/f is invalid: spec.match: must be an array, not a string",
					Details: &webhook.StatusDetails{Name: "f", Group: v1beta1.Group, Kind: "ModRule", Causes: []webhook.StatusCause{
						{Type: "FieldValueInvalid", Field: "spec.match", Message: "must be an array, not a string"}}}},
			},
			{
				name: "same kind name, another group",
				req:  req("Fence", `{"apiVersion":"other.example.io/v1","kind":"Fence","metadata":{"name":"f"},"spec":{"broken":true}}`),
				want: webhook.Verdict{Allowed: true},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := h.Admit(context.Background(), tc.req)
				got.Warnings, got.Patch = nil, nil
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("Admit (-want +got):\n%s", d)
				}
			})
		}
	})

	t.Run("status of cluster-scoped rules", func(t *testing.T) {
		good, bad := fence("good", map[string]any{}), fence("bad", map[string]any{"broken": true})
		c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(good, bad).WithStatusSubresource(good.DeepCopy()).Build()
		rec := &regardingRecorder{}
		r := &StatusReconciler{Kind: fenceKind{}, Client: c, Recorder: rec, Log: logr.Discard()}
		for _, name := range []string{"good", "bad"} {
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
				t.Fatal(err)
			}
		}
		for name, want := range map[string]string{"good": "True the rule compiled and is served", "bad": "False spec.broken: column 5: is broken"} {
			got := fence(name, nil)
			if err := c.Get(context.Background(), types.NamespacedName{Name: name}, got); err != nil {
				t.Fatal(err)
			}
			st := readStatus(got)
			if len(st.Conditions) != 1 || st.ObservedGeneration != 1 || st.Conditions[0].Type != "Ready" ||
				string(st.Conditions[0].Status)+" "+st.Conditions[0].Message != want {
				t.Errorf("%s: status %+v, want Ready %s", name, st, want)
			}
		}
		if d := cmp.Diff([]string{"Fence bad Warning CompileError spec.broken: column 5: is broken"}, rec.events); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})

	// An error longer than the API server takes in a condition's message
	// or an event's note (which would refuse the write, and the report
	// with it) is cut to each, at a whole rune.
	t.Run("status of a rule with a long error", func(t *testing.T) {
		long := fence("long", map[string]any{"broken": strings.Repeat("é", rules.MaxConditionMessage)})
		c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(long).WithStatusSubresource(long.DeepCopy()).Build()
		rec := &regardingRecorder{}
		r := &StatusReconciler{Kind: fenceKind{}, Client: c, Recorder: rec, Log: logr.Discard()}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "long"}}); err != nil {
			t.Fatal(err)
		}
		msg := onlyCondition(t, c, "long").Message
		if len(msg) > rules.MaxConditionMessage || len(msg) < rules.MaxConditionMessage-4 || !utf8.ValidString(msg) ||
			!strings.HasPrefix(msg, "spec.broken: column 5: is broken: éé") || !strings.HasSuffix(msg, "é…") {
			t.Errorf("message of %d bytes (valid UTF-8 %v): %.60q ... %q", len(msg), utf8.ValidString(msg), msg, msg[max(0, len(msg)-10):])
		}
		if len(rec.events) != 1 {
			t.Fatalf("events %d, want 1", len(rec.events))
		}
		note := strings.TrimPrefix(rec.events[0], "Fence long Warning CompileError ")
		if len(note) > rules.MaxEventNote || len(note) < rules.MaxEventNote-4 || !utf8.ValidString(note) || !strings.HasPrefix(msg, note[:len(note)-len("…")]) {
			t.Errorf("event note of %d bytes (valid UTF-8 %v), want the message's beginning within %d", len(note), utf8.ValidString(note), rules.MaxEventNote)
		}
	})
}

// regardingRecorder records events with the kind and name of what they
// regard.
type regardingRecorder struct{ events []string }

func (r *regardingRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	u := regarding.(*unstructured.Unstructured)
	r.events = append(r.events, strings.Join([]string{u.GetKind(), u.GetName(), eventtype, reason, fmt.Sprintf(note, args...)}, " "))
}

// onlyCondition is the one condition of the status of the Fence name,
// read back from c.
func onlyCondition(t *testing.T, c client.Client, name string) metav1.Condition {
	t.Helper()
	got := fence(name, nil)
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, got); err != nil {
		t.Fatal(err)
	}
	st := readStatus(got)
	if len(st.Conditions) != 1 {
		t.Fatalf("status %+v, want one condition", st)
	}
	return st.Conditions[0]
}
