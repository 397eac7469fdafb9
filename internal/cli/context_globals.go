package cli

import (
	"context"
	"fmt"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/value"
)

// addGlobals resolves a Kyverno suite's globalContextEntries (checked as
// Kyverno checks them): each entry's value as kyverno test makes it,
// served to globalReference context entries and CEL's globalContext.Get.
func (r *staticResolver) addGlobals(ctx context.Context, t *suite.KyvernoTest) error {
	if err := suite.ValidateGlobalContextEntries(t.GlobalContextEntries); err != nil {
		return err
	}
	r.globals = make(map[string]any, len(t.GlobalContextEntries))
	for _, e := range t.GlobalContextEntries {
		var root any
		switch {
		case e.Resources != nil || e.ResourceFiles != nil:
			list := []any{}
			for j, raw := range e.Resources {
				v, err := value.Decode(raw)
				if err != nil {
					return fmt.Errorf("entry %q resources[%d]: %w", e.Name, j, err)
				}
				list = append(list, v)
			}
			if len(e.ResourceFiles) > 0 {
				docs, err := source.ReadPaths(t.ResolveAll(e.ResourceFiles), nil)
				if err != nil {
					return fmt.Errorf("entry %q resourceFiles: %w", e.Name, err)
				}
				for _, d := range docs {
					list = append(list, d.Object)
				}
			}
			root = list
		default:
			v, err := value.Decode(e.Data)
			if err != nil {
				return fmt.Errorf("entry %q data: %w", e.Name, err)
			}
			root = v
		}
		v, err := globalEntryValue(ctx, root, e)
		if err != nil {
			return fmt.Errorf("entry %q: %w", e.Name, err)
		}
		r.globals[e.Name] = v
	}
	return nil
}

// globalEntryValue is what a suite's entry holds, as kyverno test makes
// it: root (its data, or the list of its objects), the part fieldPath
// (JMESPath) picks, and, with projections, an object of their names, each
// its path's result over that part.
func globalEntryValue(ctx context.Context, root any, e suite.KyvernoGlobalContextEntry) (any, error) {
	compile := func(what, src string) (*jmespath.Program, error) {
		p, ds := jmespath.Language{}.CompileExpr(&lang.Env{Name: what}, src)
		if ds != nil {
			return nil, fmt.Errorf("%s %q: %s", what, src, ds[0].Msg)
		}
		return p, nil
	}
	if e.FieldPath != "" {
		p, err := compile("fieldPath", e.FieldPath)
		if err != nil {
			return nil, err
		}
		lib, err := jmespath.Prepare(root)
		if err != nil {
			return nil, err
		}
		out, err := p.Search(ctx, lib)
		if err != nil {
			return nil, fmt.Errorf("fieldPath %q: %w", e.FieldPath, err)
		}
		root = jmespath.Result(out)
	}
	if len(e.Projections) == 0 {
		return root, nil
	}
	ps := make([]jmespath.Projection, len(e.Projections))
	for i, p := range e.Projections {
		prog, err := compile("projection "+p.Name+" path", p.Path)
		if err != nil {
			return nil, err
		}
		ps[i] = jmespath.Projection{Name: p.Name, Prog: prog}
	}
	return jmespath.Project(ctx, root, ps)
}

var _ engine.GlobalContextReader = (*staticResolver)(nil)

// GlobalContext is a suite's global context entry (its projection when
// not ""): an entry it does not give wraps ErrNoGlobalContextEntry;
// without any (apply, explain, a suite without globalContextEntries) the
// error wraps ErrNoReader.
func (r *staticResolver) GlobalContext(_ context.Context, name, projection string) (any, error) {
	if r.globals == nil {
		return nil, engine.NoReader("no global context entries (offline, give them in a kyverno-test.yaml's globalContextEntries)")
	}
	v, ok := r.globals[name]
	if !ok {
		return nil, fmt.Errorf("global context entry %q: %w", name, engine.ErrNoGlobalContextEntry)
	}
	if projection == "" {
		return v, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q: its value is not an object", projection, name)
	}
	p, ok := m[projection]
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q", projection, name)
	}
	return p, nil
}
