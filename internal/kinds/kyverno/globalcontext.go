package kyverno

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/subst"
)

// Projection is a GlobalContextEntry's projection: a name policies read
// (globalContext.Get(entry, name), globalReference name entry.name) and
// the JMESPath that gives its value from the entry's data.
type Projection struct {
	Name, Path string
}

// GlobalEntryValue is what a GlobalContextEntry holds, as Kyverno makes
// it: root (its data, or the list of its objects), the part fieldPath
// (JMESPath, "" for all) picks, and, with projections, an object of their
// names, each its path's result over that part.
func GlobalEntryValue(ctx context.Context, root any, fieldPath string, projections []Projection) (any, error) {
	search := func(what, src string, data any) (any, error) {
		p, ds := jmespath.Language{}.CompileExpr(&lang.Env{Name: what}, src)
		if ds != nil {
			return nil, fmt.Errorf("%s %q: %s", what, src, ds[0].Msg)
		}
		lib, err := jmespath.Prepare(data)
		if err != nil {
			return nil, err
		}
		out, err := p.Search(ctx, lib)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", what, src, err)
		}
		return jmespath.Result(out), nil
	}
	if fieldPath != "" {
		var err error
		if root, err = search("fieldPath", fieldPath, root); err != nil {
			return nil, err
		}
	}
	if len(projections) == 0 {
		return root, nil
	}
	out := make(map[string]any, len(projections))
	for _, p := range projections {
		v, err := search("projection "+p.Name+" path", p.Path, root)
		if err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	return out, nil
}

// Projected is a projection of an entry's value (projection "": the value
// itself), as Kyverno's store gives it: an error when the value is not an
// object or has no such member.
func Projected(entry string, v any, projection string) (any, error) {
	if projection == "" {
		return v, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q: its value is not an object", projection, entry)
	}
	p, ok := m[projection]
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q", projection, entry)
	}
	return p, nil
}

// globalRefEntry is a compiled globalReference context entry: the entry's
// name (entry or entry.projection) and a JMESPath over its value, both
// with {{ }} variables.
type globalRefEntry struct {
	name *subst.Template
	jp   *subst.Template
}

// globalReference is Kyverno's kyverno.io/v1 globalReference.
type globalReference struct {
	Name     string `json:"name"`
	JMESPath string `json:"jmesPath,omitempty"`
}

func (c *compiler) globalRef(field string, raw []byte) *globalRefEntry {
	var g globalReference
	if !c.decodeInto(field, raw, &g) {
		return nil
	}
	if g.Name == "" {
		c.errf(field+".name", "the name of a GlobalContextEntry is required")
		return nil
	}
	out := &globalRefEntry{name: c.template(field+".name", g.Name)}
	if g.JMESPath != "" {
		out.jp = c.template(field+".jmesPath", g.JMESPath)
	}
	return out
}

// globalRef reads a globalReference entry through the engine's
// GlobalContextReader: an entry it does not hold is an error (Kyverno:
// "failed to fetch entry"). read is false without a reader (offline
// without entries: as kyverno test, a value of the same name stands for
// it).
func (s *scope) globalRef(h *engine.Handle, e *globalRefEntry) (v any, read bool, err error) {
	g := h.Globals()
	if g == nil {
		return nil, false, nil
	}
	name, err := e.name.RenderEscaped(s.ctx, s, nil)
	if err != nil {
		return nil, false, err
	}
	entry, projection, _ := strings.Cut(name, ".")
	v, err = g.GlobalContext(h.Context(), entry, projection)
	switch {
	case errors.Is(err, engine.ErrNoReader):
		return nil, false, nil
	case errors.Is(err, engine.ErrNoGlobalContextEntry):
		return nil, false, fmt.Errorf("failed to fetch entry key=%s", entry)
	case err != nil:
		return nil, false, err
	}
	if e.jp == nil {
		return v, true, nil
	}
	src, err := e.jp.RenderEscaped(s.ctx, s, nil)
	if err != nil {
		return nil, false, err
	}
	prog, err := s.progs.compile(src)
	if err != nil {
		return nil, false, err
	}
	lib, err := jmespath.Prepare(v)
	if err != nil {
		return nil, false, err
	}
	out, err := prog.prog.Search(s.ctx, lib)
	if err != nil {
		return nil, false, fmt.Errorf("failed to apply JMESPath %s for context entry: %w", src, err)
	}
	return jmespath.Result(out), true, nil
}
