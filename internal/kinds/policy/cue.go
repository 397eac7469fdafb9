package policy

import (
	"fmt"
	"regexp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// cueProg is a compiled CUE validation or mutation: names are the context
// entries and variables its source names (the ones put in data).
type cueProg struct {
	field string
	prog  *cuelang.Program
	names []string
	// usesData, usesOld: the source names data or oldObject (each
	// parameter costs its JSON's compilation per request).
	usesData, usesOld bool
}

// cueProgram compiles a CUE slot.
func (c *compiler) cueProgram(r *Rule, field, src string) *cueProg {
	p, ds := c.cue.CompileExpr(&lang.Env{Name: field}, src)
	if len(ds) > 0 {
		c.diags(field, ds)
		return nil
	}
	cp := &cueProg{field: field, prog: p,
		usesData: regexp.MustCompile(`\bdata\b`).MatchString(src), usesOld: regexp.MustCompile(`\boldObject\b`).MatchString(src)}
	for _, v := range r.vars {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(v.name) + `\b`).MatchString(src) {
			cp.names = append(cp.names, v.name)
		}
	}
	return cp
}

// cueParams are a CUE program's parameters, as kinitiras passes them:
// object (obj: as the earlier mutations left it), oldObject on UPDATE, and data (object, oldObject ({} without
// one), request, and the context entries and variables the program names).
func (ev *run) cueParams(cp *cueProg, obj any) (map[string]any, error) {
	s := sharedOf(ev.h)
	params := map[string]any{cuelang.VarObject: obj}
	var old any = map[string]any{}
	if ev.h.Request().Operation == rules.Update && (cp.usesOld || cp.usesData) {
		if o := s.oldObject(ev.h); o != nil {
			old = o
			if cp.usesOld {
				params[cuelang.VarOldObject] = o
			}
		}
	}
	if !cp.usesData {
		return params, nil
	}
	data := map[string]any{"object": obj, "oldObject": old, "request": s.request(ev.h)}
	if err := ev.addVariables(data, cp.names); err != nil {
		return nil, err
	}
	params[cuelang.VarData] = data
	return params, nil
}

// addVariables puts the values of the context entries and variables
// named into m, as JSON (a CEL variable's value converted): what a CUE
// program's data and a Rego module's input.context read.
func (ev *run) addVariables(m map[string]any, names []string) error {
	for _, n := range names {
		i := ev.r.varIndex[n]
		v, err := ev.variable(i)
		if err != nil {
			return err
		}
		if ev.r.vars[i].e.cel != nil {
			v = cel.JSON(v)
		}
		m[n] = v
	}
	return nil
}

// cueValidate runs a CUE validation: false fails it with the reason.
func (ev *run) cueValidate(i int) error {
	v := &ev.r.validates[i]
	params, err := ev.cueParams(v.cue, ev.h.Object())
	var out any
	if err == nil {
		out, err = v.cue.prog.Run(ev.ctx, params, cuelang.OutputValidate)
	}
	var (
		valid  bool
		reason string
	)
	if err == nil {
		valid, reason, err = cuelang.ValidateResult(out)
	}
	ev.stepLang(stepValidation, i, v.cue.field, "cue", v.cue.prog.Source(), out, err)
	if err != nil {
		return engine.InField(v.cue.field, err)
	}
	if !valid {
		ev.failWith(i, &ev.act, reason)
	}
	return nil
}

// cuePatches runs a CUE mutation: its patches, a list of JSON-patch
// operations, applied to obj as a patch member's.
func (ev *run) cuePatches(m *mutation, obj any) (any, error) {
	params, err := ev.cueParams(m.cue, obj)
	if err != nil {
		return nil, err
	}
	out, err := m.cue.prog.Run(ev.ctx, params, cuelang.OutputPatches)
	if err != nil {
		return nil, err
	}
	ops, ok := out.([]any)
	if !ok {
		return nil, fmt.Errorf("patches must be a list of JSON-patch operations, not %v", out)
	}
	return patch.ApplyV4(ops, obj)
}
