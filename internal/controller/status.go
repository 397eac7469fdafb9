package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/rules"
)

// Condition type and reasons written to ModRule status.
const (
	ConditionReady     = "Ready"
	ReasonCompiled     = "Compiled"
	ReasonCompileError = "CompileError"
)

// EventRecorder is what the status reconciler needs of an event recorder
// (k8s.io/client-go/tools/events.EventRecorder satisfies it).
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// StatusReconciler writes each ModRule's status: observedGeneration and the
// Ready condition, True when the rule compiles, False with reason
// CompileError and the field errors (field path and column) otherwise. A
// broken rule also gets a Warning event (the metric modwright_rule_broken,
// set by every replica's rule source, names it too). It runs on the leader
// only.
type StatusReconciler struct {
	Client   client.Client
	Recorder EventRecorder
	Log      logr.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

var _ reconcile.Reconciler = (*StatusReconciler)(nil)

// SetupWithManager registers the reconciler. Only spec changes (a new
// generation) trigger it, so its own status writes do not.
func (r *StatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("modrule-status").
		For(&v1beta1.ModRule{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

func (r *StatusReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile compiles the rule and records the outcome in its status.
func (r *StatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var mr v1beta1.ModRule
	if err := r.Client.Get(ctx, req.NamespacedName, &mr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	_, compileErr := rules.Compile(&mr)
	cond := ReadyCondition(compileErr, mr.Generation, r.now())
	orig := mr.DeepCopy()
	changed := meta.SetStatusCondition(&mr.Status.Conditions, cond)
	if !changed && mr.Status.ObservedGeneration == mr.Generation {
		return reconcile.Result{}, nil
	}
	mr.Status.ObservedGeneration = mr.Generation
	if err := r.Client.Status().Patch(ctx, &mr, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("writing the status of ModRule %s: %w", mr.NamespacedName(), err)
	}
	if compileErr != nil {
		r.Log.Info("ModRule does not compile; it is never applied until fixed", "rule", mr.NamespacedName(),
			"generation", mr.Generation, "error", compileErr.Error())
		if r.Recorder != nil {
			r.Recorder.Eventf(&mr, nil, corev1.EventTypeWarning, ReasonCompileError, "Compile", "%s", cond.Message)
		}
	}
	return reconcile.Result{}, nil
}

// ReadyCondition is the Ready condition for a rule that compiled with err
// (nil: it compiled) at generation.
func ReadyCondition(err error, generation int64, now time.Time) metav1.Condition {
	c := metav1.Condition{
		Type:               ConditionReady,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
		Status:             metav1.ConditionTrue,
		Reason:             ReasonCompiled,
		Message:            "the rule compiled and is served",
	}
	if err != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonCompileError, FieldErrors(err)
	}
	return c
}

// FieldErrors renders a compile error as "field: column N: message" lines
// joined with "; " (without the rule name, which the object already says).
func FieldErrors(err error) string {
	var ce *rules.CompileError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	parts := make([]string, len(ce.Errors))
	for i, fe := range ce.Errors {
		parts[i] = fe.String()
	}
	msg := strings.Join(parts, "; ")
	const maxLen = 32 << 10 // metav1.Condition's message limit
	if len(msg) > maxLen {
		msg = msg[:maxLen-3] + "..."
	}
	return msg
}
