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
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/webhook"
)

// NodeRefPath is where the pods/binding webhook is served.
const NodeRefPath = "/podbinding-webhook"

// NodeRefHandler is the pods/binding webhook of the kinds whose rules
// read a Pod's node (kinds.NodeRecorded): when a Pod annotated
// <Ask>: "true" is bound to a node, it annotates the Pod <Record>: <node>.
// That update goes through the dragnet, where those rules see the node.
//
// It always allows the binding (its configuration uses failurePolicy
// Ignore as well): a broken node-reference webhook must never block
// scheduling. Its side effect (the Pod update) is skipped on dry runs
// (sideEffects: NoneOnDryRun).
type NodeRefHandler struct {
	// Annotations are the kinds' (Registry.NodeAnnotations); with none,
	// every binding passes untouched.
	Annotations []kinds.NodeAnnotations
	Reader      client.Reader // live reads (Pods are not cached)
	Writer      client.Writer
	Log         logr.Logger
}

var _ webhook.AdmitFunc = (*NodeRefHandler)(nil).Admit

// Admit annotates the Pod being bound.
func (h *NodeRefHandler) Admit(ctx context.Context, req *engine.Request) webhook.Verdict {
	if len(h.Annotations) == 0 || req.Operation != rules.Create || req.Resource.Resource != "pods" || req.SubResource != "binding" {
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
	set := map[string]string{}
	for _, a := range h.Annotations {
		if p.Annotations[a.Ask] == "true" && p.Annotations[a.Record] != node {
			set[a.Record] = node
		}
	}
	if len(set) == 0 {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set}})
	if err != nil {
		return err
	}
	if err := h.Writer.Patch(ctx, &p, client.RawPatch(types.MergePatchType, body)); err != nil {
		return err
	}
	h.Log.V(1).Info("recorded the node of a Pod", "pod", key.String(), "node", node)
	return nil
}
