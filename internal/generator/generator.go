package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// What the generator marks the objects it writes with: a label to watch
// them by, the trigger (JSON: apiVersion, kind, namespace, name, uid) and
// the rule.
const (
	LabelGenerated    = "modwright.io/generated"
	AnnotationTrigger = "modwright.io/trigger"
	AnnotationRule    = "modwright.io/generated-by"
	// AnnotationDownstream marks a synchronized object whose rule deletes
	// it with the rule (engine.RuleInfo.Downstream): the rule's identity
	// (JSON: group, kind, namespace, name, key, inner), by which a leader
	// finds the objects of a rule deleted while no replica led.
	AnnotationDownstream = "modwright.io/downstream-of"
	// FieldManager owns the fields of synchronized objects.
	FieldManager = "modwright-generate"
)

// Defaults of Options.
const (
	DefaultQueueSize    = 10000
	DefaultRetries      = 8
	DefaultWorkers      = 2
	DefaultTriggerDelay = 500 * time.Millisecond
	DefaultTimeout      = 10 * time.Second
)

// Options configure a Generator.
type Options struct {
	// Client writes the objects and reads triggers; Mapper maps kinds to
	// resources.
	Client dynamic.Interface
	Mapper meta.RESTMapper
	// Snapshots are the serving rules and Readers what they read: a
	// trigger is evaluated again when one of its synchronized objects
	// changed.
	Snapshots interface{ Current() *engine.Snapshot }
	Readers   engine.Options
	// Watch are the resources whose generated objects are watched (the
	// resources the operator may write, as its RBAC grants them).
	Watch []schema.GroupVersionResource
	Log   logr.Logger
	// Metrics; nil records nothing.
	Metrics *Metrics
	// QueueSize bounds the tasks waiting (0: DefaultQueueSize); Retries
	// bounds the attempts of one task (0: DefaultRetries); Workers run
	// them (0: DefaultWorkers); TriggerDelay is the wait before a new
	// trigger is looked for (0: DefaultTriggerDelay); Timeout bounds one
	// call to the API server (0: DefaultTimeout).
	QueueSize    int
	Retries      int
	Workers      int
	TriggerDelay time.Duration
	Timeout      time.Duration
	// RecordNamespace, when set, is where each queued task is recorded
	// (a GenerateRequest, deleted when the task is done) so that the
	// leader takes up the work of a replica that stopped (Recover);
	// Replica names this replica in the records.
	RecordNamespace string
	Replica         string
}

// Generator creates, synchronizes and deletes generated objects.
type Generator struct {
	o     Options
	eng   *engine.Engine
	queue workqueue.TypedRateLimitingInterface[string]
	mu    sync.Mutex
	tasks map[string]*task // by queue key: the latest task for an object
	// records: nil without Options.RecordNamespace.
	records *records
}

// NewGenerator returns a Generator; Start runs it.
func NewGenerator(o Options) *Generator {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Retries <= 0 {
		o.Retries = DefaultRetries
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.TriggerDelay <= 0 {
		o.TriggerDelay = DefaultTriggerDelay
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second)
	readers := o.Readers
	readers.NoTrace = true
	g := &Generator{o: o, eng: engine.New(readers), tasks: map[string]*task{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{Name: "generate"})}
	if o.RecordNamespace != "" {
		g.records = newRecords(o.RecordNamespace, o.Replica)
	}
	return g
}

// action is what a task does.
type action string

const (
	actionCreate action = "create" // a decision's object, once its trigger is stored
	actionDelete action = "delete" // an object going with its deleted trigger
	actionSync   action = "sync"   // a watched object changed: evaluate its trigger again
	actionPatch  action = "patch"  // an existing object a rule changed
)

// task is one object's work.
type task struct {
	action action
	obj    map[string]any // create: the object; delete, sync: its identity
	sync   bool
	rule   string
	trig   trigger
	// ops: a patch task's JSON patch; gone: its trigger was deleted (not
	// looked for).
	ops  []patch.Operation
	gone bool
}

// key is the task's queue key: one task per action and object.
func (t *task) key() string { return string(t.action) + " " + refOf(t.obj).String() }

// trigger names the object whose admission generated an object.
type trigger struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// ref is an object's identity.
type ref struct{ apiVersion, kind, namespace, name string }

func refOf(obj map[string]any) ref {
	u := unstructured.Unstructured{Object: obj}
	return ref{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()}
}

func (r ref) String() string {
	return r.apiVersion + "/" + r.kind + " " + r.namespace + "/" + r.name
}

var _ interface {
	Decided(engine.Request, *engine.Decision)
} = (*Generator)(nil)

// Decided takes a decision's generated objects (webhook.Observer): none
// for a dry run, a refused review, or the mutating phase alone.
func (g *Generator) Decided(req engine.Request, dec *engine.Decision) {
	if len(dec.Generated) == 0 || req.DryRun || !dec.Allowed() || (req.Phases != 0 && req.Phases&engine.Validate == 0) {
		return
	}
	trig := trigger{APIVersion: req.Kind.Group + "/" + req.Kind.Version, Kind: req.Kind.Kind, Namespace: req.Namespace, Name: req.Name}
	if req.Kind.Group == "" {
		trig.APIVersion = req.Kind.Version
	}
	if req.Kind.Kind == "Namespace" && req.Kind.Group == "" {
		trig.Namespace = ""
	}
	for _, gen := range dec.Generated {
		t := &task{action: actionCreate, obj: gen.Object, sync: gen.Synchronize, rule: ruleName(gen), trig: trig}
		if gen.Patch != nil {
			t.action, t.ops, t.gone = actionPatch, gen.Patch, req.Operation == rules.Delete
			g.add(t, true)
			continue
		}
		if req.Operation == rules.Delete {
			if !gen.Synchronize {
				continue
			}
			t.action = actionDelete
			t.trig.UID = uidOf(req.OldObject, req.OldObjectJSON)
		}
		g.add(t, t.action == actionCreate)
	}
}

func ruleName(gen engine.Generated) string {
	s := gen.Kind + " " + gen.Rule
	if gen.Name != "" {
		s += " rule " + gen.Name
	}
	return s
}

// uidOf is an object's metadata.uid (from the tree, else the JSON text).
func uidOf(obj any, text []byte) string {
	if obj == nil && text != nil {
		obj, _ = value.Decode(text)
	}
	m, _ := obj.(map[string]any)
	return string((&unstructured.Unstructured{Object: m}).GetUID())
}

// add queues t (delayed: a new trigger is stored after its admission),
// replacing a task for the same object not yet started; a full queue
// drops it.
func (g *Generator) add(t *task, delayed bool) {
	key := t.key()
	g.mu.Lock()
	_, queued := g.tasks[key]
	if !queued && len(g.tasks) >= g.o.QueueSize {
		g.mu.Unlock()
		g.o.Metrics.count("dropped")
		g.o.Log.Info("generate queue full: task dropped", "object", refOf(t.obj).String(), "action", t.action, "queueSize", g.o.QueueSize)
		return
	}
	g.tasks[key] = t
	g.mu.Unlock()
	if !queued && g.records != nil && !g.records.off.Load() {
		g.records.queue.Add(key)
	}
	if delayed {
		g.queue.AddAfter(key, g.o.TriggerDelay)
	} else {
		g.queue.Add(key)
	}
}

// Start runs the workers and the watches until ctx ends.
func (g *Generator) Start(ctx context.Context) error {
	defer g.queue.ShutDown()
	if g.records != nil {
		defer g.records.queue.ShutDown()
	}
	if len(g.o.Watch) > 0 {
		sel := LabelGenerated + "=true"
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(g.o.Client, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) { o.LabelSelector = sel })
		for _, gvr := range g.o.Watch {
			if _, err := f.ForResource(gvr).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
				UpdateFunc: func(old, cur any) { g.changed(old, cur) },
				DeleteFunc: func(obj any) { g.changed(obj, nil) },
			}); err != nil {
				return err
			}
		}
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	var wg sync.WaitGroup
	if g.records != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g.recordNext(ctx) {
			}
		}()
	}
	for range g.o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	g.queue.ShutDown()
	if g.records != nil {
		g.records.queue.ShutDown()
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection: every replica creates the objects of the reviews
// it admitted.
func (g *Generator) NeedLeaderElection() bool { return false }

// changed queues the evaluation of a watched object's trigger: the object
// was deleted (cur nil) or changed by someone else.
func (g *Generator) changed(old, cur any) {
	if d, ok := old.(cache.DeletedFinalStateUnknown); ok {
		old = d.Obj
	}
	o, ok := old.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if c, ok := cur.(*unstructured.Unstructured); ok {
		if c.GetResourceVersion() == o.GetResourceVersion() || c.GetDeletionTimestamp() != nil || sameContent(o.Object, c.Object) {
			return // a resync, going anyway, or a change of status or metadata
		}
	}
	var trig trigger
	if err := json.Unmarshal([]byte(o.GetAnnotations()[AnnotationTrigger]), &trig); err != nil || trig.Kind == "" {
		return // not written by a generator
	}
	id := map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(), "metadata": map[string]any{"name": o.GetName(), "namespace": o.GetNamespace()}}
	g.add(&task{action: actionSync, obj: id, trig: trig, rule: o.GetAnnotations()[AnnotationRule]}, false)
}

// sameContent: a and b differ at most in their status and in the
// metadata the API server keeps (resourceVersion, managedFields,
// generation): nothing a rule makes.
func sameContent(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			if k != "status" && k != "metadata" {
				out[k] = v
			}
		}
		md, _ := m["metadata"].(map[string]any)
		out["metadata"] = map[string]any{"labels": md["labels"], "annotations": md["annotations"], "ownerReferences": md["ownerReferences"]}
		return out
	}
	return value.Equal(strip(a), strip(b))
}

// next runs one task; false when the queue is shut down.
func (g *Generator) next(ctx context.Context) bool {
	key, quit := g.queue.Get()
	if quit {
		return false
	}
	defer g.queue.Done(key)
	g.mu.Lock()
	t := g.tasks[key]
	g.mu.Unlock()
	if t == nil {
		g.queue.Forget(key)
		return true
	}
	err := g.run(ctx, t)
	switch {
	case err == nil || errors.Is(err, errGiveUp):
		g.finish(ctx, key, t)
		if err != nil {
			g.o.Metrics.count("failed")
			g.o.Log.Error(err, "generate task abandoned", "object", refOf(t.obj).String(), "action", t.action, "rule", t.rule)
		}
	case g.queue.NumRequeues(key) >= g.o.Retries:
		g.finish(ctx, key, t)
		g.o.Metrics.count("failed")
		g.o.Log.Error(err, "generate task failed; giving up", "object", refOf(t.obj).String(), "action", t.action, "rule", t.rule, "attempts", g.o.Retries)
	default:
		g.o.Log.V(1).Info("generate task failed; retrying", "object", refOf(t.obj).String(), "action", t.action, "error", err.Error())
		g.queue.AddRateLimited(key)
	}
	return true
}

// finish ends a task: done, or given up. Its record goes, unless a newer
// task for the object was queued meanwhile.
func (g *Generator) finish(ctx context.Context, key string, t *task) {
	g.mu.Lock()
	last := g.tasks[key] == t
	if last {
		delete(g.tasks, key)
	}
	g.mu.Unlock()
	g.queue.Forget(key)
	if last {
		g.unrecord(ctx, key)
	}
}

// errGiveUp is in the chain of an error no retry mends.
var errGiveUp = errors.New("not retried")

// evaluate evaluates the serving rules for a trigger, as if created.
func (g *Generator) evaluate(ctx context.Context, obj *unstructured.Unstructured) (*engine.Decision, error) {
	gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
	req := engine.Request{Operation: rules.Create, Name: obj.GetName(), Namespace: obj.GetNamespace(), Object: obj.Object,
		Kind: engine.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: obj.GetKind()}, Phases: engine.Validate}
	if m, err := g.o.Mapper.RESTMapping(gv.WithKind(obj.GetKind()).GroupKind(), gv.Version); err == nil {
		req.Resource = engine.GroupVersionResource{Group: m.Resource.Group, Version: m.Resource.Version, Resource: m.Resource.Resource}
	}
	if g.o.Snapshots == nil {
		return nil, fmt.Errorf("%w: no rules to evaluate the trigger with", errGiveUp)
	}
	snap := g.o.Snapshots.Current()
	if snap == nil {
		return nil, errors.New("no rules served yet")
	}
	return g.eng.Evaluate(ctx, snap, req)
}

func (g *Generator) run(ctx context.Context, t *task) error {
	ctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
	defer cancel()
	switch t.action {
	case actionCreate:
		return g.create(ctx, t)
	case actionPatch:
		return g.patch(ctx, t)
	case actionDelete:
		return g.remove(ctx, t)
	default:
		return g.resync(ctx, t)
	}
}

// resource is the client of an object's resource (in its namespace when
// namespaced).
func (g *Generator) resource(apiVersion, kind, namespace string) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errGiveUp, err)
	}
	m, err := g.o.Mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, err // a CRD not served yet: retried
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if namespace == "" {
			namespace = metav1.NamespaceDefault
		}
		return g.o.Client.Resource(m.Resource).Namespace(namespace), nil
	}
	return g.o.Client.Resource(m.Resource), nil
}

// getTrigger reads a trigger; nil when it is not there (or not the
// object of that uid). forbidden: the operator may not read it.
func (g *Generator) getTrigger(ctx context.Context, trig trigger) (obj *unstructured.Unstructured, forbidden bool, err error) {
	ri, err := g.resource(trig.APIVersion, trig.Kind, trig.Namespace)
	if err != nil {
		return nil, false, err
	}
	obj, err = ri.Get(ctx, trig.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case apierrors.IsForbidden(err):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	case trig.UID != "" && string(obj.GetUID()) != trig.UID:
		return nil, false, nil // another object of that name now
	}
	return obj, false, nil
}

// errNoTrigger: the trigger is not stored (yet): retried, then given up
// (the API server did not store it).
var errNoTrigger = errors.New("the trigger is not stored")

// create writes a decision's object once its trigger is stored.
func (g *Generator) create(ctx context.Context, t *task) error {
	trig := t.trig
	obj, forbidden, err := g.getTrigger(ctx, trig)
	switch {
	case err != nil:
		return err
	case forbidden:
		g.o.Log.V(1).Info("the operator may not read the trigger: its object is written without checking it was stored", "trigger", trig.Kind+" "+trig.Namespace+"/"+trig.Name)
	case obj == nil:
		return fmt.Errorf("%w: %s %s/%s", errNoTrigger, trig.Kind, trig.Namespace, trig.Name)
	default:
		trig.UID = string(obj.GetUID())
	}
	return g.write(ctx, t.obj, t.sync, t.rule, trig)
}

// write creates obj (once) or, when synchronized, applies it.
func (g *Generator) write(ctx context.Context, obj map[string]any, sync bool, rule string, trig trigger) error {
	u := &unstructured.Unstructured{Object: value.DeepCopy(obj).(map[string]any)}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelGenerated] = "true"
	u.SetLabels(labels)
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	tj, _ := json.Marshal(trig)
	ann[AnnotationTrigger], ann[AnnotationRule] = string(tj), rule
	if sync {
		if k, ok := g.downstreamOf(rule); ok {
			kj, _ := json.Marshal(k)
			ann[AnnotationDownstream] = string(kj)
		}
	}
	u.SetAnnotations(ann)
	r := refOf(u.Object)
	ri, err := g.resource(r.apiVersion, r.kind, r.namespace)
	if err != nil {
		return err
	}
	if !sync {
		_, err := ri.Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
		switch {
		case apierrors.IsAlreadyExists(err):
			g.o.Metrics.count("exists")
			return nil
		case err == nil:
			g.o.Metrics.count("created")
			g.o.Log.V(1).Info("generated", "object", r.String(), "rule", rule)
			return nil
		}
		return g.writeError(err, r, rule)
	}
	if _, err := ri.Apply(ctx, r.name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return g.writeError(err, r, rule)
	}
	g.o.Metrics.count("applied")
	g.o.Log.V(1).Info("generated (synchronized)", "object", r.String(), "rule", rule)
	return nil
}

// patch applies a rule's change to an existing object once its trigger
// is stored (or, for a deleted trigger, at once). A patch whose test of the
// resourceVersion fails (the object changed since the rule read it) is
// made again by evaluating the trigger again, and retried.
func (g *Generator) patch(ctx context.Context, t *task) error {
	r := refOf(t.obj)
	if !t.gone {
		obj, forbidden, err := g.getTrigger(ctx, t.trig)
		switch {
		case err != nil:
			return err
		case obj == nil && !forbidden:
			return fmt.Errorf("%w: %s %s/%s", errNoTrigger, t.trig.Kind, t.trig.Namespace, t.trig.Name)
		}
	}
	ri, err := g.resource(r.apiVersion, r.kind, r.namespace)
	if err != nil {
		return err
	}
	var body []byte
	body = append(body, '[')
	for i := range t.ops {
		if i > 0 {
			body = append(body, ',')
		}
		if body, err = t.ops[i].AppendJSON(body); err != nil {
			return fmt.Errorf("%w: %v", errGiveUp, err)
		}
	}
	body = append(body, ']')
	_, err = ri.Patch(ctx, r.name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case err == nil:
		g.o.Metrics.count("patched")
		g.o.Log.V(1).Info("mutated an existing object", "object", r.String(), "rule", t.rule)
		return nil
	case apierrors.IsNotFound(err):
		return nil // gone since the rule read it
	case (apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.ReasonForError(err) == metav1.StatusReasonInvalid) && !t.gone:
		// Changed since the rule read it: the change made again.
		if rerr := g.remake(ctx, t); rerr != nil {
			return rerr
		}
		return fmt.Errorf("%s changed since the rule read it: %w", r, err)
	}
	return g.writeError(err, r, t.rule)
}

// remake evaluates a patch task's trigger again and takes the change the
// rule now makes to the same object (none: the task is done).
func (g *Generator) remake(ctx context.Context, t *task) error {
	obj, _, err := g.getTrigger(ctx, t.trig)
	if err != nil || obj == nil {
		return fmt.Errorf("%w: the trigger cannot be evaluated again (%v)", errGiveUp, err)
	}
	dec, err := g.evaluate(ctx, obj)
	if err != nil {
		return err
	}
	want := refOf(t.obj)
	for _, gen := range dec.Generated {
		if gen.Patch != nil && refOf(gen.Object) == want {
			t.ops = gen.Patch // this worker alone runs t
			return nil
		}
	}
	return fmt.Errorf("%w: the rule no longer changes %s", errGiveUp, want)
}

// writeError: a refusal no retry mends (forbidden, invalid) is given up.
func (g *Generator) writeError(err error, r ref, rule string) error {
	if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		hint := ""
		if apierrors.IsForbidden(err) {
			hint = " (the operator's RBAC must grant writing this resource: docs/kyverno.md, generate rules in the cluster)"
		}
		return fmt.Errorf("%w: writing %s for %s: %v%s", errGiveUp, r, rule, err, hint)
	}
	return err
}

// remove deletes an object going with its deleted trigger: only the one
// the generator wrote for that trigger.
func (g *Generator) remove(ctx context.Context, t *task) error {
	r := refOf(t.obj)
	ri, err := g.resource(r.apiVersion, r.kind, r.namespace)
	if err != nil {
		return err
	}
	cur, err := ri.Get(ctx, r.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var trig trigger
	if json.Unmarshal([]byte(cur.GetAnnotations()[AnnotationTrigger]), &trig) != nil || !sameTrigger(trig, t.trig) {
		return nil // not the one this trigger generated
	}
	uid := cur.GetUID()
	err = ri.Delete(ctx, r.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	g.o.Metrics.count("deleted")
	g.o.Log.V(1).Info("deleted with its trigger", "object", r.String(), "rule", t.rule)
	return nil
}

// sameTrigger: the recorded trigger is the deleted one (by uid when both
// know it).
func sameTrigger(rec, gone trigger) bool {
	if rec.Kind != gone.Kind || rec.Namespace != gone.Namespace || rec.Name != gone.Name {
		return false
	}
	return rec.UID == "" || gone.UID == "" || rec.UID == gone.UID
}

// resync evaluates a changed object's trigger again and applies the
// object as its rule now makes it, when the rule synchronizes it.
func (g *Generator) resync(ctx context.Context, t *task) error {
	obj, forbidden, err := g.getTrigger(ctx, t.trig)
	switch {
	case err != nil:
		return err
	case forbidden:
		return fmt.Errorf("%w: the operator may not read the trigger %s %s/%s", errGiveUp, t.trig.Kind, t.trig.Namespace, t.trig.Name)
	case obj == nil:
		return nil // the trigger is gone: its DELETE removed what it must
	}
	dec, err := g.evaluate(ctx, obj)
	if err != nil {
		return err
	}
	want := refOf(t.obj)
	trig := t.trig
	trig.UID = string(obj.GetUID())
	for _, gen := range dec.Generated {
		if refOf(gen.Object) == want && gen.Synchronize {
			return g.write(ctx, gen.Object, true, ruleName(gen), trig)
		}
	}
	return nil // no rule synchronizes it (any more)
}
