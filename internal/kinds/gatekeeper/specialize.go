package gatekeeper

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/modwright/modwright/internal/lang/rego"
)

// MaxSpecialized is how many live constraints of one template run its
// Rego specialized for their parameters: each costs about 30-50 KB and a
// millisecond or two at load, and saves a review a half to two thirds of
// the template's time; a template's further constraints run its Rego as
// compiled (2-3 KB each).
const MaxSpecialized = 16

// specialization is a template's budget of specialized constraints.
type specialization struct {
	// live counts the specialized constraints not yet collected.
	live atomic.Int32
	// off: a specialization failed or ran out of its budget (the template
	// is not worth specializing), or the template reads data.inventory
	// (which the partial evaluation does not see).
	off atomic.Bool
}

// specialize gives c its template's Rego specialized for its parameters
// (rego's Specialize: what depends on them alone is evaluated once here,
// not per review) while the template's budget allows; c keeps the Rego
// as compiled otherwise.
func (t *Template) specialize(c *Constraint) {
	s := t.spec
	if t.rego == nil || t.celCode != nil || t.inventory || s.off.Load() {
		return
	}
	if s.live.Add(1) > MaxSpecialized {
		s.live.Add(-1)
		return
	}
	p, ok := t.rego.Specialize(context.Background(), []string{"parameters"}, []rego.Value{c.paramsVal}, []string{"review"})
	if !ok {
		s.live.Add(-1)
		s.off.Store(true)
		return
	}
	c.prog = p
	runtime.AddCleanup(c, func(s *specialization) { s.live.Add(-1) }, s)
}

// ConstantVariables is the number of the template's CEL variables the
// constraint computed when it loaded (they read only its parameters).
func (c *Constraint) ConstantVariables() int {
	n := 0
	for _, v := range c.celConst {
		if v.done {
			n++
		}
	}
	return n
}
