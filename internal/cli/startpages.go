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

// startPagesRelease is the operator's runnable that releases the start-up
// pages once the first rule snapshot is published (ready returns nil),
// checking every poll; on every replica.
type startPagesRelease struct {
	ready func() error
	poll  time.Duration
	log   logr.Logger
}

// Start waits for ready, releases, and returns (or returns when ctx ends).
func (r startPagesRelease) Start(ctx context.Context) error {
	t := time.NewTicker(r.poll)
	defer t.Stop()
	for r.ready() != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	releaseStartPages(r.log, "ready")
	return nil
}

// NeedLeaderElection: every replica serves admission.
func (startPagesRelease) NeedLeaderElection() bool { return false }
