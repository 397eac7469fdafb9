package policy

import (
	"fmt"
	"regexp"
	"strconv"

	jsonpatchv4 "gopkg.in/evanphx/json-patch.v4"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
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
	p, ds := cuelang.Language{}.CompileExpr(&lang.Env{Name: field}, src)
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
	for _, n := range cp.names {
		i := ev.r.varIndex[n]
		v, err := ev.variable(i)
		if err != nil {
			return nil, err
		}
		if ev.r.vars[i].e.cel != nil {
			v = cel.JSON(v)
		}
		data[n] = v
	}
	params[cuelang.VarData] = data
	return params, nil
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
	if len(ops) == 0 {
		return obj, nil
	}
	if next, ok, err := fastPatches(ops, obj); ok {
		return next, err
	}
	return applyV4(ops, obj)
}

// applyV4 applies a program's patches as kinitiras does, with
// gopkg.in/evanphx/json-patch.v4 (whose replace of a missing object member
// adds it).
func applyV4(ops []any, obj any) (any, error) {
	b, err := value.Encode(ops)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatchv4.DecodePatch(b)
	if err != nil {
		return nil, fmt.Errorf("patches: %w", err)
	}
	out, err := p.Apply(mustEncode(obj))
	if err != nil {
		return nil, fmt.Errorf("patches: %w", err)
	}
	return value.Decode(out)
}

// fastPatches applies add, replace and remove operations to a
// copy-on-write document over obj, without encoding it, when json-patch v4
// (kinitiras') would apply them the same way; ok is false otherwise (the
// caller applies the list with v4).
func fastPatches(ops []any, obj any) (any, bool, error) {
	list := make([]patch.Operation, 0, len(ops))
	for _, o := range ops {
		m, _ := o.(map[string]any)
		op, _ := m["op"].(string)
		path, _ := m["path"].(string)
		switch patch.OpType(op) {
		case patch.Add, patch.Replace, patch.Remove:
		default:
			return nil, false, nil
		}
		ptr, err := patch.ParsePointer(path)
		if err != nil {
			return nil, false, nil
		}
		list = append(list, patch.Operation{Op: patch.OpType(op), Path: ptr, Value: m["value"]})
	}
	d := patch.NewDoc(obj)
	for _, op := range list {
		// The Doc is lenient where v4 fails (a missing parent, a missing
		// target of remove): only an operation v4 applies alike takes this
		// way; otherwise the list is applied with v4, which fails as
		// kinitiras' does.
		if !strictOK(d.Root(), op) {
			return nil, false, nil
		}
		if err := d.Apply(op); err != nil {
			return nil, false, nil
		}
	}
	return d.Root(), true, nil
}

// strictOK reports whether json-patch v4 applies op to root as the Doc
// does: the parent exists (an object, or an array with the index in range
// or "-" for add); the target of a remove exists, a replace's too unless
// it is an object member (v4 adds it); no negative index.
func strictOK(root any, op patch.Operation) bool {
	if len(op.Path) == 0 {
		return false
	}
	cur := root
	last := len(op.Path) - 1
	for i, tok := range op.Path {
		final := i == last
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if final {
				return ok || op.Op != patch.Remove
			}
			if !ok {
				return false
			}
			cur = v
		case []any:
			if tok == "-" {
				return final && op.Op == patch.Add
			}
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || strconv.Itoa(n) != tok {
				return false
			}
			if final {
				if op.Op == patch.Add {
					return n <= len(c)
				}
				return n < len(c)
			}
			if n >= len(c) {
				return false
			}
			cur = c[n]
		default:
			return false
		}
	}
	return false
}

func mustEncode(v any) []byte {
	b, _ := value.Encode(v)
	return b
}
