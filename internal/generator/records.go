package generator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/api/v1alpha1"
)

// GenerateRequests is the resource of the records (modwright.io/v1alpha1
// GenerateRequest).
var GenerateRequests = schema.GroupVersionResource{Group: v1alpha1.Group, Version: v1alpha1.Version, Resource: "generaterequests"}

// Defaults of Recover.
const (
	DefaultStaleAfter     = 5 * time.Minute
	DefaultRecoverEvery   = time.Minute
	DefaultRecoverPerPass = 1000
)

// records keeps a GenerateRequest for each task from when it is queued
// until it is done (Options.RecordNamespace): written by a queue of its
// own, so that neither a review nor a task waits for it.
type records struct {
	namespace, replica string
	queue              workqueue.TypedRateLimitingInterface[string]
	// off: the records cannot be written (their CRD is not installed, or
	// the operator may not write them); the work goes on without them.
	off atomic.Bool
}

func newRecords(namespace, replica string) *records {
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 10*time.Second)
	return &records{namespace: namespace, replica: replica,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{Name: "generate-records"})}
}

// RecordName is the name of the record of an action on an object
// (apiVersion, kind, namespace, name).
func RecordName(action, apiVersion, kind, namespace, name string) string {
	return recordName(action + " " + ref{apiVersion, kind, namespace, name}.String())
}

// recordName is the record of a task key: one per object and action.
func recordName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "gr-" + hex.EncodeToString(sum[:12])
}

// recordOf is t's record.
func (r *records) recordOf(key string, t *task) *unstructured.Unstructured {
	o := refOf(t.obj)
	spec := map[string]any{
		"action":  string(t.action),
		"object":  map[string]any{"apiVersion": o.apiVersion, "kind": o.kind, "namespace": o.namespace, "name": o.name},
		"rule":    t.rule,
		"trigger": map[string]any{"apiVersion": t.trig.APIVersion, "kind": t.trig.Kind, "namespace": t.trig.Namespace, "name": t.trig.Name, "uid": t.trig.UID},
		"replica": r.replica,
	}
	if t.sync {
		spec["synchronize"] = true
	}
	if t.gone {
		spec["triggerGone"] = true
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.KindGenerateRequest, "spec": spec}}
	u.SetName(recordName(key))
	u.SetNamespace(r.namespace)
	return u
}

// taskOf is the task a record names; the object is its identity only.
func taskOf(u *unstructured.Unstructured) (*task, error) {
	spec, _ := u.Object["spec"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	o, _ := spec["object"].(map[string]any)
	tr, _ := spec["trigger"].(map[string]any)
	t := &task{action: action(str(spec, "action")), rule: str(spec, "rule"),
		obj:  map[string]any{"apiVersion": str(o, "apiVersion"), "kind": str(o, "kind"), "metadata": map[string]any{"namespace": str(o, "namespace"), "name": str(o, "name")}},
		trig: trigger{APIVersion: str(tr, "apiVersion"), Kind: str(tr, "kind"), Namespace: str(tr, "namespace"), Name: str(tr, "name"), UID: str(tr, "uid")}}
	t.sync, _ = spec["synchronize"].(bool)
	t.gone, _ = spec["triggerGone"].(bool)
	switch {
	case t.action != actionCreate && t.action != actionDelete && t.action != actionPatch:
		return nil, fmt.Errorf("action %q", t.action)
	case str(o, "kind") == "" || str(o, "name") == "" || t.trig.Kind == "" || t.trig.Name == "":
		return nil, errors.New("no object or trigger")
	}
	return t, nil
}

// unusable reports whether err says the records cannot be written at all.
func unusable(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err)
}

// recordNext writes the record of one queued task; false when the queue
// is shut down.
func (g *Generator) recordNext(ctx context.Context) bool {
	r := g.records
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	g.mu.Lock()
	t := g.tasks[key]
	g.mu.Unlock()
	if t == nil || r.off.Load() {
		r.queue.Forget(key) // done already: no record needed
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
	defer cancel()
	_, err := g.o.Client.Resource(GenerateRequests).Namespace(r.namespace).Create(cctx, r.recordOf(key, t), metav1.CreateOptions{})
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		r.queue.Forget(key)
		g.o.Metrics.record("written")
		// The task may have finished while its record was written (its
		// own delete found none): then the record goes now.
		g.mu.Lock()
		pending := g.tasks[key] != nil
		g.mu.Unlock()
		if !pending {
			g.unrecord(ctx, key)
		}
	case unusable(err):
		r.queue.Forget(key)
		if !r.off.Swap(true) {
			g.o.Log.Error(err, "generate work cannot be recorded (GenerateRequest CRD missing, or not allowed): work queued when a replica stops is lost", "namespace", r.namespace)
		}
	case r.queue.NumRequeues(key) >= 3:
		r.queue.Forget(key)
		g.o.Metrics.record("failed")
		g.o.Log.Error(err, "generate work not recorded", "object", refOf(t.obj).String(), "action", t.action)
	default:
		r.queue.AddRateLimited(key)
	}
	return true
}

// unrecord deletes a done task's record.
func (g *Generator) unrecord(ctx context.Context, key string) { g.unrecordName(ctx, recordName(key)) }

// unrecordName deletes a record by name.
func (g *Generator) unrecordName(ctx context.Context, name string) {
	r := g.records
	if r == nil || r.off.Load() {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
	defer cancel()
	err := g.o.Client.Resource(GenerateRequests).Namespace(r.namespace).Delete(cctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		// Left: the leader takes it up when stale (idempotent).
		g.o.Log.V(1).Info("the record of done generate work was not deleted", "record", name, "error", err.Error())
	}
}

// Recover, on the elected leader, takes up the records of generate work
// that is stale (older than StaleAfter: a replica that took it stopped
// before doing it): a create or patch evaluates the trigger again and
// queues what its rule now makes of the object, a delete is queued as
// recorded; a record whose work is gone (the trigger deleted, the rule
// no longer making the object) is deleted. Each pass reads at most
// PerPass records.
type Recover struct {
	Generator  *Generator
	Log        logr.Logger
	StaleAfter time.Duration // 0: DefaultStaleAfter
	Every      time.Duration // 0: DefaultRecoverEvery
	PerPass    int           // 0: DefaultRecoverPerPass
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

var (
	_ manager.Runnable               = (*Recover)(nil)
	_ manager.LeaderElectionRunnable = (*Recover)(nil)
)

// NeedLeaderElection: the leader alone takes records up.
func (r *Recover) NeedLeaderElection() bool { return true }

// Start takes up stale records every Every until ctx ends.
func (r *Recover) Start(ctx context.Context) error {
	if r.Generator.records == nil {
		return nil
	}
	every := r.Every
	if every <= 0 {
		every = DefaultRecoverEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := r.Pass(ctx); err != nil {
			r.Log.Error(err, "taking up stale generate records failed")
		} else if n > 0 {
			r.Log.Info("took up stale generate records", "records", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass takes up the stale records once; n is how many.
func (r *Recover) Pass(ctx context.Context) (n int, err error) {
	g := r.Generator
	rec := g.records
	if rec == nil || rec.off.Load() {
		return 0, nil
	}
	stale, per, now := r.StaleAfter, r.PerPass, time.Now
	if stale <= 0 {
		stale = DefaultStaleAfter
	}
	if per <= 0 {
		per = DefaultRecoverPerPass
	}
	if r.Now != nil {
		now = r.Now
	}
	ri := g.o.Client.Resource(GenerateRequests).Namespace(rec.namespace)
	read := 0
	err = g.listPages(ctx, ri, metav1.ListOptions{Limit: int64(min(per, 500))}, func(u *unstructured.Unstructured) bool {
		if read++; read > per {
			return false
		}
		if now().Sub(u.GetCreationTimestamp().Time) < stale {
			return true
		}
		t, err := taskOf(u)
		if err != nil {
			r.Log.Info("a generate record that names no work is deleted", "record", u.GetName(), "reason", err.Error())
			g.unrecordName(ctx, u.GetName())
			return true
		}
		key := t.key()
		g.mu.Lock()
		_, queued := g.tasks[key]
		g.mu.Unlock()
		if queued || recordName(key) != u.GetName() {
			return true // this replica does it (or not a record of ours)
		}
		if err := g.takeUp(ctx, t); err != nil {
			r.Log.Info("a stale generate record was not taken up; tried again later", "record", u.GetName(), "error", err.Error())
			return true
		}
		g.o.Metrics.record("recovered")
		n++
		return true
	})
	if err != nil && !unusable(err) {
		return n, err
	}
	return n, nil
}

// takeUp queues the work a stale record names (its record is deleted when
// that work is done), or deletes the record when there is no work left.
func (g *Generator) takeUp(ctx context.Context, t *task) error {
	key := t.key()
	done := func() error { g.unrecord(ctx, key); return nil }
	if t.action == actionDelete {
		g.add(t, false)
		return nil
	}
	if t.gone && t.action == actionPatch {
		// The patch of a DELETE: its trigger cannot be evaluated again.
		return done()
	}
	cctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
	defer cancel()
	obj, forbidden, err := g.getTrigger(cctx, t.trig)
	switch {
	case err != nil:
		return err
	case forbidden, obj == nil:
		return done() // gone (its DELETE removed what it must), or not ours to read
	}
	dec, err := g.evaluate(cctx, obj)
	if err != nil {
		return err
	}
	want := refOf(t.obj)
	trig := t.trig
	trig.UID = string(obj.GetUID())
	for _, gen := range dec.Generated {
		if refOf(gen.Object) != want || (gen.Patch != nil) != (t.action == actionPatch) {
			continue
		}
		nt := &task{action: t.action, obj: gen.Object, sync: gen.Synchronize, rule: ruleName(gen), trig: trig, ops: gen.Patch}
		g.add(nt, false)
		return nil
	}
	return done() // the rules no longer make it
}
