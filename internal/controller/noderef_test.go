package controller

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
)

func TestNodeRefHandler(t *testing.T) {
	asked := []kinds.NodeAnnotations{(&modrule.KindAdapter{}).NodeAnnotations(), {Ask: "example.com/ask", Record: "example.com/node"}}
	pod := func(name string, inject bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if inject {
			p.Annotations = map[string]string{modrule.InjectNodeRefAnnotation: "true"}
		}
		return p
	}
	binding := func(name, node string, dryRun bool) *engine.Request {
		raw, _ := json.Marshal(corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}})
		return &engine.Request{
			Operation: rules.Create, Namespace: "ns", Name: name, DryRun: dryRun,
			Resource: engine.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "binding",
			ObjectJSON: raw, UserInfo: engine.UserInfo{Username: "system:kube-scheduler"},
		}
	}
	tests := []struct {
		name  string
		asked []kinds.NodeAnnotations
		pod   *corev1.Pod
		req   *engine.Request
		want  string // the Pod's nodename annotation afterwards
	}{
		{"annotated pod", asked, pod("a", true), binding("a", "node-1", false), "node-1"},
		{"pod without the opt-in", asked, pod("b", false), binding("b", "node-1", false), ""},
		{"dry run", asked, pod("c", true), binding("c", "node-1", true), ""},
		{"missing pod", asked, pod("d", true), binding("gone", "node-1", false), ""},
		{"no kind asks", nil, pod("e", true), binding("e", "node-1", false), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tt.pod).Build()
			h := &NodeRefHandler{Annotations: tt.asked, Reader: c, Writer: c, Log: logr.Discard()}
			resp := h.Admit(context.Background(), tt.req)
			if !resp.Allowed {
				t.Fatalf("binding not allowed: %+v", resp)
			}
			if dry := tt.req.DryRun && tt.asked != nil; dry != (resp.Message == "dry run: the Pod is not annotated") {
				t.Errorf("dry run %v, message %q", dry, resp.Message)
			}
			var got corev1.Pod
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tt.pod), &got); err != nil {
				t.Fatal(err)
			}
			if a := got.Annotations[modrule.NodeNameAnnotation]; a != tt.want {
				t.Errorf("nodename annotation %q, want %q", a, tt.want)
			}
		})
	}
	// Other requests pass untouched.
	h := &NodeRefHandler{Annotations: asked, Log: logr.Discard()}
	if r := h.Admit(context.Background(), &engine.Request{Operation: rules.Update}); !r.Allowed || r.Code != 0 || len(r.Warnings) != 0 {
		t.Errorf("an unrelated request: %+v, want allowed", r)
	}
	// An undecodable Binding is allowed with a warning.
	bad := binding("a", "node-1", false)
	bad.ObjectJSON = []byte(`{"target":1}`)
	if r := h.Admit(context.Background(), bad); !r.Allowed || len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "modwright: undecodable Binding: ") {
		t.Errorf("undecodable binding: %+v", r)
	}
}
