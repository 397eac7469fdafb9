package cluster

import (
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// responses keeps the responses of external reads (API, HTTP) by key for
// a time, and makes concurrent identical reads share one. Errors are not
// kept. The zero value is ready to use.
type responses[V any] struct {
	group   singleflight.Group
	mu      sync.Mutex
	entries map[string]response[V]
}

type response[V any] struct {
	v       V
	expires time.Time
}

// maxCachedResponses bounds the responses kept; beyond it the expired
// ones are dropped, then the cache is emptied.
const maxCachedResponses = 4096

// get returns key's response while it is younger than ttl, else read's
// (kept for ttl; 0: not kept, though concurrent reads still share it).
func (c *responses[V]) get(key string, ttl time.Duration, now func() time.Time, read func() (V, error)) (V, error) {
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
			c.keep(key, v, now().Add(ttl), now())
		}
		return v, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
}

func (c *responses[V]) keep(key string, v V, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]response[V]{}
	}
	if len(c.entries) >= maxCachedResponses {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCachedResponses {
			clear(c.entries)
		}
	}
	c.entries[key] = response[V]{v: v, expires: expires}
}
