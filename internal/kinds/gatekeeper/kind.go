package gatekeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/lang/rego"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Kind is the adapter of constraints: every kind of
// constraints.gatekeeper.sh, each compiled against the template that
// defines it. It is immutable and safe for concurrent use.
type Kind struct {
	templates map[string]*Template // by constraint kind
	envs      *cel.EnvCache        // CEL environments, shared by templates
	inv       *inventoryCache      // data.inventory, shared by constraints
	// anyOperation: constraints review every operation, as gator verify
	// does (no template's operations, no webhook's CREATE and UPDATE).
	anyOperation bool
	// general: constraints are not specialized (General).
	general bool
}

// Option configures the adapter.
type Option func(*Kind)

// AnyOperation makes constraints review every operation, as gator verify
// reviews a suite's AdmissionReviews (a DELETE too); the webhook reviews
// the template's operations, CREATE and UPDATE by default.
func AnyOperation() Option { return func(k *Kind) { k.anyOperation = true } }

// General: every constraint runs its template's Rego as compiled, not
// specialized for its parameters (to compare the two, and where load time
// or memory per constraint matter more than a review's time).
func General() Option { return func(k *Kind) { k.general = true } }

var (
	_ kinds.Kind          = (*Kind)(nil)
	_ kinds.GroupOwner    = (*Kind)(nil)
	_ kinds.Definer       = (*Kind)(nil)
	_ kinds.Stored        = (*Kind)(nil)
	_ kinds.Defining      = (*Kind)(nil)
	_ kinds.StatusWritten = (*Kind)(nil)
)

// NewKind returns the adapter with no templates (WithDefinitions gives
// them).
func NewKind(opts ...Option) *Kind {
	k := &Kind{envs: cel.NewEnvCache(), inv: &inventoryCache{}}
	for _, o := range opts {
		o(k)
	}
	return k
}

// Name is what constraints are called in messages.
func (k *Kind) Name() string { return "Constraint" }

// Group is constraints.gatekeeper.sh.
func (k *Kind) Group() string { return gkv1.ConstraintsGroup }

// Versions are v1beta1, v1alpha1 and v1 (the same schema).
func (k *Kind) Versions() []string { return gkv1.ConstraintVersions }

// OwnedKinds says which kinds the adapter owns.
func (k *Kind) OwnedKinds() string { return "any kind a ConstraintTemplate defines" }

// Defines reports whether m is a ConstraintTemplate.
func (k *Kind) Defines(m *kinds.Manifest) bool {
	return m.Group() == gkv1.TemplatesGroup && m.Kind() == gkv1.KindTemplate
}

// WithDefinitions compiles templates and returns the adapter compiling
// constraints against them (and k's own templates of other kinds). Two
// templates of one kind: the later one is an error.
func (k *Kind) WithDefinitions(defs []*kinds.Manifest) (kinds.Kind, []error) {
	errs := make([]error, len(defs))
	nk := &Kind{templates: make(map[string]*Template, len(k.templates)+len(defs)), envs: k.envs, inv: k.inv, anyOperation: k.anyOperation, general: k.general}
	for kd, t := range k.templates {
		nk.templates[kd] = t
	}
	ts := make([]*Template, len(defs))
	for i, m := range defs {
		ts[i], errs[i] = compileTemplate(m, k.envs)
	}
	seen := map[string]string{}
	for i, t := range ts {
		if t == nil || t.kind == "" {
			continue
		}
		if first, dup := seen[t.kind]; dup {
			errs[i] = &rules.CompileError{Kind: gkv1.KindTemplate, Rule: defs[i].Key(), Errors: []rules.FieldError{{
				Field: "spec.crd.spec.names.kind", Pos: -1, Msg: fmt.Sprintf("kind %s is defined by template %s already", t.kind, first)}}}
			continue
		}
		seen[t.kind] = t.name
		nk.templates[t.kind] = t
	}
	return nk, errs
}

// DefinitionKind is templates.gatekeeper.sh/v1 ConstraintTemplate.
func (k *Kind) DefinitionKind() (group, version, kind string) {
	return gkv1.TemplatesGroup, gkv1.TemplateVersion, gkv1.KindTemplate
}

// Defined lists the constraint kinds the templates define, by kind, each
// with its CRD; a template that does not compile defines its kind still
// (its constraints are kept, broken) but gives no CRD to install.
func (k *Kind) Defined() []kinds.Definition {
	out := make([]kinds.Definition, 0, len(k.templates))
	for _, t := range k.templates {
		d := kinds.Definition{By: t.name, UID: t.uid, Generation: t.generation, Kind: t.kind}
		if t.err == nil {
			d.CRD = t.crdObject
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b kinds.Definition) int { return strings.Compare(a.Kind, b.Kind) })
	return out
}

// DefinitionStatus is a template's status as Gatekeeper writes it:
// created (once its CRD is installed) and the replica's entry in byPod
// (observedGeneration, errors with Gatekeeper's codes: ingest_error for
// each compile error, located at its field; create_error when the CRD
// could not be installed).
func (k *Kind) DefinitionStatus(m *kinds.Manifest, id string, compileErr, installErr error, created bool) map[string]any {
	errs := statusErrors(compileErr, "ingest_error")
	if installErr != nil {
		errs = append(errs, map[string]any{"code": "create_error", "message": installErr.Error()})
	}
	pod := podStatus(m, id, errs)
	if uid := metadataString(m, "uid"); uid != "" {
		pod["templateUID"] = uid
	}
	st := map[string]any{"byPod": []any{pod}}
	if created {
		st["created"] = true
	}
	return st
}

// RuleStatus is a constraint's status as Gatekeeper writes it: the
// replica's entry in byPod (observedGeneration, enforced, errors with the
// code constraint_error, each located at its field).
func (k *Kind) RuleStatus(m *kinds.Manifest, id string, err error) map[string]any {
	pod := podStatus(m, id, statusErrors(err, "constraint_error"))
	pod["enforced"] = err == nil
	if uid := metadataString(m, "uid"); uid != "" {
		pod["constraintUID"] = uid
	}
	return map[string]any{"byPod": []any{pod}}
}

// podStatus is a replica's entry in a status's byPod.
func podStatus(m *kinds.Manifest, id string, errs []any) map[string]any {
	md, _ := m.Object["metadata"].(map[string]any)
	pod := map[string]any{"id": id, "operations": []any{"audit", "status", "webhook"}, "observedGeneration": md["generation"]}
	if len(errs) > 0 {
		pod["errors"] = errs
	}
	return pod
}

func metadataString(m *kinds.Manifest, key string) string {
	md, _ := m.Object["metadata"].(map[string]any)
	s, _ := md[key].(string)
	return s
}

// statusErrors are err's errors in a status, with Gatekeeper's code: one
// per field error, located at its field.
func statusErrors(err error, code string) []any {
	if err == nil {
		return nil
	}
	var ce *rules.CompileError
	if !errors.As(err, &ce) || len(ce.Errors) == 0 {
		return []any{map[string]any{"code": code, "message": err.Error()}}
	}
	out := make([]any, 0, len(ce.Errors))
	for _, fe := range ce.Errors {
		msg := fe.Msg
		if fe.Pos >= 0 {
			msg = fmt.Sprintf("column %d: %s", fe.Pos+1, msg)
		}
		out = append(out, map[string]any{"code": code, "message": msg, "location": fe.Field})
	}
	return out
}

// Template returns the template of a constraint kind, or nil.
func (k *Kind) Template(kind string) *Template { return k.templates[kind] }

// Compile checks a constraint against its kind's CRD, as the API server
// would, and compiles it. A constraint whose template is missing or
// broken is returned with that error.
func (k *Kind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	c := &Constraint{name: m.Name(), inv: k.inv}
	c.info = engine.RuleInfo{Kind: m.Kind(), Key: m.Key(), Namespace: m.Namespace(), Name: m.Name(),
		Phase: engine.Validate, FailurePolicy: engine.FailureIgnore}
	ce := &rules.CompileError{Kind: m.Kind(), Rule: m.Key()}
	errf := func(field string, pos int, format string, args ...any) {
		ce.Errors = append(ce.Errors, rules.FieldError{Field: field, Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	fail := func() (engine.Rule, error) {
		c.info.Err = ce
		c.info.Index.Kinds = []string{}
		return c, ce
	}
	t := k.templates[m.Kind()]
	switch {
	case t == nil:
		errf("kind", -1, "no ConstraintTemplate defines kind %s (give its template with the constraint)", m.Kind())
		return fail()
	case t.err != nil:
		errf("kind", -1, "its ConstraintTemplate %s does not compile: %v", t.name, t.err)
		return fail()
	}
	c.t = t
	version := strings.TrimPrefix(m.APIVersion(), gkv1.ConstraintsGroup+"/")
	v := t.crd.For(gkv1.ConstraintsGroup+"/"+version, m.Kind())
	if v == nil {
		errf("apiVersion", -1, "%s is not served: want %s/%s", m.APIVersion(), gkv1.ConstraintsGroup, strings.Join(gkv1.ConstraintVersions, " or "))
		return fail()
	}
	res := v.Validate(context.Background(), m.Object, nil, "")
	for _, f := range res.UnknownFields {
		errf(f, -1, "unknown field")
	}
	for _, e := range res.Errors {
		errf(e.Field, -1, "%s", e.ErrorBody())
	}
	if len(ce.Errors) > 0 {
		return fail()
	}
	b, err := value.AppendJSON(nil, res.Object)
	if err != nil {
		errf("(root)", -1, "%v", err)
		return fail()
	}
	var con gkv1.Constraint
	if err := kinds.Decode(&kinds.Manifest{Object: res.Object, JSON: b}, m.Kind(), m.APIVersion(), &con); err != nil {
		return nil, err
	}
	c.match = compileMatch("spec.match", &con.Spec.Match, errf)
	spec, _ := res.Object["spec"].(map[string]any)
	c.params = spec["parameters"]
	c.celParams = c.params // variables.params: null without parameters
	if t.celCode != nil && !k.general {
		c.celConst = t.celCode.constVars(c.celParams)
	}
	if c.params == nil {
		c.params = map[string]any{}
	}
	if c.paramsVal, err = rego.ToValue(c.params); err != nil {
		errf("spec.parameters", -1, "%v", err)
	}
	c.prog = t.rego
	if !k.general {
		t.specialize(c)
	}
	c.actions = compileActions(&con.Spec, errf)
	if len(ce.Errors) > 0 {
		return fail()
	}
	ops := operationsOf(t.operations)
	if k.anyOperation {
		ops = operationsOf([]string{"*"})
	}
	c.info.Index = engine.IndexKeys{AnyNamespace: true, Kinds: c.match.indexKinds(), Operations: ops}
	return c, nil
}

// operationsOf is a target's operations as a set (Gatekeeper's webhook:
// CREATE and UPDATE when none are given).
func operationsOf(ops []string) engine.OpSet {
	if len(ops) == 0 {
		return engine.OpSetOf(rules.Create, rules.Update)
	}
	if slices.Contains(ops, "*") {
		return engine.OpSetOf(rules.Create, rules.Update, rules.Delete, rules.Connect)
	}
	var out []rules.Operation
	for _, op := range ops {
		out = append(out, rules.Operation(op))
	}
	return engine.OpSetOf(out...)
}
