package gatekeeper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/lang/rego"
	"github.com/modwright/modwright/internal/rules"
)

// Template is a compiled ConstraintTemplate: its constraint kind, the CRD
// its constraints are checked against, and its code. It is immutable but
// for its budget of specialized constraints (spec), which is safe for
// concurrent use.
type Template struct {
	name string // metadata.name
	kind string // the constraint kind
	// uid and generation are the template's, as given.
	uid        string
	generation int64
	// crd is the constraint kind's CRD, one Version per served version;
	// crdObject the CRD itself, which the operator installs.
	crd       *crdschema.Set
	crdObject map[string]any
	// rego finds violations; inventory: it reads data.inventory.
	rego      *rego.Program
	inventory bool
	// operations are the target's operations (nil: Gatekeeper's CREATE and UPDATE).
	operations []string
	// celCode is the target's K8sNativeValidation code: when a template
	// has it, it runs and the Rego beside it does not, as in Gatekeeper.
	celCode *celCode
	// err is why the template does not compile (a *rules.CompileError).
	err error
	// spec is how many of its constraints run their Rego specialized.
	spec *specialization
}

// Name is the template's name, Kind its constraint kind.
func (t *Template) Name() string { return t.name }
func (t *Template) Kind() string { return t.kind }

// Err is why the template does not compile, nil when it does.
func (t *Template) Err() error { return t.err }

// inventoryRoot is the input member data.inventory is read from.
const inventoryRoot = "__inventory"

// CompileTemplate compiles a ConstraintTemplate manifest. One that cannot
// be decoded gives (nil, err); one that does not compile gives the
// template with its error (a *rules.CompileError naming each field),
// which is also returned.
func CompileTemplate(m *kinds.Manifest) (*Template, error) {
	return compileTemplate(m, cel.NewEnvCache())
}

func compileTemplate(m *kinds.Manifest, envs *cel.EnvCache) (*Template, error) {
	av := m.APIVersion()
	if !slices.Contains(gkv1.TemplateVersions, strings.TrimPrefix(av, gkv1.TemplatesGroup+"/")) {
		av = gkv1.TemplatesGroup + "/" + gkv1.TemplateVersion
	}
	var ct gkv1.ConstraintTemplate
	if err := kinds.Decode(m, gkv1.KindTemplate, av, &ct); err != nil {
		return nil, err
	}
	t := &Template{name: ct.Name, kind: ct.Spec.CRD.Spec.Names.Kind, uid: string(ct.UID), generation: ct.Generation, spec: &specialization{}}
	ce := &rules.CompileError{Kind: gkv1.KindTemplate, Rule: m.Key()}
	errf := func(field string, pos int, format string, args ...any) {
		ce.Errors = append(ce.Errors, rules.FieldError{Field: field, Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case t.kind == "":
		errf("spec.crd.spec.names.kind", -1, "a template names its constraint kind")
	case !strings.EqualFold(ct.Name, t.kind):
		// As Gatekeeper: the template is named after its kind.
		errf("metadata.name", -1, "must be %q, the lowercase of spec.crd.spec.names.kind", strings.ToLower(t.kind))
	}
	if t.kind != "" {
		if err := t.buildCRD(&ct); err != nil {
			errf("spec.crd.spec.validation.openAPIV3Schema", -1, "the constraint kind's CustomResourceDefinition is invalid: %v", err)
		}
	}
	switch len(ct.Spec.Targets) {
	case 0:
		errf("spec.targets", -1, "a template has one target, %s", gkv1.AdmissionTarget)
	case 1:
		t.compileTarget(&ct.Spec.Targets[0], envs, errf)
	default:
		errf("spec.targets", -1, "a template has exactly one target, not %d", len(ct.Spec.Targets))
	}
	if len(ce.Errors) > 0 {
		t.err = ce
		return t, ce
	}
	return t, nil
}

type errfFunc func(field string, pos int, format string, args ...any)

// compileTarget compiles the target's Rego: its rego and libs, or its
// code entry of engine Rego.
func (t *Template) compileTarget(tg *gkv1.Target, envs *cel.EnvCache, errf errfFunc) {
	const field = "spec.targets[0]"
	if tg.Target != gkv1.AdmissionTarget {
		errf(field+".target", -1, "must be %s, not %q", gkv1.AdmissionTarget, tg.Target)
		return
	}
	for _, op := range tg.Operations {
		switch op {
		case "CREATE", "UPDATE", "DELETE", "CONNECT", "*":
		default:
			errf(field+".operations", -1, "unknown operation %q", op)
		}
	}
	t.operations = tg.Operations
	// The Rego: the first code entry of engine Rego, replaced by the legacy
	// rego field when it is given (always Rego v0), as Gatekeeper converts it.
	var src *gkv1.RegoSource
	srcField := field
	for i, c := range tg.Code {
		cf := fmt.Sprintf("%s.code[%d]", field, i)
		switch c.Engine {
		case gkv1.EngineRego:
			if src != nil {
				continue
			}
			var rs gkv1.RegoSource
			if err := strictJSON(c.Source, &rs); err != nil {
				errf(cf+".source", -1, "%v", err)
				return
			}
			if rs.Rego == "" {
				errf(cf+".source.rego", -1, "rego source missing required field: rego")
				return
			}
			src, srcField = &rs, cf+".source"
		case gkv1.EngineCEL:
			if t.celCode == nil {
				t.celCode = compileCEL(cf+".source", c.Source, envs, errf)
			}
		default:
			errf(cf+".engine", -1, "unknown engine %q (Rego or K8sNativeValidation)", c.Engine)
		}
	}
	if tg.Rego != "" {
		src, srcField = &gkv1.RegoSource{Rego: tg.Rego, Libs: tg.Libs}, field
	}
	if src == nil {
		if t.celCode == nil {
			errf(field, -1, "the target has no code: rego, or code entries of engine Rego or K8sNativeValidation")
		}
		return
	}
	v0 := src.Version != "v1"
	mods := []rego.Module{{File: srcField + ".rego", Source: src.Rego, V0: v0}}
	for i, l := range src.Libs {
		mods = append(mods, rego.Module{File: fmt.Sprintf("%s.libs[%d]", srcField, i), Source: l, V0: v0})
	}
	pkg, ok := t.checkModules(mods, errf)
	if !ok {
		return
	}
	q := "data." + pkg + ".violation"
	if t.inventory {
		q += " with data.inventory as input." + inventoryRoot
	}
	p, err := rego.CompileWith(context.Background(), rego.Options{Query: q, LaxBuiltins: true}, mods...)
	if err != nil {
		regoErrors(err, mods, errf)
		return
	}
	t.rego = p
}

// checkModules checks the modules as Gatekeeper does before compiling
// them: the template's module has a violation rule; libs are packages
// under lib; imports are of data.lib or future; data is read under
// data.lib and data.inventory only. It returns the template's package.
func (t *Template) checkModules(mods []rego.Module, errf errfFunc) (string, bool) {
	under := func(ref, root string) bool {
		return strings.HasPrefix(ref, root+".") || strings.HasPrefix(ref, root+"[")
	}
	var pkg string
	ok := true
	for i, md := range mods {
		o, err := rego.Inspect(md)
		if err != nil {
			regoErrors(err, mods, errf)
			ok = false
			continue
		}
		if i == 0 {
			pkg = o.Package
			if !slices.Contains(o.Rules, "violation") {
				errf(md.File, -1, "missing required rule: violation")
				ok = false
			}
		} else if !strings.HasPrefix(o.Package, "lib.") {
			errf(md.File, -1, "a lib's package must be under data.lib, not data.%s", o.Package)
			ok = false
		}
		for _, r := range o.Imports {
			if !under(r.Ref, "data.lib") && r.Ref != "future" && !under(r.Ref, "future") {
				errf(md.File, position(md.Source, r.Row, r.Col), "invalid import %s: a template imports data.lib and future only", r.Ref)
				ok = false
			}
		}
		for _, r := range o.Data {
			switch {
			case r.Ref == "data.inventory" || under(r.Ref, "data.inventory"):
				t.inventory = true
			case under(r.Ref, "data.lib"):
			default:
				errf(md.File, position(md.Source, r.Row, r.Col), "disallowed reference %s: a template reads data.inventory and data.lib only", r.Ref)
				ok = false
			}
		}
	}
	return pkg, ok
}

// regoErrors reports a Rego compile error at the fields and positions of
// its modules.
func regoErrors(err error, mods []rego.Module, errf errfFunc) {
	var ce *rego.CompileError
	if !errors.As(err, &ce) {
		errf(mods[0].File, -1, "%v", err)
		return
	}
	for _, p := range ce.Problems {
		field, pos := mods[0].File, -1
		for _, md := range mods {
			if md.File == p.File {
				field, pos = md.File, position(md.Source, p.Row, p.Col)
			}
		}
		errf(field, pos, "%s", p.Msg)
	}
}

// position is the byte offset of 1-based row and column in s, -1 when
// unknown.
func position(s string, row, col int) int {
	if row < 1 {
		return -1
	}
	off := 0
	for r := 1; r < row; r++ {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	if col > 1 {
		off += col - 1
	}
	return off
}

// strictJSON decodes raw strictly into out.
func strictJSON(raw json.RawMessage, out any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(out)
}
