package controller

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/certs"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
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
	tests := []struct {
		in      []string
		want    []admissionregv1.RuleWithOperations
		wantErr string
	}{
		{in: []string{"pods", "deployments", "pods"}, want: []admissionregv1.RuleWithOperations{rule([]string{"*"}, "pods", "deployments")}},
		{in: []string{"widgets.example.com", "pods", "gadgets.example.com", "configmaps."}, want: []admissionregv1.RuleWithOperations{
			rule([]string{"*"}, "pods"), rule([]string{"example.com"}, "widgets", "gadgets"), rule([]string{""}, "configmaps")}},
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
	mr := &v1beta1.ModRule{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Generation: 3}}
	if err := json.Unmarshal([]byte(spec), &mr.Spec); err != nil {
		panic(err)
	}
	return mr
}

const (
	goodSpec = `{"type":"Patch","match":[{"select":"$.kind","matchValue":"Pod"}],"patch":[{"op":"add","path":"/metadata/labels/x","value":"y"}]}`
	badSpec  = `{"type":"Patch","match":[{"select":"$.kind[","matchValue":"Pod"}],"patch":[{"op":"add","path":"/metadata/labels/x","value":"y"}]}`
)

func TestValidateHandler(t *testing.T) {
	review := func(op rules.Operation, mr *v1beta1.ModRule) *engine.Request {
		raw, _ := json.Marshal(mr)
		return &engine.Request{Operation: op, Namespace: mr.Namespace, Name: mr.Name, ObjectJSON: raw}
	}
	h := ValidateHandler{}
	if r := h.Admit(context.Background(), review(rules.Create, modRule("ok", goodSpec))); !r.Allowed {
		t.Errorf("valid rule denied: %+v", r)
	}
	r := h.Admit(context.Background(), review(rules.Update, modRule("broken", badSpec)))
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
	if r := h.Admit(context.Background(), review(rules.Delete, modRule("broken", badSpec))); !r.Allowed {
		t.Error("delete of an invalid rule denied")
	}
	if r := h.Admit(context.Background(), &engine.Request{Operation: rules.Create, ObjectJSON: []byte(`{"spec":1}`)}); r.Allowed || r.Code != 400 ||
		!strings.HasPrefix(r.Message, "undecodable ModRule: ") {
		t.Errorf("undecodable rule: %+v", r)
	}
}

type recordedEvent struct{ kind, reason, note string }

type fakeRecorder struct{ events []recordedEvent }

func (f *fakeRecorder) Eventf(_, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	f.events = append(f.events, recordedEvent{eventtype, reason, strings.ReplaceAll(note, "%s", args[0].(string))})
}

func TestStatusReconciler(t *testing.T) {
	good, bad := modRule("good", goodSpec), modRule("bad", badSpec)
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(good, bad).WithStatusSubresource(&v1beta1.ModRule{}).Build()
	rec := &fakeRecorder{}
	now := time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)
	r := &StatusReconciler{Client: c, Recorder: rec, Log: logr.Discard(), Now: func() time.Time { return now }}
	for _, mr := range []*v1beta1.ModRule{good, bad} {
		key := types.NamespacedName{Namespace: mr.Namespace, Name: mr.Name}
		for range 2 { // the second pass changes nothing
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	get := func(name string) v1beta1.ModRuleStatus {
		var mr v1beta1.ModRule
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "team", Name: name}, &mr); err != nil {
			t.Fatal(err)
		}
		return mr.Status
	}
	want := v1beta1.ModRuleStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{{
		Type: "Ready", Status: "True", ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(now),
		Reason: "Compiled", Message: "the rule compiled and is served"}}}
	if d := cmp.Diff(want, get("good")); d != "" {
		t.Errorf("good status (-want +got):\n%s", d)
	}
	st := get("bad")
	if st.ObservedGeneration != 3 || len(st.Conditions) != 1 || st.Conditions[0].Status != "False" ||
		st.Conditions[0].Reason != "CompileError" || !strings.HasPrefix(st.Conditions[0].Message, "spec.match[0].select: column ") {
		t.Errorf("bad status = %+v", st)
	}
	if len(rec.events) != 1 || rec.events[0].kind != "Warning" || rec.events[0].reason != "CompileError" {
		t.Errorf("events = %+v, want one Warning CompileError", rec.events)
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "gone"}}); err != nil {
		t.Errorf("missing rule: %v", err)
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
