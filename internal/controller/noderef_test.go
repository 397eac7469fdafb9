package controller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/modwright/modwright/internal/engine"
)

func TestNodeRefHandler(t *testing.T) {
	pod := func(name string, inject bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if inject {
			p.Annotations = map[string]string{InjectNodeRefAnnotation: "true"}
		}
		return p
	}
	binding := func(name, node string, dryRun bool) admission.Request {
		raw, _ := json.Marshal(corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}})
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "ns", Name: name, DryRun: &dryRun,
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "binding",
			Object: runtime.RawExtension{Raw: raw}, UserInfo: authv1.UserInfo{Username: "system:kube-scheduler"},
		}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		req  admission.Request
		want string // the Pod's nodename annotation afterwards
	}{
		{"annotated pod", pod("a", true), binding("a", "node-1", false), "node-1"},
		{"pod without the opt-in", pod("b", false), binding("b", "node-1", false), ""},
		{"dry run", pod("c", true), binding("c", "node-1", true), ""},
		{"missing pod", pod("d", true), binding("gone", "node-1", false), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tt.pod).Build()
			h := &NodeRefHandler{Reader: c, Writer: c, Log: logr.Discard()}
			resp := h.Handle(context.Background(), tt.req)
			if !resp.Allowed {
				t.Fatalf("binding not allowed: %+v", resp.Result)
			}
			var got corev1.Pod
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tt.pod), &got); err != nil {
				t.Fatal(err)
			}
			if a := got.Annotations[engine.NodeNameAnnotation]; a != tt.want {
				t.Errorf("nodename annotation %q, want %q", a, tt.want)
			}
		})
	}
	// Other requests pass untouched.
	h := &NodeRefHandler{Log: logr.Discard()}
	if r := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update}}); !r.Allowed {
		t.Error("an unrelated request was not allowed")
	}
}
