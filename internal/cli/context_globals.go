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
	r.globals = make(map[string]offlineGlobal, len(t.GlobalContextEntries))
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
		r.globals[e.Name] = offlineGlobal{value: v, suite: true}
	}
	return nil
}

// offlineGlobal is a global context entry offline: a suite's (its value,
// whose members are its projections, as kyverno test reads it), or a
// GlobalContextEntry given with --context (its data and projections, as
// the cluster keeps them; err when it cannot be made offline).
type offlineGlobal struct {
	value any
	proj  map[string]any
	err   error
	suite bool
}

// contextGlobals makes the GlobalContextEntry documents of --context
// entries, once: a kubernetesResource entry holds the context objects of
// its resource (in its namespace, or all), as `kyverno apply` lists them,
// an apiCall entry with a urlPath the recorded answer of that call.
func (r *staticResolver) contextGlobals(ctx context.Context) map[string]offlineGlobal {
	r.globalsOnce.Do(func() {
		for ref, o := range r.objects {
			if ref.Group != "kyverno.io" || ref.Kind != "GlobalContextEntry" {
				continue
			}
			if r.globals == nil {
				r.globals = map[string]offlineGlobal{}
			}
			r.globals[ref.Name] = r.contextGlobal(ctx, ref.Name, o)
		}
	})
	return r.globals
}

func (r *staticResolver) contextGlobal(ctx context.Context, name string, o map[string]any) offlineGlobal {
	fail := func(format string, args ...any) offlineGlobal {
		return offlineGlobal{err: fmt.Errorf("GlobalContextEntry %s: "+format, append([]any{name}, args...)...)}
	}
	spec, _ := o["spec"].(map[string]any)
	var data any
	switch k, a := spec["kubernetesResource"], spec["apiCall"]; {
	case k != nil:
		kr, _ := k.(map[string]any)
		group, _ := kr["group"].(string)
		version, _ := kr["version"].(string)
		resource, _ := kr["resource"].(string)
		ns, _ := kr["namespace"].(string)
		path := "/apis/" + group + "/" + version
		if group == "" {
			path = "/api/" + version
		}
		if ns != "" {
			path += "/namespaces/" + ns
		}
		body, ok, err := r.answerObjects("GET", path+"/"+resource)
		switch {
		case err != nil:
			return fail("%v", err)
		case !ok:
			data = []any{} // the context holds no object of the resource
		default:
			list, err := value.Decode(body)
			if err != nil {
				return fail("%v", err)
			}
			items, _ := list.(map[string]any)["items"].([]any)
			data = items
		}
	case a != nil:
		ac, _ := a.(map[string]any)
		path, _ := ac["urlPath"].(string)
		if path == "" {
			return fail("a service call is not answered offline")
		}
		body, err := r.Call(ctx, engine.APICall{Path: path})
		if err != nil {
			return fail("%v", err)
		}
		v, err := value.Decode(body)
		if err != nil {
			return fail("%v", err)
		}
		data = v
	default:
		return fail("one of kubernetesResource and apiCall is required")
	}
	out := offlineGlobal{value: data}
	raw, _ := spec["projections"].([]any)
	var ps []jmespath.Projection
	for i, p := range raw {
		pm, _ := p.(map[string]any)
		pn, _ := pm["name"].(string)
		src, _ := pm["jmesPath"].(string)
		prog, ds := jmespath.Language{}.CompileExpr(&lang.Env{Name: "projection"}, src)
		if ds != nil {
			return fail("spec.projections[%d].jmesPath: %s", i, ds[0].Msg)
		}
		ps = append(ps, jmespath.Projection{Name: pn, Prog: prog})
	}
	if len(ps) > 0 {
		proj, err := jmespath.Project(ctx, data, ps)
		if err != nil {
			return fail("%v", err)
		}
		out.proj = proj
	}
	return out
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

// GlobalContext is a global context entry (its projection when not ""):
// a suite's, or one --context gives; an entry not given wraps
// ErrNoGlobalContextEntry; without any the error wraps ErrNoReader.
func (r *staticResolver) GlobalContext(ctx context.Context, name, projection string) (any, error) {
	globals := r.globals
	if globals == nil {
		globals = r.contextGlobals(ctx)
	}
	if globals == nil {
		return nil, engine.NoReader("no global context entries (offline, give them in a kyverno-test.yaml's globalContextEntries, or GlobalContextEntry documents with --context)")
	}
	g, ok := globals[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("global context entry %q: %w", name, engine.ErrNoGlobalContextEntry)
	case g.err != nil:
		return nil, g.err
	case projection == "":
		return g.value, nil
	case !g.suite:
		if v := g.proj[projection]; v != nil {
			return v, nil
		}
		return nil, fmt.Errorf("GlobalContextEntry %s: no data for projection %q", name, projection)
	}
	m, ok := g.value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q: its value is not an object", projection, name)
	}
	p, ok := m[projection]
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q", projection, name)
	}
	return p, nil
}
