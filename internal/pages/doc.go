// Package pages lists a resource's objects one page at a time: through a
// REST client, each page's body bounded and decoded with modwright's own
// JSON decoder into the engine's tree (Raw), or through a dynamic client
// (Dynamic); a Pager walks the pages, asking again with fewer objects for
// a page over the bound. The background scan (internal/auditor) and the
// graph's informers (internal/source/cluster) list through it.
//
// It knows the API server's list paths and list shape, not rule kinds,
// rules or the engine.
package pages
