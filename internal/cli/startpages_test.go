package cli

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestStartPagesRelease: the operator's runnable waits for the rules, then
// returns; a cancelled context ends the wait; every replica runs it.
func TestStartPagesRelease(t *testing.T) {
	var polls atomic.Int32
	r := startPagesRelease{
		ready: func() error {
			if polls.Add(1) < 3 {
				return errors.New("not yet")
			}
			return nil
		},
		poll: time.Millisecond,
		log:  logr.Discard(),
	}
	done := make(chan error, 1)
	go func() { done <- r.Start(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return once ready")
	}
	if got := polls.Load(); got != 3 {
		t.Errorf("ready asked %d times, want 3", got)
	}
	if r.NeedLeaderElection() {
		t.Error("NeedLeaderElection: every replica serves admission")
	}

	never := startPagesRelease{ready: func() error { return errors.New("never") }, poll: time.Millisecond, log: logr.Discard()}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- never.Start(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return when its context ended")
	}
}
