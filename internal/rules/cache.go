package rules

import (
	"regexp"
	"sync"

	"github.com/modwright/modwright/internal/jsonpath"
)

// Compiled select expressions and regular expressions are immutable and
// safe for concurrent use, and rule sets repeat them a lot ($.kind,
// $.metadata.labels.app, the same image regex in every rule of a team):
// they are compiled once per process and shared among rules. Only
// successful compilations are kept, and a cache that reaches cacheLimit
// entries starts over, so that reloading ever-changing rule sets cannot
// grow it without bound.
var (
	exprCache  = compileCache[*jsonpath.Expr]{compile: jsonpath.Parse}
	regexCache = compileCache[*regexp.Regexp]{compile: regexp.Compile}
)

const cacheLimit = 4096

type compileCache[T any] struct {
	compile func(string) (T, error)
	mu      sync.RWMutex
	m       map[string]T
}

func (c *compileCache[T]) get(src string) (T, error) {
	c.mu.RLock()
	v, ok := c.m[src]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := c.compile(src)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheLimit {
		c.m = make(map[string]T)
	}
	c.m[src] = v
	c.mu.Unlock()
	return v, nil
}
