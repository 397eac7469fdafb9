package source

import (
	"sync/atomic"

	"github.com/modwright/modwright/internal/rules"
)

// Store holds the serving snapshot. Readers get it with one atomic load;
// writers publish whole new snapshots, never modify one in place.
type Store struct {
	p atomic.Pointer[rules.Snapshot]
}

// Current returns the serving snapshot, or nil before the first Publish.
func (s *Store) Current() *rules.Snapshot { return s.p.Load() }

// Publish makes snap the serving snapshot.
func (s *Store) Publish(snap *rules.Snapshot) { s.p.Store(snap) }

// Ready reports whether a snapshot has been published.
func (s *Store) Ready() bool { return s.p.Load() != nil }
