package packs

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// DeriveFunc derives an object's edges (Router.Derive).
type DeriveFunc func(ctx context.Context, obj map[string]any) ([]Edge, []error)

// Cache keeps the edges derived for an object, keyed on its uid, its
// resourceVersion and the hash of the rules that derived them, in a
// bounded LRU: an object seen again unchanged is not evaluated again, and
// concurrent callers for one key evaluate once. Results with errors are
// not kept. Objects without uid or resourceVersion (offline) are not kept
// either. It is safe for concurrent use.
type Cache struct {
	derive DeriveFunc
	hash   string
	max    int

	group        singleflight.Group
	mu           sync.Mutex
	order        *list.List // of *cached, most recent first
	entries      map[string]*list.Element
	hits, misses atomic.Int64
}

type cached struct {
	key   string
	edges []Edge
}

type derived struct {
	edges []Edge
	errs  []error
}

// NewCache caches derive's results for rules of hash (Router.Hash), at
// most max of them (0: 100,000).
func NewCache(derive DeriveFunc, hash string, max int) *Cache {
	if max <= 0 {
		max = 100000
	}
	return &Cache{derive: derive, hash: hash, max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// Stats are the hits and misses so far.
func (c *Cache) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// Derive is obj's edges, from the cache when its uid, resourceVersion and
// the rules are the same. The edges returned are shared: do not modify
// them.
func (c *Cache) Derive(ctx context.Context, obj map[string]any) ([]Edge, []error) {
	md, _ := obj["metadata"].(map[string]any)
	uid, _ := md["uid"].(string)
	rv, _ := md["resourceVersion"].(string)
	if uid == "" || rv == "" {
		c.misses.Add(1)
		return c.derive(ctx, obj)
	}
	key := uid + "\x00" + rv + "\x00" + c.hash
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		edges := el.Value.(*cached).edges
		c.mu.Unlock()
		c.hits.Add(1)
		return edges, nil
	}
	c.mu.Unlock()
	c.misses.Add(1)
	v, _, _ := c.group.Do(key, func() (any, error) {
		edges, errs := c.derive(ctx, obj)
		if len(errs) == 0 {
			c.keep(key, edges)
		}
		return derived{edges, errs}, nil
	})
	d := v.(derived)
	return d.edges, d.errs
}

func (c *Cache) keep(key string, edges []Edge) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; ok {
		return
	}
	c.entries[key] = c.order.PushFront(&cached{key: key, edges: edges})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cached).key)
	}
}

// Hash identifies the rules a router runs: its modules' keys and sources.
func (r *Router) Hash() string { return r.hash }

func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
