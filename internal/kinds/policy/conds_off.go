//go:build !kyvernoconds

package policy

import (
	"github.com/modwright/modwright/api/v1alpha1"
)

// condSet is a compiled block of Kyverno conditions (not built yet: the
// conditions package lands next).
type condSet struct{ field string }

func (c *compiler) conditions(_ *Rule, field string, _ *v1alpha1.Conditions) *condSet {
	c.errorf(field, -1, "Kyverno conditions are not supported yet")
	return nil
}

func (ev *run) evalConds(cs *condSet) (bool, string, error) { return false, "", nil }
