package cluster

import (
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// responses keeps the responses of external reads (API, HTTP, registries)
// by key for a time, and makes concurrent identical reads share one.
// Errors are not kept. The zero value is ready to use.
type responses[V any] struct {
	group   singleflight.Group
	mu      sync.Mutex
	entries map[string]response[V]
	bytes   int // of the entries kept: their keys' and responses' sizes
}

type response[V any] struct {
	v       V
	expires time.Time
	size    int
}

// maxCachedResponses and maxCachedBytes bound the responses kept (what a
// rule reads is chosen by the objects it reads for: many distinct keys, or
// large responses, must not grow the cache without bound); beyond either
// the expired ones are dropped, then the cache is emptied. A response
// larger than maxCachedBytes/8 is not kept.
const (
	maxCachedResponses = 4096
	maxCachedBytes     = 64 << 20
)

// get returns key's response while it is younger than ttl, else read's
// (kept for ttl; 0: not kept, though concurrent reads still share it);
// size is a response's size in bytes, as read.
func (c *responses[V]) get(key string, ttl time.Duration, now func() time.Time, read func() (V, error), size func(V) int) (V, error) {
	if ttl > 0 {
		c.mu.Lock()
		e, ok := c.entries[key]
		c.mu.Unlock()
		if ok && now().Before(e.expires) {
			return e.v, nil
		}
	}
	v, err, _ := c.group.Do(key, func() (any, error) {
		v, err := read()
		if err != nil {
			return nil, err
		}
		if ttl > 0 {
			c.keep(key, v, len(key)+size(v), now().Add(ttl), now())
		}
		return v, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
}

func (c *responses[V]) keep(key string, v V, size int, expires, now time.Time) {
	if size > maxCachedBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]response[V]{}
	}
	if old, ok := c.entries[key]; ok {
		c.bytes -= old.size
		delete(c.entries, key)
	}
	full := func() bool { return len(c.entries) >= maxCachedResponses || c.bytes+size > maxCachedBytes }
	if full() {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				c.bytes -= e.size
				delete(c.entries, k)
			}
		}
		if full() {
			clear(c.entries)
			c.bytes = 0
		}
	}
	c.entries[key] = response[V]{v: v, expires: expires, size: size}
	c.bytes += size
}
