package policy

import (
	"fmt"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/lang/conditions"
	"github.com/modwright/modwright/internal/value"
)

// condSet is a compiled block of Kyverno conditions.
type condSet struct {
	field string
	set   *conditions.Set
}

// conditions compiles a block of Kyverno conditions.
func (c *compiler) conditions(r *Rule, field string, b *v1alpha1.Conditions) *condSet {
	if c.refsFailed {
		return nil // the unresolved reference is the error
	}
	conv := func(list []v1alpha1.Condition, name string) []conditions.Condition {
		if list == nil {
			return nil // an absent any is not an empty one (which never holds)
		}
		out := make([]conditions.Condition, len(list))
		for i, cd := range list {
			f := fmt.Sprintf("%s.%s[%d]", field, name, i)
			key, ok := jsonOf(c, f+".key", rawOf(cd.Key))
			if !ok {
				c.errorf(f+".key", -1, "a condition needs a key")
			}
			val, _ := jsonOf(c, f+".value", rawOf(cd.Value))
			out[i] = conditions.Condition{Key: key, Operator: string(cd.Operator), Value: val, Message: cd.Message}
		}
		return out
	}
	blk := conditions.Block{All: conv(b.All, "all"), Any: conv(b.Any, "any")}
	if len(blk.All) == 0 && len(blk.Any) == 0 {
		c.errorf(field, -1, "conditions need at least one condition in all or any")
		return nil
	}
	set, errs := conditions.Compile(blk)
	for _, e := range errs {
		c.errorf(field+"."+e.Field, e.Pos, "%s", e.Msg)
	}
	if len(errs) > 0 {
		return nil
	}
	c.precompile(r, field, set.Expressions())
	r.noteNested(field, set.NestedExpressions())
	return &condSet{field: field, set: set}
}

// eval decides the block: its conditions hold or not; msg is Kyverno's
// message for a block that does not hold.
func (ev *run) evalConds(cs *condSet) (ok bool, msg string, err error) {
	prev := ev.at
	ev.at = cs.field
	defer func() { ev.at = prev }()
	var step func(conditions.Step)
	if ev.tr != nil {
		step = func(s conditions.Step) {
			ev.tr.Conditions = append(ev.tr.Conditions, Step{Field: cs.field + "." + s.Field, Lang: "conditions",
				Source: fmt.Sprintf("%s %s %s", value.Text(s.Key), s.Operator, value.Text(s.Value)), Value: s.Result, Err: s.Err})
		}
	}
	ok, msg, err = cs.set.Eval(ev.ctx, ev, step)
	if err != nil {
		return false, "", fmt.Errorf("%s: %w", cs.field, err)
	}
	return ok, msg, nil
}
