package policy

import (
	"fmt"
	"sync"
)

// MaxNested is the most programs a NestedCache keeps; past it, a nested
// variable's text is compiled each time it is rendered.
const MaxNested = 1024

// NestedCache holds the JMESPath programs of nested {{ }} variables, whose
// text is known only when the variable around them renders (per request):
// each text is compiled once and kept, up to MaxNested. Every other
// expression of a policy is compiled when it loads, into its immutable
// Rule; this cache lives outside the rules, one per Kind (WithNestedCache),
// and is safe for concurrent use.
type NestedCache struct {
	mu    sync.Mutex
	progs map[string]*jpExpr
}

// NewNestedCache returns an empty cache.
func NewNestedCache() *NestedCache { return &NestedCache{} }

// get compiles src, or returns the program compiled before.
func (c *NestedCache) get(src string) (*jpExpr, error) {
	c.mu.Lock()
	e := c.progs[src]
	c.mu.Unlock()
	if e != nil {
		return e, nil
	}
	e, ds := compileJP(src)
	if len(ds) > 0 {
		return nil, fmt.Errorf("variable {{ %s }}: %s", src, ds[0].Msg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.progs == nil {
		c.progs = map[string]*jpExpr{}
	}
	if len(c.progs) < MaxNested {
		c.progs[src] = e
	}
	return e, nil
}
