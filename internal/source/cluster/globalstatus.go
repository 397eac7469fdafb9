package cluster

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/modwright/modwright/internal/rules"
)

// GlobalsStatus writes the status of Kyverno's GlobalContextEntries as
// Kyverno does: a Ready condition (Succeeded, or Failed with the entry's
// error) and, for an apiCall entry, lastRefreshTime. It runs on the
// elected leader (one writer); it looks at the entries every Interval and
// writes a status only when it changed.
type GlobalsStatus struct {
	Globals  *Globals
	Client   dynamic.Interface
	Log      logr.Logger
	Interval time.Duration // default 5 s

	written map[string]GlobalState
}

// NeedLeaderElection: one writer of the entries' status.
func (*GlobalsStatus) NeedLeaderElection() bool { return true }

// Start writes the status until ctx is done.
func (s *GlobalsStatus) Start(ctx context.Context) error {
	interval := s.Interval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	s.written = map[string]GlobalState{}
	wait.UntilWithContext(ctx, s.sync, interval)
	return nil
}

// sync writes the status of each entry whose state changed.
func (s *GlobalsStatus) sync(ctx context.Context) {
	gvr, states := s.Globals.States()
	if gvr.Resource == "" {
		return
	}
	for name := range s.written {
		if _, ok := states[name]; !ok {
			delete(s.written, name)
		}
	}
	for name, st := range states {
		if w, ok := s.written[name]; ok && w.Generation == st.Generation && errText(w.Err) == errText(st.Err) && w.Refreshed.Equal(st.Refreshed) {
			continue
		}
		if err := s.write(ctx, gvr, name, st); err != nil {
			s.Log.V(1).Info("GlobalContextEntry status not written", "name", name, "error", err.Error())
			continue
		}
		s.written[name] = st
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// write sets an entry's status.
func (s *GlobalsStatus) write(ctx context.Context, gvr schema.GroupVersionResource, name string, st GlobalState) error {
	ri := s.Client.Resource(gvr)
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if u.GetGeneration() != st.Generation {
		return nil // a newer spec: its state comes next
	}
	var status struct {
		Conditions      []metav1.Condition `json:"conditions,omitempty"`
		LastRefreshTime *metav1.Time       `json:"lastRefreshTime,omitempty"`
	}
	if raw, ok := u.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status)
	}
	c := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", ObservedGeneration: st.Generation}
	if st.Err != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "Failed", rules.Truncate(st.Err.Error(), rules.MaxConditionMessage)
	}
	meta.SetStatusCondition(&status.Conditions, c)
	if !st.Refreshed.IsZero() {
		t := metav1.NewTime(st.Refreshed)
		status.LastRefreshTime = &t
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return err
	}
	u.Object["status"] = obj
	_, err = ri.UpdateStatus(ctx, &unstructured.Unstructured{Object: u.Object}, metav1.UpdateOptions{FieldManager: "modwright"})
	return err
}
