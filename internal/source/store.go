package source

import (
	"sync/atomic"

	"github.com/modwright/modwright/internal/engine"
)

// Store holds the serving snapshot. Readers get it with one atomic load;
// writers publish whole new snapshots, never modify one in place.
type Store struct {
	p atomic.Pointer[engine.Snapshot]
}

// Current returns the serving snapshot, or nil before the first Publish.
func (s *Store) Current() *engine.Snapshot { return s.p.Load() }

// Publish makes snap the serving snapshot.
func (s *Store) Publish(snap *engine.Snapshot) { s.p.Store(snap) }

// Ready reports whether a snapshot has been published.
func (s *Store) Ready() bool { return s.p.Load() != nil }
