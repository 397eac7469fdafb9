// Package gctune bounds how much the heap may grow between two garbage
// collections, whatever the size of the live heap.
//
// The collector's percent (serve --gc-percent, 400 by default) lets the
// heap grow to five times what the last collection found live: a few
// megabytes more for an admission webhook's small live heap, for fewer
// collections and a shorter latency tail. With a large live heap (the
// relationship graph of a big cluster, a background scan's results) the same
// percent asks for hundreds of megabytes the heap does not need, and a
// process with GOMEMLIMIT then holds its limit's worth of memory. A Tuner
// lowers the percent after each collection so that the heap grows by at most
// a fixed headroom over what is live (and sets it back as the live heap
// shrinks); GOMEMLIMIT still applies on top.
//
// It owns the collector's percent while it runs, and knows nothing of the
// project.
package gctune
