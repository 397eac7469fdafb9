package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/source/cluster"
)

// Compiler is what the rule status writer reads: the rule source's
// compiled rules.
type Compiler interface {
	Compiled(id cluster.RuleID, uid types.UID, generation int64) (cluster.Compiled, bool)
}

// RuleStatusWriter writes, on the leader, the status of the rules of the
// kinds that have it written in their peer's shape (kinds.StatusWritten:
// Gatekeeper's constraints, whose kinds come and go with their templates
// and have no StatusReconciler): after each rule the rule source compiles
// (Changed, its OnChange), whether it compiled and why not. It retries
// failures with a backoff.
type RuleStatusWriter struct {
	// Client reads rules (from the manager's cache) and writes status.
	Client client.Client
	Kinds  []kinds.Kind
	Source Compiler
	// ID names this replica in the status (its pod name).
	ID  string
	Log logr.Logger
	// RetryDelay is the first wait after a failure (doubled up to a
	// minute); zero means 1 s.
	RetryDelay time.Duration

	once    sync.Once
	mu      sync.Mutex
	pending map[cluster.RuleID]struct{}
	wake    chan struct{}
}

var (
	_ manager.Runnable               = (*RuleStatusWriter)(nil)
	_ manager.LeaderElectionRunnable = (*RuleStatusWriter)(nil)
)

// NeedLeaderElection is true: one replica writes.
func (w *RuleStatusWriter) NeedLeaderElection() bool { return true }

func (w *RuleStatusWriter) init() {
	w.once.Do(func() {
		w.pending = map[cluster.RuleID]struct{}{}
		w.wake = make(chan struct{}, 1)
	})
}

// Changed queues the status of the rules given (of any kind: the others
// are left alone); it never blocks.
func (w *RuleStatusWriter) Changed(ids []cluster.RuleID) {
	w.init()
	w.mu.Lock()
	for _, id := range ids {
		if w.kind(id) != nil {
			w.pending[id] = struct{}{}
		}
	}
	w.mu.Unlock()
	wakeUp(w.wake)
}

// Start writes until ctx ends.
func (w *RuleStatusWriter) Start(ctx context.Context) error {
	w.init()
	return runLoop(ctx, w.wake, w.RetryDelay, w.Log, "writing rules' status failed; retrying", w.flush)
}

// flush writes the pending rules' status; the ones that failed stay
// pending.
func (w *RuleStatusWriter) flush(ctx context.Context) error {
	w.mu.Lock()
	ids := make([]cluster.RuleID, 0, len(w.pending))
	for id := range w.pending {
		ids = append(ids, id)
	}
	clear(w.pending)
	w.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := w.write(ctx, id); err != nil {
			errs = append(errs, err)
			w.mu.Lock()
			w.pending[id] = struct{}{}
			w.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// write writes one rule's status, if its compiled form is the stored
// generation's (a newer one comes as another change).
func (w *RuleStatusWriter) write(ctx context.Context, id cluster.RuleID) error {
	k := w.kind(id)
	if k == nil {
		return nil
	}
	gvk := schema.GroupVersionKind{Group: k.Group(), Version: k.Versions()[0], Kind: id.Kind}
	if _, owner := k.(kinds.GroupOwner); !owner {
		gvk = cluster.GVK(k)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	ns, name, ok := strings.Cut(id.Key, "/")
	if !ok {
		ns, name = "", id.Key
	}
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading %s %s: %w", id.Kind, id.Key, err)
	}
	c, ok := w.Source.Compiled(id, u.GetUID(), u.GetGeneration())
	if !ok {
		return nil
	}
	m, err := cluster.Manifest(u)
	if err != nil {
		return err
	}
	st := k.(kinds.StatusWritten).RuleStatus(m, w.ID, c.Err)
	if err := patchStatus(ctx, w.Client, gvk, m, st); err != nil {
		return fmt.Errorf("writing the status of %s %s: %w", id.Kind, id.Key, err)
	}
	return nil
}

// kind is the StatusWritten kind of a rule, or nil.
func (w *RuleStatusWriter) kind(id cluster.RuleID) kinds.Kind {
	for _, k := range w.Kinds {
		if k.Group() != id.Group {
			continue
		}
		_, owner := k.(kinds.GroupOwner)
		if _, ok := k.(kinds.StatusWritten); ok && (owner || k.Name() == id.Kind) {
			return k
		}
	}
	return nil
}
