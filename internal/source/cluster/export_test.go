package cluster

// Cached reports how many trees the resolver holds.
func (r *Resolver) Cached() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.trees)
}
