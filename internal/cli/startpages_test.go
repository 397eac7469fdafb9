package cli

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestOnRulesReady: the operator's runnable waits for the rules, does what
// waited for them once, then returns; a cancelled context ends the wait
// without doing it; every replica runs it.
func TestOnRulesReady(t *testing.T) {
	var polls, done atomic.Int32
	r := onRulesReady{
		ready: func() error {
			if polls.Add(1) < 3 {
				return errors.New("not yet")
			}
			return nil
		},
		poll: time.Millisecond,
		do:   func() { done.Add(1) },
	}
	returned := make(chan error, 1)
	go func() { returned <- r.Start(context.Background()) }()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return once ready")
	}
	if got := polls.Load(); got != 3 {
		t.Errorf("ready asked %d times, want 3", got)
	}
	if got := done.Load(); got != 1 {
		t.Errorf("done %d times once ready, want 1", got)
	}
	if r.NeedLeaderElection() {
		t.Error("NeedLeaderElection: every replica serves admission")
	}

	never := onRulesReady{ready: func() error { return errors.New("never") }, poll: time.Millisecond, do: func() { done.Add(1) }}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { returned <- never.Start(ctx) }()
	cancel()
	select {
	case err := <-returned:
		if err != nil {
			t.Errorf("Start after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return when its context ended")
	}
	if got := done.Load(); got != 1 {
		t.Errorf("done %d times in all, want 1 (not when the context ended)", got)
	}
}
