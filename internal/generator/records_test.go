package generator

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// TestRecords: a queued task is recorded (a GenerateRequest naming the
// object, the trigger and the rule) until it is done, and its record goes
// with it.
func TestRecords(t *testing.T) {
	c := newFake(object("v1", "Namespace", "", "team", "u-1"))
	created := make(chan *unstructured.Unstructured, 4)
	c.PrependReactor("create", "generaterequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
		created <- a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		return false, nil, nil
	})
	// The task waits until its record is written.
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard(), TriggerDelay: 200 * time.Millisecond, RecordNamespace: "modwright-system", Replica: "pod-1"})
	req := engine.Request{Operation: rules.Create, Name: "team", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Phases: engine.Validate}
	g.Decided(req, &engine.Decision{Generated: []engine.Generated{generated("made", false)}})
	run(t, g, func() bool {
		_, err := c.Resource(configMaps).Namespace("team").Get(context.Background(), "made", metav1.GetOptions{})
		return err == nil
	})
	var rec *unstructured.Unstructured
	select {
	case rec = <-created:
	default:
		t.Fatal("no record written")
	}
	tk, err := taskOf(rec)
	if err != nil {
		t.Fatal(err)
	}
	if tk.action != actionCreate || refOf(tk.obj).String() != "v1/ConfigMap team/made" || tk.sync || tk.rule != "ClusterPolicy p rule r" ||
		tk.trig.Kind != "Namespace" || tk.trig.Name != "team" || rec.GetNamespace() != "modwright-system" {
		t.Errorf("record %v", rec.Object)
	}
	if r, _ := rec.Object["spec"].(map[string]any); r["replica"] != "pod-1" {
		t.Errorf("replica %v", r["replica"])
	}
	_, err = c.Resource(GenerateRequests).Namespace("modwright-system").Get(context.Background(), rec.GetName(), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the record of done work is still there: %v", err)
	}
}

// TestRecordsMissing: without the GenerateRequest resource the work goes
// on unrecorded.
func TestRecordsMissing(t *testing.T) {
	c := newFake(object("v1", "Namespace", "", "team", "u-1"))
	c.PrependReactor("create", "generaterequests", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "modwright.io", Resource: "generaterequests"}, "")
	})
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard(), TriggerDelay: time.Millisecond, RecordNamespace: "modwright-system"})
	req := engine.Request{Operation: rules.Create, Name: "team", Kind: engine.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Phases: engine.Validate}
	g.Decided(req, &engine.Decision{Generated: []engine.Generated{generated("made", false)}})
	run(t, g, func() bool {
		_, err := c.Resource(configMaps).Namespace("team").Get(context.Background(), "made", metav1.GetOptions{})
		return err == nil && g.records.off.Load()
	})
}

// TestRecover: the leader takes up a stale record: the trigger evaluated
// again and the object its rule makes written, the record deleted; a
// record of a deleted trigger, or of an object the rules no longer make,
// is deleted; a fresh record is left to its replica.
func TestRecover(t *testing.T) {
	const ns = "modwright-system"
	old := metav1.NewTime(time.Now().Add(-time.Hour))
	record := func(objName, trigName string, created metav1.Time) *unstructured.Unstructured {
		tk := &task{action: actionCreate, rule: "ClusterPolicy p rule existing",
			obj:  map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": trigName, "name": objName}},
			trig: trigger{APIVersion: "v1", Kind: "Namespace", Name: trigName}}
		u := (&records{namespace: ns, replica: "gone-pod"}).recordOf("create "+refOf(tk.obj).String(), tk)
		u.SetCreationTimestamp(created)
		return u
	}
	stale := record("existing", "a", old)
	noTrigger := record("existing", "deleted", old)
	notMade := record("other", "a", old)
	fresh := record("existing", "b", metav1.Now())
	c := newFake(object("v1", "Namespace", "", "a", "u-a"), object("v1", "Namespace", "", "b", "u-b"), stale, noTrigger, notMade, fresh)
	evals := 0
	rule := &namespaceRule{info: engine.RuleInfo{Kind: "ClusterPolicy", Key: "p", Phase: engine.Validate,
		Index: engine.IndexKeys{AnyNamespace: true, Kinds: []string{"Namespace"}, Operations: engine.OpSetOf(rules.Create)}}, evals: &evals}
	g := NewGenerator(Options{Client: c, Mapper: mapper(), Log: logr.Discard(), RecordNamespace: ns, Replica: "leader",
		Snapshots: &staticSnapshots{engine.NewSnapshot([]engine.Rule{rule})}})
	r := &Recover{Generator: g, Log: logr.Discard()}
	n, err := r.Pass(context.Background())
	if err != nil || n != 3 {
		t.Fatalf("took up %d records (%v), want the 3 stale ones", n, err)
	}
	gets := func(name string) error {
		_, err := c.Resource(GenerateRequests).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err
	}
	for _, gone := range []*unstructured.Unstructured{noTrigger, notMade} {
		if err := gets(gone.GetName()); !apierrors.IsNotFound(err) {
			t.Errorf("record %s of no work left: %v", gone.GetName(), err)
		}
	}
	if err := gets(fresh.GetName()); err != nil {
		t.Errorf("a fresh record was taken: %v", err)
	}
	if n, _ := r.Pass(context.Background()); n != 0 {
		t.Errorf("a record queued here taken up again (%d)", n)
	}
	run(t, g, func() bool {
		_, err := c.Resource(configMaps).Namespace("a").Get(context.Background(), "existing", metav1.GetOptions{})
		return err == nil && apierrors.IsNotFound(gets(stale.GetName()))
	})
	if _, err := c.Resource(configMaps).Namespace("b").Get(context.Background(), "existing", metav1.GetOptions{}); err == nil {
		t.Error("the fresh record's work was done by the leader")
	}
}
