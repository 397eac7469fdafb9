package policy

import (
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/value"
)

// staticPatch is a mutation's patch: RFC 6902 operations whose values
// may hold {{ }} variables, applied as Kyverno applies its
// patchesJson6902 (github.com/evanphx/json-patch/v5).
type staticPatch struct {
	text  string // "add /a; remove /b", for explanations
	doc   *subst.Document
	fixed jsonpatch.Patch // decoded once when ops holds no variable
}

// staticPatch compiles a mutation's patch: paths are JSON pointers with no
// variables (as Kyverno), values may hold them.
func (c *compiler) staticPatch(r *Rule, field string, ops []v1alpha1.PatchOperation) *staticPatch {
	if len(ops) == 0 {
		c.errorf(field, -1, "a patch needs at least one operation")
		return nil
	}
	list := make([]any, len(ops))
	ok := true
	for i, op := range ops {
		f := fmt.Sprintf("%s[%d]", field, i)
		m := map[string]any{"op": op.Op, "path": op.Path}
		for _, p := range []struct{ name, v string }{{"path", op.Path}, {"from", op.From}} {
			if strings.Contains(p.v, "{{") || strings.Contains(p.v, "$(") {
				c.errorf(f+"."+p.name, strings.Index(p.v, "{{"), "variables are not allowed in a patch's %s (as Kyverno): only values are substituted", p.name)
				ok = false
			} else if _, err := patch.ParsePointer(p.v); err != nil && (p.name == "path" || p.v != "") {
				c.errorf(f+"."+p.name, -1, "%v", err)
				ok = false
			}
		}
		switch op.Op {
		case "add", "replace", "test":
			if op.Value == nil {
				c.errorf(f+".value", -1, "%s needs a value", op.Op)
				ok = false
			}
		case "move", "copy":
			if op.From == "" {
				c.errorf(f+".from", -1, "%s needs from", op.Op)
				ok = false
			}
			m["from"] = op.From
		case "remove":
		default:
			c.errorf(f+".op", -1, "unknown operation %q: use add, remove, replace, move, copy or test", op.Op)
			ok = false
		}
		if op.Value != nil {
			v, has := jsonOf(c, f+".value", op.Value.Raw)
			if has {
				m["value"] = v
			}
		}
		list[i] = m
	}
	if !ok {
		return nil
	}
	texts := make([]string, len(ops))
	for i, op := range ops {
		texts[i] = op.Op + " " + op.Path
	}
	sp := &staticPatch{doc: c.document(r, field, list), text: strings.Join(texts, "; ")}
	if sp.doc == nil {
		return nil
	}
	if !sp.doc.HasVariables() {
		// The operations as substituted: escapes removed ("\{{ x }}" is
		// the text "{{ x }}", as Kyverno gives it).
		p, err := decodePatch(sp.doc.Static())
		if err != nil {
			c.errorf(field, -1, "%v", err)
			return nil
		}
		sp.fixed = p
	}
	return sp
}

func decodePatch(ops any) (jsonpatch.Patch, error) {
	b, err := value.Encode(ops)
	if err != nil {
		return nil, err
	}
	return jsonpatch.DecodePatch(b)
}

// apply substitutes the values and applies the patch to obj (not
// modified); the result is a new tree.
func (ev *run) applyPatch(field string, sp *staticPatch, obj any) (any, error) {
	p := sp.fixed
	if p == nil {
		ops, err := ev.substitute(field, sp.doc)
		if err != nil {
			return nil, err
		}
		if p, err = decodePatch(ops); err != nil {
			return nil, err
		}
	}
	return patch.ApplyJSONPatchLenient(p, obj)
}
