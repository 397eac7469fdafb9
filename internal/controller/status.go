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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source/cluster"
)

// Condition type and reasons written to a rule's status.
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

// StatusReconciler writes the status of each rule of one kind:
// observedGeneration and the Ready condition, True when the rule compiles,
// False with reason CompileError and the field errors (field path and
// column) otherwise. A broken rule also gets a Warning event (the metric
// modwright_rule_broken, set by every replica's rule source, names it too).
// It runs on the leader only. It reads and writes rules as unstructured
// objects and compiles them through their kind's adapter, so one
// reconciler per kind of the registry serves every kind.
type StatusReconciler struct {
	Kind     kinds.Kind
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
		Named(strings.ToLower(r.Kind.Name())+"-status").
		For(r.object(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

func (r *StatusReconciler) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cluster.GVK(r.Kind))
	return u
}

func (r *StatusReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile compiles the rule and records the outcome in its status.
func (r *StatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	u := r.object()
	if err := r.Client.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	name := req.NamespacedName.String()
	if req.Namespace == "" {
		name = req.Name
	}
	compileErr := r.compile(u)
	cond := ReadyCondition(withoutName(r.Kind.Name(), name, compileErr), u.GetGeneration(), r.now())
	if dep := kinds.Deprecation(r.Kind); dep != "" && compileErr == nil {
		cond.Message += "; " + dep // a kind's former name
	}
	cond.Message = rules.Truncate(cond.Message, rules.MaxConditionMessage)
	orig := u.DeepCopy()
	st := readStatus(u)
	changed := meta.SetStatusCondition(&st.Conditions, cond)
	if !changed && st.ObservedGeneration == u.GetGeneration() {
		return reconcile.Result{}, nil
	}
	st.ObservedGeneration = u.GetGeneration()
	if err := writeStatus(u, st); err != nil {
		return reconcile.Result{}, fmt.Errorf("writing the status of %s %s: %w", r.Kind.Name(), name, err)
	}
	if err := r.Client.Status().Patch(ctx, u, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("writing the status of %s %s: %w", r.Kind.Name(), name, err)
	}
	if compileErr != nil {
		r.Log.Info("rule does not compile; it is never applied until fixed", "kind", r.Kind.Name(), "rule", name,
			"generation", u.GetGeneration(), "error", compileErr.Error())
		if r.Recorder != nil {
			r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonCompileError, "Compile", "%s", rules.Truncate(cond.Message, rules.MaxEventNote))
		}
	}
	return reconcile.Result{}, nil
}

// ruleStatus is the part of a rule's status the reconciler owns; every
// kind's status has these two fields (other fields are left as they are).
type ruleStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// readStatus reads the status fields the reconciler owns; a field that
// cannot be read (of the wrong type) reads as absent and is written anew.
func readStatus(u *unstructured.Unstructured) ruleStatus {
	var st ruleStatus
	if g, ok, err := unstructured.NestedFieldNoCopy(u.Object, "status", "observedGeneration"); ok && err == nil {
		switch g := g.(type) {
		case int64:
			st.ObservedGeneration = g
		case float64: // decoded by encoding/json into any
			st.ObservedGeneration = int64(g)
		}
	}
	if raw, ok, err := unstructured.NestedFieldNoCopy(u.Object, "status", "conditions"); ok && err == nil {
		var c struct {
			Conditions []metav1.Condition `json:"conditions"`
		}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"conditions": raw}, &c) == nil {
			st.Conditions = c.Conditions
		}
	}
	return st
}

// writeStatus sets the status fields the reconciler owns, leaving the
// others.
func writeStatus(u *unstructured.Unstructured, st ruleStatus) error {
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(u.Object, st.ObservedGeneration, "status", "observedGeneration"); err != nil {
		return err
	}
	return unstructured.SetNestedField(u.Object, out["conditions"], "status", "conditions")
}

// withoutName is err without the "<Kind> <namespace/name>: " a kind's
// decoder puts in front (a *rules.CompileError is rendered field by field
// already): the status and the denial name the rule themselves. It unwraps
// to err.
func withoutName(kind, key string, err error) error {
	var ce *rules.CompileError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	msg, ok := strings.CutPrefix(err.Error(), kind+" "+key+": ")
	if !ok {
		return err
	}
	return &unnamedError{msg, err}
}

type unnamedError struct {
	msg string
	err error
}

func (e *unnamedError) Error() string { return e.msg }
func (e *unnamedError) Unwrap() error { return e.err }

// compile compiles the stored rule through its kind, as the rule source
// does; the error is nil when it compiles.
func (r *StatusReconciler) compile(u *unstructured.Unstructured) error {
	m, err := cluster.Manifest(u)
	if err != nil {
		return err
	}
	_, err = r.Kind.Compile(m)
	return err
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
		return rules.Truncate(err.Error(), rules.MaxConditionMessage)
	}
	parts := make([]string, len(ce.Errors))
	for i, fe := range ce.Errors {
		parts[i] = fe.String()
	}
	return rules.Truncate(strings.Join(parts, "; "), rules.MaxConditionMessage)
}
