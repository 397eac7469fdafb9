package cli

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/exepages"
)

// releaseStartPages gives back the binary's pages that only start-up read
// (package exepages) and logs what it did; when says which point of the
// start it is ("start": flags read; "ready": the first rule snapshot
// published). A failure costs nothing but the memory: it is logged.
func releaseStartPages(log logr.Logger, when string) {
	res, err := exepages.Release()
	switch {
	case errors.Is(err, errors.ErrUnsupported):
	case err != nil:
		log.Info("the binary's start-up pages were not released", "when", when, "error", err.Error())
	default:
		log.V(1).Info("released the binary's start-up pages", "when", when, "mappedBytes", res.Mapped,
			"residentFileBytesBefore", res.Before, "residentFileBytesAfter", res.After)
	}
}

// onRulesReady is the operator's runnable that does what waits for the
// first rule snapshot (do) once ready returns nil, checking every poll; on
// every replica.
type onRulesReady struct {
	ready func() error
	poll  time.Duration
	do    func()
}

// Start waits for ready, calls do, and returns (or returns when ctx ends,
// without calling do).
func (r onRulesReady) Start(ctx context.Context) error {
	t := time.NewTicker(r.poll)
	defer t.Stop()
	for r.ready() != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	r.do()
	return nil
}

// NeedLeaderElection: every replica serves admission.
func (onRulesReady) NeedLeaderElection() bool { return false }
