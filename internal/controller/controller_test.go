package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/certs"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/webhook"
)

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTargetRules(t *testing.T) {
	all := admissionregv1.AllScopes
	rule := func(groups []string, res ...string) admissionregv1.RuleWithOperations {
		return admissionregv1.RuleWithOperations{Operations: DragnetOperations(), Rule: admissionregv1.Rule{
			APIGroups: groups, APIVersions: []string{"*"}, Resources: res, Scope: &all}}
	}
	connect := admissionregv1.RuleWithOperations{Operations: []admissionregv1.OperationType{admissionregv1.Connect}, Rule: admissionregv1.Rule{
		APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "services/proxy", "nodes/proxy"}, Scope: &all}}
	tests := []struct {
		in      []string
		want    []admissionregv1.RuleWithOperations
		wantErr string
	}{
		{in: []string{"pods", "deployments", "pods"}, want: []admissionregv1.RuleWithOperations{rule([]string{"*"}, "pods", "deployments"), connect}},
		{in: []string{"widgets.example.com", "pods", "gadgets.example.com", "configmaps."}, want: []admissionregv1.RuleWithOperations{
			rule([]string{"*"}, "pods"), rule([]string{"example.com"}, "widgets", "gadgets"), rule([]string{""}, "configmaps"), connect}},
		{in: []string{"a b"}, wantErr: "want a plural resource name"},
		{in: []string{" "}, wantErr: "no target resources"},
	}
	for _, tt := range tests {
		got, err := TargetRules(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("TargetRules(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("TargetRules(%q): %v", tt.in, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("TargetRules(%q) (-want +got):\n%s", tt.in, d)
		}
	}
	if n := len(DefaultTargetResources()); n != 21 {
		t.Errorf("%d default target resources, KubeMod has 21", n)
	}
}

func modRule(name string, spec string) *v1beta1.ModRule {
	mr := &v1beta1.ModRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Generation: 3},
	}
	if err := json.Unmarshal([]byte(spec), &mr.Spec); err != nil {
		panic(err)
	}
	return mr
}

const (
	goodSpec = `{"type":"Patch","match":[{"select":"$.kind","matchValue":"Pod"}],"patch":[{"op":"add","path":"/metadata/labels/x","value":"y"}]}`
	badSpec  = `{"type":"Patch","match":[{"select":"$.kind[","matchValue":"Pod"}],"patch":[{"op":"add","path":"/metadata/labels/x","value":"y"}]}`
)

var modRuleKind = engine.GroupVersionKind{Group: v1beta1.Group, Version: v1beta1.Version, Kind: v1beta1.Kind}

func TestValidateHandler(t *testing.T) {
	review := func(op rules.Operation, mr *v1beta1.ModRule) *engine.Request {
		raw, err := json.Marshal(mr)
		if err != nil {
			t.Fatal(err)
		}
		return &engine.Request{Operation: op, Kind: modRuleKind, Namespace: mr.Namespace, Name: mr.Name, ObjectJSON: raw}
	}
	// raw is a request for a ModRule in namespace team whose object is
	// text, as the API server sends it (the namespace of a created object
	// may be only in the request).
	raw := func(text string) *engine.Request {
		return &engine.Request{Operation: rules.Create, Kind: modRuleKind, Namespace: "team", Name: "w", ObjectJSON: []byte(text)}
	}
	h := ValidateHandler{Kinds: kinds.NewRegistry(modrule.NewKind(""))}
	ctx := context.Background()
	if r := h.Admit(ctx, review(rules.Create, modRule("ok", goodSpec))); !r.Allowed {
		t.Errorf("valid rule denied: %+v", r)
	}
	r := h.Admit(ctx, review(rules.Update, modRule("broken", badSpec)))
	if r.Allowed {
		t.Fatal("invalid rule allowed")
	}
	if r.Reason != string(metav1.StatusReasonInvalid) || r.Code != 422 {
		t.Errorf("reason %q code %d, want Invalid 422", r.Reason, r.Code)
	}
	if r.Details == nil || r.Details.Name != "broken" || r.Details.Group != v1beta1.Group || r.Details.Kind != "ModRule" {
		t.Fatalf("details = %+v", r.Details)
	}
	if len(r.Details.Causes) == 0 || r.Details.Causes[0].Field != "spec.match[0].select" || r.Details.Causes[0].Type != "FieldValueInvalid" ||
		!strings.Contains(r.Details.Causes[0].Message, "column ") {
		t.Errorf("causes = %+v, want spec.match[0].select with a column", r.Details.Causes)
	}
	if !strings.Contains(r.Message, "ModRule team/broken is invalid: spec.match[0].select: column") {
		t.Errorf("message = %q", r.Message)
	}
	if r := h.Admit(ctx, review(rules.Delete, modRule("broken", badSpec))); !r.Allowed {
		t.Error("delete of an invalid rule denied")
	}

	// Manifests the kind cannot decode: strict decoding through the kind,
	// as the rule source does.
	const head = `{"apiVersion":"api.kubemod.io/v1beta1","kind":"ModRule","metadata":{"name":"w"},`
	for _, tc := range []struct {
		name string
		req  *engine.Request
		want webhook.Verdict // Allowed, Code, Reason, Message and Details are compared
	}{
		{
			name: "not JSON",
			req:  raw(`{"spec":`),
			want: webhook.Verdict{Code: 400, Message: "undecodable ModRule: not a JSON object"},
		},
		{
			name: "not an object",
			req:  raw(`[1]`),
			want: webhook.Verdict{Code: 400, Message: "undecodable ModRule: not a JSON object"},
		},
		{
			name: "not JSON, kind unknown",
			req:  &engine.Request{Operation: rules.Create, ObjectJSON: []byte(`nope`)},
			want: webhook.Verdict{Code: 400, Message: "undecodable rule: not a JSON object"},
		},
		{
			name: "a value of the wrong type",
			req:  raw(head + `"spec":{"type":"Patch","match":"$.kind"}}`),
			want: webhook.Verdict{
				Code: 422, Reason: "Invalid",
				Message: "ModRule team/w is invalid: spec.match: must be an array, not a string",
				Details: &webhook.StatusDetails{Name: "w", Group: v1beta1.Group, Kind: "ModRule", Causes: []webhook.StatusCause{
					{Type: "FieldValueInvalid", Field: "spec.match", Message: "must be an array, not a string"}}},
			},
		},
		{
			name: "an unknown field",
			req:  raw(head + `"spec":{"type":"Patch","match":[{"select":"$.kind"}],"bogus":1}}`),
			want: webhook.Verdict{
				Code: 422, Reason: "Invalid",
				Message: `ModRule team/w is invalid: spec.bogus: unknown field`,
				Details: &webhook.StatusDetails{Name: "w", Group: v1beta1.Group, Kind: "ModRule", Causes: []webhook.StatusCause{
					{Type: "FieldValueInvalid", Field: "spec.bogus", Message: "unknown field"}}},
			},
		},
		{
			name: "an apiVersion not served",
			req:  raw(`{"apiVersion":"api.kubemod.io/v1","kind":"ModRule","metadata":{"name":"w"},"spec":{}}`),
			want: webhook.Verdict{
				Code: 422, Reason: "Invalid",
				Message: `ModRule team/w is invalid: apiVersion: "api.kubemod.io/v1" is not served; use api.kubemod.io/v1beta1`,
				Details: &webhook.StatusDetails{Name: "w", Group: v1beta1.Group, Kind: "ModRule", Causes: []webhook.StatusCause{
					{Type: "FieldValueInvalid", Field: "apiVersion", Message: `"api.kubemod.io/v1" is not served; use api.kubemod.io/v1beta1`}}},
			},
		},
		{
			name: "not a kind of the registry",
			req:  raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"},"data":1}`),
			want: webhook.Verdict{Allowed: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.Admit(ctx, tc.req)
			got.Warnings, got.Patch = nil, nil
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Admit (-want +got):\n%s", d)
			}
		})
	}
}

type recordedEvent struct{ kind, reason, note string }

type fakeRecorder struct{ events []recordedEvent }

func (f *fakeRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	if u, ok := regarding.(*unstructured.Unstructured); !ok || u.GroupVersionKind() != v1beta1.GroupVersion.WithKind(v1beta1.Kind) {
		panic(fmt.Sprintf("event regarding %T %v, want an unstructured ModRule", regarding, regarding.GetObjectKind().GroupVersionKind()))
	}
	f.events = append(f.events, recordedEvent{eventtype, reason, fmt.Sprintf(note, args...)})
}

func TestStatusReconciler(t *testing.T) {
	good, bad := modRule("good", goodSpec), modRule("bad", badSpec)
	// A stored status with a condition of another type, kept as it is.
	bad.Status.Conditions = []metav1.Condition{{Type: "Other", Status: "Unknown", Reason: "Test", Message: "kept",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1beta1.GroupVersion.WithKind(v1beta1.Kind))
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(good, bad).WithStatusSubresource(u).Build()
	rec := &fakeRecorder{}
	now := time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)
	r := &StatusReconciler{Kind: modrule.NewKind(""), Client: c, Recorder: rec, Log: logr.Discard(), Now: func() time.Time { return now }}
	reconcileAll := func() {
		t.Helper()
		for _, mr := range []*v1beta1.ModRule{good, bad} {
			key := types.NamespacedName{Namespace: mr.Namespace, Name: mr.Name}
			for range 2 { // the second pass changes nothing
				if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	get := func(name string) *v1beta1.ModRule {
		t.Helper()
		var mr v1beta1.ModRule
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "team", Name: name}, &mr); err != nil {
			t.Fatal(err)
		}
		return &mr
	}
	reconcileAll()
	ready := metav1.Condition{Type: "Ready", Status: "True", ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(now),
		Reason: "Compiled", Message: "the rule compiled and is served"}
	want := v1beta1.ModRuleStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{ready}}
	if d := cmp.Diff(want, get("good").Status); d != "" {
		t.Errorf("good status (-want +got):\n%s", d)
	}
	st := get("bad").Status
	if st.ObservedGeneration != 3 || len(st.Conditions) != 2 || st.Conditions[0].Type != "Other" || st.Conditions[0].Message != "kept" {
		t.Fatalf("bad status = %+v, want the Other condition kept and Ready added", st)
	}
	if c := st.Conditions[1]; c.Type != "Ready" || c.Status != "False" || c.Reason != "CompileError" || c.ObservedGeneration != 3 ||
		!c.LastTransitionTime.Equal(&metav1.Time{Time: now}) || !strings.HasPrefix(c.Message, "spec.match[0].select: column ") {
		t.Errorf("bad Ready condition = %+v", c)
	}
	if len(rec.events) != 1 || rec.events[0].kind != "Warning" || rec.events[0].reason != "CompileError" ||
		rec.events[0].note != st.Conditions[1].Message {
		t.Errorf("events = %+v, want one Warning CompileError with the condition's message", rec.events)
	}
	// Another pass writes nothing.
	rv := map[string]string{"good": get("good").ResourceVersion, "bad": get("bad").ResourceVersion}
	reconcileAll()
	for name, v := range rv {
		if got := get(name).ResourceVersion; got != v {
			t.Errorf("reconciling %s again wrote it (resourceVersion %s, was %s)", name, got, v)
		}
	}

	// A new generation that still compiles: observedGeneration follows,
	// the Ready condition's lastTransitionTime stays (its status did not
	// change). A fix of the broken rule: Ready turns True, with a new
	// lastTransitionTime.
	earlier := now
	now = now.Add(time.Hour)
	for name, spec := range map[string]string{"good": goodSpec, "bad": goodSpec} {
		mr := get(name)
		mr.Generation = 4
		if err := json.Unmarshal([]byte(spec), &mr.Spec); err != nil {
			t.Fatal(err)
		}
		if err := c.Update(context.Background(), mr); err != nil {
			t.Fatal(err)
		}
	}
	reconcileAll()
	ready.ObservedGeneration = 4
	want = v1beta1.ModRuleStatus{ObservedGeneration: 4, Conditions: []metav1.Condition{ready}}
	want.Conditions[0].LastTransitionTime = metav1.NewTime(earlier)
	if d := cmp.Diff(want, get("good").Status); d != "" {
		t.Errorf("good status at generation 4 (-want +got):\n%s", d)
	}
	ready.LastTransitionTime = metav1.NewTime(now)
	if d := cmp.Diff([]metav1.Condition{bad.Status.Conditions[0], ready}, get("bad").Status.Conditions); d != "" {
		t.Errorf("fixed rule's conditions (-want +got):\n%s", d)
	}
	if len(rec.events) != 1 {
		t.Errorf("events = %+v, want no new one", rec.events)
	}

	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "gone"}}); err != nil {
		t.Errorf("missing rule: %v", err)
	}
}

// TestStatusReconcilerUndecodable checks the status of a stored rule the
// kind cannot decode (a field of the wrong type, which a lax schema can
// let through): Ready False, the message without the rule's name.
func TestStatusReconcilerUndecodable(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.GroupVersion.String(), "kind": v1beta1.Kind,
		"metadata": map[string]any{"namespace": "team", "name": "odd", "generation": int64(2)},
		"spec":     map[string]any{"type": "Patch", "match": "$.kind"},
	}}
	// The client's scheme does not know the ModRule Go type: the object
	// is stored as it is, unknown to the Go type's decoder.
	s := runtime.NewScheme()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(u).WithStatusSubresource(u.DeepCopy()).Build()
	rec := &fakeRecorder{}
	r := &StatusReconciler{Kind: modrule.NewKind(""), Client: c, Recorder: rec, Log: logr.Discard()}
	key := types.NamespacedName{Namespace: "team", Name: "odd"}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(v1beta1.GroupVersion.WithKind(v1beta1.Kind))
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	if g, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration"); g != 2 {
		t.Errorf("observedGeneration = %d, want 2", g)
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	if len(conds) != 1 {
		t.Fatalf("conditions = %v, want one", conds)
	}
	cond := conds[0].(map[string]any)
	for k, v := range map[string]any{"type": "Ready", "status": "False", "reason": "CompileError",
		"message": "spec.match: must be an array, not a string"} {
		if cond[k] != v {
			t.Errorf("condition %s = %v, want %v", k, cond[k], v)
		}
	}
	if len(rec.events) != 1 || rec.events[0].note != "spec.match: must be an array, not a string" {
		t.Errorf("events = %+v", rec.events)
	}
}

func TestCertManager(t *testing.T) {
	none := admissionregv1.SideEffectClassNone
	mutating := &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "modwright"},
		Webhooks: []admissionregv1.MutatingWebhook{
			{Name: "dragnet.modwright.io", SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			{Name: "podbinding.modwright.io", SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		},
	}
	validating := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "modwright"},
		Webhooks:   []admissionregv1.ValidatingWebhook{{Name: "modrules.modwright.io", SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(mutating, validating).Build()
	now := time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)
	targets, _ := TargetRules([]string{"pods"})
	secret := types.NamespacedName{Namespace: "modwright-system", Name: "cert"}
	m := &CertManager{
		Client: c, Secret: secret, Hosts: []string{"svc.modwright-system.svc"}, Generate: true,
		TTL: 90 * 24 * time.Hour, RenewBefore: 30 * 24 * time.Hour, Log: logr.Discard(),
		Now:     func() time.Time { return now },
		Configs: WebhookConfigs{Mutating: "modwright", Validating: "modwright", DragnetWebhook: "dragnet.modwright.io", DragnetRules: targets},
	}
	ctx := context.Background()
	next, err := m.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next < 59*24*time.Hour || next > 61*24*time.Hour {
		t.Errorf("next check in %s, want about 60 days", next)
	}
	read := func() (*corev1.Secret, *admissionregv1.MutatingWebhookConfiguration, *admissionregv1.ValidatingWebhookConfiguration) {
		var s corev1.Secret
		var mw admissionregv1.MutatingWebhookConfiguration
		var vw admissionregv1.ValidatingWebhookConfiguration
		for key, obj := range map[types.NamespacedName]client.Object{secret: &s, {Name: "modwright"}: &mw} {
			if err := c.Get(ctx, key, obj); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Get(ctx, types.NamespacedName{Name: "modwright"}, &vw); err != nil {
			t.Fatal(err)
		}
		return &s, &mw, &vw
	}
	s, mw, vw := read()
	b := &certs.Bundle{CertPEM: s.Data["tls.crt"], KeyPEM: s.Data["tls.key"], CAPEM: s.Data["ca.crt"]}
	if err := b.Check(m.Hosts, now, time.Hour); err != nil {
		t.Fatalf("generated certificate: %v", err)
	}
	ca := s.Data["ca.crt"]
	for _, w := range mw.Webhooks {
		if string(w.ClientConfig.CABundle) != string(ca) {
			t.Errorf("webhook %s caBundle not injected", w.Name)
		}
	}
	if d := cmp.Diff(targets, mw.Webhooks[0].Rules); d != "" {
		t.Errorf("dragnet rules (-want +got):\n%s", d)
	}
	if len(mw.Webhooks[1].Rules) != 0 {
		t.Errorf("podbinding rules changed: %+v", mw.Webhooks[1].Rules)
	}
	if string(vw.Webhooks[0].ClientConfig.CABundle) != string(ca) {
		t.Error("validating caBundle not injected")
	}

	// Something (a GitOps sync) overwrites the caBundle: it is re-injected,
	// and the certificate is left alone.
	mw.Webhooks[0].ClientConfig.CABundle = []byte("stale")
	if err := c.Update(ctx, mw); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	s2, mw, _ := read()
	if string(mw.Webhooks[0].ClientConfig.CABundle) != string(ca) || string(s2.Data["tls.crt"]) != string(s.Data["tls.crt"]) {
		t.Error("caBundle not re-injected, or certificate changed")
	}

	// Close to expiry: renewed, and the old CA stays trusted.
	now = now.Add(61 * 24 * time.Hour)
	if _, err := m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	s3, mw, _ := read()
	if string(s3.Data["tls.crt"]) == string(s.Data["tls.crt"]) {
		t.Fatal("certificate not renewed")
	}
	if !strings.Contains(string(s3.Data["ca.crt"]), string(ca)) || len(s3.Data["ca.crt"]) <= len(ca) {
		t.Error("renewed bundle does not hold the new and the old CA")
	}
	if string(mw.Webhooks[0].ClientConfig.CABundle) != string(s3.Data["ca.crt"]) {
		t.Error("renewed caBundle not injected")
	}
	p := &CertProvider{Reader: c, Secret: secret}
	if err := p.Ready(); err != nil {
		t.Errorf("provider: %v", err)
	}
	if _, err := (&CertProvider{Reader: c, Secret: types.NamespacedName{Namespace: "x", Name: "y"}}).GetCertificate(nil); err == nil {
		t.Error("provider without a Secret returned a certificate")
	}
}
