package cli

import (
	"context"
	"fmt"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyverno"
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
		projections := make([]kyverno.Projection, len(e.Projections))
		for i, p := range e.Projections {
			projections[i] = kyverno.Projection{Name: p.Name, Path: p.Path}
		}
		v, err := kyverno.GlobalEntryValue(ctx, root, e.FieldPath, projections)
		if err != nil {
			return fmt.Errorf("entry %q: %w", e.Name, err)
		}
		r.globals[e.Name] = v
	}
	return nil
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
	return kyverno.Projected(name, v, projection)
}
