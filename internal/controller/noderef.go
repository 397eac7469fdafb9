package controller

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/modwright/modwright/internal/engine"
)

// InjectNodeRefAnnotation asks for a Pod's node to be recorded in its
// engine.NodeNameAnnotation (KubeMod's node-reference annotations).
const InjectNodeRefAnnotation = "ref.kubemod.io/inject-node-ref"

// NodeRefPath is where the pods/binding webhook is served.
const NodeRefPath = "/podbinding-webhook"

// NodeRefHandler is the pods/binding webhook: when a Pod annotated
// ref.kubemod.io/inject-node-ref: "true" is bound to a node, it annotates
// the Pod ref.kubemod.io/nodename: <node>. That update goes through the
// dragnet, where rules see the node under syntheticRefs.node.
//
// It always allows the binding (its configuration uses failurePolicy
// Ignore as well): a broken node-reference webhook must never block
// scheduling. Its side effect (the Pod update) is skipped on dry runs
// (sideEffects: NoneOnDryRun).
type NodeRefHandler struct {
	Reader client.Reader // live reads (Pods are not cached)
	Writer client.Writer
	Log    logr.Logger
}

var _ admission.Handler = (*NodeRefHandler)(nil)

// Handle annotates the Pod being bound.
func (h *NodeRefHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Resource.Resource != "pods" || req.SubResource != "binding" {
		return admission.Allowed("")
	}
	var b corev1.Binding
	if err := json.Unmarshal(req.Object.Raw, &b); err != nil {
		return admission.Allowed("").WithWarnings(fmt.Sprintf("modwright: undecodable Binding: %v", err))
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" || b.Target.Name == "" {
		return admission.Allowed("")
	}
	node := b.Target.Name
	pod := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	if pod.Name == "" {
		pod.Name = b.Name
	}
	if req.DryRun != nil && *req.DryRun {
		return admission.Allowed("dry run: the Pod is not annotated")
	}
	if err := h.annotate(ctx, pod, node); err != nil {
		h.Log.Error(err, "could not record the node of a Pod", "pod", pod.String(), "node", node)
		return admission.Allowed("").WithWarnings(fmt.Sprintf("modwright: could not annotate Pod %s with its node: %v", pod, err))
	}
	return admission.Allowed("")
}

func (h *NodeRefHandler) annotate(ctx context.Context, key types.NamespacedName, node string) error {
	var p corev1.Pod
	if err := h.Reader.Get(ctx, key, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if p.Annotations[InjectNodeRefAnnotation] != "true" || p.Annotations[engine.NodeNameAnnotation] == node {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{engine.NodeNameAnnotation: node}}})
	if err != nil {
		return err
	}
	if err := h.Writer.Patch(ctx, &p, client.RawPatch(types.MergePatchType, body)); err != nil {
		return err
	}
	h.Log.V(1).Info("recorded the node of a Pod", "pod", key.String(), "node", node)
	return nil
}
