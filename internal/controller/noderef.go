package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/webhook"
)

// InjectNodeRefAnnotation asks for a Pod's node to be recorded in its
// modrule.NodeNameAnnotation (KubeMod's node-reference annotations).
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

var _ webhook.AdmitFunc = (*NodeRefHandler)(nil).Admit

// Admit annotates the Pod being bound.
func (h *NodeRefHandler) Admit(ctx context.Context, req *engine.Request) webhook.Verdict {
	if req.Operation != rules.Create || req.Resource.Resource != "pods" || req.SubResource != "binding" {
		return webhook.Verdict{Allowed: true}
	}
	var b corev1.Binding
	if err := json.Unmarshal(req.ObjectJSON, &b); err != nil {
		return webhook.Verdict{Allowed: true, Warnings: []string{fmt.Sprintf("modwright: undecodable Binding: %v", err)}}
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" || b.Target.Name == "" {
		return webhook.Verdict{Allowed: true}
	}
	node := b.Target.Name
	pod := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	if pod.Name == "" {
		pod.Name = b.Name
	}
	if req.DryRun {
		return webhook.Verdict{Allowed: true, Code: http.StatusOK, Message: "dry run: the Pod is not annotated"}
	}
	if err := h.annotate(ctx, pod, node); err != nil {
		h.Log.Error(err, "could not record the node of a Pod", "pod", pod.String(), "node", node)
		return webhook.Verdict{Allowed: true, Warnings: []string{fmt.Sprintf("modwright: could not annotate Pod %s with its node: %v", pod, err)}}
	}
	return webhook.Verdict{Allowed: true}
}

func (h *NodeRefHandler) annotate(ctx context.Context, key types.NamespacedName, node string) error {
	var p corev1.Pod
	if err := h.Reader.Get(ctx, key, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if p.Annotations[InjectNodeRefAnnotation] != "true" || p.Annotations[modrule.NodeNameAnnotation] == node {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{modrule.NodeNameAnnotation: node}}})
	if err != nil {
		return err
	}
	if err := h.Writer.Patch(ctx, &p, client.RawPatch(types.MergePatchType, body)); err != nil {
		return err
	}
	h.Log.V(1).Info("recorded the node of a Pod", "pod", key.String(), "node", node)
	return nil
}
