package auditor

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
)

// watch starts a watch of each resource of the last scan from the
// resourceVersion its list was read at, marking the namespaces whose
// objects change; a watch that lost events (its resourceVersion expired)
// asks for a full scan. It returns the function that stops them.
func (a *Auditor) watch(ctx context.Context) context.CancelFunc {
	if a.o.Watch == nil || a.last == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	for _, r := range a.last.resources {
		go a.watchResource(ctx, r)
	}
	return cancel
}

func (a *Auditor) watchResource(ctx context.Context, r resource) {
	rv := r.rv
	for ctx.Err() == nil {
		w, err := a.o.Watch(ctx, r.gvr, rv)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				a.lost()
				return
			}
			if apierrors.IsForbidden(err) {
				a.o.Log.Error(err, "watching for changes is not allowed; changes wait for the next full scan", "resource", r.gvr.String())
				return
			}
			a.o.Log.Error(err, "watching for changes; retrying", "resource", r.gvr.String())
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object)) {
					a.lost()
					w.Stop()
					return
				}
				continue
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			rv = m.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				a.Changed(m.GetNamespace())
			}
		}
		w.Stop()
		select { // the server ended the watch: again from rv, not at once
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// lost asks for a full scan: a watch missed changes.
func (a *Auditor) lost() {
	a.mu.Lock()
	a.full = true
	a.mu.Unlock()
}
