package controller

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/auditor"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/source/cluster"
)

// ViolationsWriter records the background scan's counts in the rules'
// status: status.totalViolations (the rule's fail results on the cluster's
// objects), status.auditTimestamp (when the scan ended) and, for the kinds
// that list them (kinds.ViolationsListed), status.violations (the first
// ones), by a merge patch
// of the status subresource after every scan, as Gatekeeper's audit does
// for constraints. A rule gone since is left alone.
type ViolationsWriter struct {
	Client client.Client
	Kinds  []kinds.Kind
	Log    logr.Logger
}

var _ auditor.Violations = (*ViolationsWriter)(nil)

// Record writes each count.
func (w *ViolationsWriter) Record(ctx context.Context, counts []auditor.RuleCount, at time.Time) error {
	for _, c := range counts {
		gvk, kind := w.kindOf(c)
		if kind == nil {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		ns, name, ok := strings.Cut(c.Key, "/")
		if !ok {
			ns, name = "", c.Key
		}
		u.SetNamespace(ns)
		u.SetName(name)
		st := map[string]any{"totalViolations": c.Fails, "auditTimestamp": at.UTC().Format(time.RFC3339)}
		if l, ok := kind.(kinds.ViolationsListed); ok && c.Rule != nil {
			vs := make([]any, 0, len(c.Violations))
			for _, r := range c.Violations {
				vs = append(vs, l.StatusViolation(c.Rule, kinds.Violation{APIVersion: r.Resource.APIVersion, Kind: r.Resource.Kind,
					Namespace: r.Resource.Namespace, Name: r.Resource.Name, Message: r.Message}))
			}
			st["violations"] = vs
		}
		patch, err := json.Marshal(map[string]any{"status": st})
		if err != nil {
			return err
		}
		if err := w.Client.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.Log.Error(err, "recording a rule's violations in its status", "kind", c.Kind, "rule", c.Key)
		}
	}
	return nil
}

// kindOf is the kind of a counted rule and what the rule is stored as:
// its kind's, or its own kind in the group of a GroupOwner (Gatekeeper's
// constraints); a nil kind when none of w's.
func (w *ViolationsWriter) kindOf(c auditor.RuleCount) (schema.GroupVersionKind, kinds.Kind) {
	for _, k := range w.Kinds {
		if k.Group() != c.Group {
			continue
		}
		if _, owner := k.(kinds.GroupOwner); owner {
			return schema.GroupVersionKind{Group: k.Group(), Version: k.Versions()[0], Kind: c.Kind}, k
		}
		if k.Name() == c.Kind {
			return cluster.GVK(k), k
		}
	}
	return schema.GroupVersionKind{}, nil
}
