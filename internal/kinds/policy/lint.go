package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
)

// The policy kinds' lint codes (kinds holds the ones every kind shares).
// They are stable: scripts and docs may refer to them.
const (
	codeCostly        = "W201" // an expression's estimated cost may exceed the per-expression limit
	codeNotIdempotent = "W202" // applying the mutations twice changes the object twice
	codeUndefinedVar  = "W203" // a JMESPath expression or {{ }} reads a name the context does not have
	codeStaticMatch   = "W204" // {{ }} in match, which is static: never substituted
	codeUnusedContext = "W205" // a context entry nothing reads
	codeDynamicScope  = "W206" // a scoped validation on custom resources: self is not typed by their CRD
	codeNestedObject  = "W207" // a nested {{ }} reads the request's object: its author writes part of the outer expression
	codeSchemaType    = "E201" // a scoped validation does not type-check with self typed by a CRD's schema
)

var (
	_ kinds.Linter        = (*Rule)(nil)
	_ kinds.SchemaLinter  = (*Rule)(nil)
	_ kinds.CompileLinter = (*Kind)(nil)
)

// CompileFindings reports a manifest Compile refused (kinds.CompileFindings)
// with the kind's hints.
func (k *Kind) CompileFindings(m *kinds.Manifest, err error) []kinds.Finding {
	fs := kinds.CompileFindings(k.Name(), m, err)
	for i := range fs {
		if fs[i].Code == kinds.CodeUndecodable {
			fs[i].Hint = "check the field names and types against docs/policy.md"
		}
	}
	return fs
}

// Lint warns about a policy that compiles but will not do what its author
// meant: expressions that may run out of cost on large objects, mutations
// that change their own result again.
func (r *Rule) Lint(ctx context.Context, origin string, samples []kinds.Manifest) []kinds.Finding {
	if r.Err != nil {
		return nil
	}
	var out []kinds.Finding
	warn := func(code, field, msg, hint string) {
		out = append(out, kinds.Finding{Severity: kinds.SeverityWarning, Code: code, Origin: origin, Kind: r.Kind, Rule: r.Key, Field: field, Message: msg, Hint: hint})
	}
	costly := func(field string, cost uint64) {
		// An unbounded estimate says the size is unknown (an optional's
		// value, a function's result), not that the expression is costly.
		if cost > cel.PerCallLimit && cost < cel.UnboundedCost {
			warn(codeCostly, field,
				fmt.Sprintf("the estimated cost reaches %d, over the per-expression limit %d, when the lists, maps and strings it reads hold %d elements or bytes: such an evaluation fails (failurePolicy decides)", cost, uint64(cel.PerCallLimit), cel.LargeSize),
				"bound what the expression iterates over (check size() first), or avoid nested loops over lists")
		}
	}
	for _, v := range r.vars {
		if v.e.cel != nil {
			costly(v.field, v.e.cel.LargeCost())
		}
	}
	for _, c := range r.conditions {
		if c.e.cel != nil {
			costly(c.field, c.e.cel.LargeCost())
		}
	}
	for _, v := range r.validates {
		if v.e.cel != nil {
			costly(v.e.field, v.e.cel.LargeCost())
		}
		if v.msgExpr != nil {
			costly(v.field+".messageExpression", v.msgExpr.LargeCost())
		}
	}
	for _, m := range r.mutations {
		if m.m != nil {
			costly(m.field, m.m.LargeCost())
		}
	}
	for _, a := range r.audits {
		costly(a.field, a.prog.LargeCost())
	}
	out = append(out, r.lintContext(origin)...)
	if len(r.mutations) > 0 {
		if f, ok := r.checkIdempotent(ctx, origin, samples); ok {
			out = append(out, f)
		}
	}
	return out
}

// checkIdempotent applies the policy to each sample it matches, then again
// to the result (as an UPDATE): the second pass must change nothing.
func (r *Rule) checkIdempotent(ctx context.Context, origin string, samples []kinds.Manifest) (kinds.Finding, bool) {
	op := rules.Create
	if !r.Index.Operations.Has(op) {
		op = rules.Update
	}
	for _, s := range samples {
		obj := s.Object
		ns := r.Namespace
		if r.cluster {
			md, _ := obj["metadata"].(map[string]any)
			ns, _ = md["namespace"].(string)
			kind, _ := obj["kind"].(string)
			if ns == "" && !kinds.IsClusterScoped(kind) {
				ns = "default"
			}
		}
		_, ops := kinds.ApplyAgain(ctx, r, obj, ns, op)
		if len(ops) == 0 {
			continue
		}
		return kinds.Finding{Severity: kinds.SeverityWarning, Code: codeNotIdempotent, Origin: origin, Kind: r.Kind, Rule: r.Key, Field: "spec.mutations",
			Message: fmt.Sprintf("not idempotent: applied again to its own result on %s it changes the object again (%s)", s.Origin, strings.Join(ops, "; ")),
			Hint:    "make each mutation set a value rather than append one (a JSONPatch 'add' to '/-' appends every time), or add a matchCondition that stops once the change is there"}, true
	}
	return kinds.Finding{}, false
}

// jpUse is a JMESPath program of the policy and the field it is in.
type jpUse struct {
	field string
	e     *jpExpr
}

// jmesPaths lists the policy's JMESPath programs that read the context:
// slots, context variables' jmesPaths without a value (with one, or in an
// apiCall, a jmesPath reads the value or the response) and the {{ }}
// variables.
func (r *Rule) jmesPaths() []jpUse {
	var out []jpUse
	add := func(field string, e *jpExpr) {
		if e != nil {
			out = append(out, jpUse{field, e})
		}
	}
	for _, v := range r.vars {
		add(v.e.field, v.e.jp)
		if v.entry != nil && v.entry.variable != nil && v.entry.variable.value == nil {
			add(v.field+".variable.jmesPath", v.entry.variable.jmesPath)
		}
	}
	for _, c := range r.conditions {
		add(c.e.field, c.e.jp)
	}
	for _, v := range r.validates {
		add(v.e.field, v.e.jp)
	}
	srcs := make([]string, 0, len(r.progs.static))
	for src := range r.progs.static {
		srcs = append(srcs, src)
	}
	slices.Sort(srcs)
	for _, src := range srcs {
		add(r.progs.fields[src], r.progs.static[src])
	}
	return out
}

// lintContext warns about names no context has, {{ }} in the static
// match, and context entries nothing reads.
func (r *Rule) lintContext(origin string) []kinds.Finding {
	var out []kinds.Finding
	warn := func(code, field, msg, hint string) {
		out = append(out, kinds.Finding{Severity: kinds.SeverityWarning, Code: code, Origin: origin, Kind: r.Kind, Rule: r.Key, Field: field, Message: msg, Hint: hint})
	}
	read := map[string]bool{}
	readsAll := false
	for _, u := range r.jmesPaths() {
		readsAll = readsAll || u.e.all
		names := slices.Clone(u.e.roots)
		slices.Sort(names)
		for _, n := range names {
			read[n] = true
			_, known := r.varIndex[n]
			scoped := (n == varSelf || n == varOldSelf) && strings.HasPrefix(u.field, "spec.validations")
			if !known && !scoped && !slices.Contains(builtinRoots, n) {
				warn(codeUndefinedVar, u.field,
					fmt.Sprintf("%q is not in the context: not a variable, a context entry, nor one of %s; it reads null (a {{ }} variable fails as undefined)", n, strings.Join(builtinRoots, ", ")),
					"define it under spec.context or spec.variables, or fix the name")
			}
		}
	}
	for _, n := range r.nested {
		if strings.Contains(n.src, "request.object") || strings.Contains(n.src, "request.oldObject") {
			warn(codeNestedObject, n.field,
				fmt.Sprintf("the nested variable {{ %s }} reads the request's object: its value is spliced into the outer expression as text, so the object's author writes part of that expression", n.src),
				"read the value as a value instead (lookup(map, key), a filter), not as expression text; docs/variables.md#nested-variables")
		}
	}
	if m := r.Spec.Match; m != nil {
		for i, f := range m.Resources {
			for _, list := range []struct {
				name  string
				globs []string
			}{{"names", f.Names}, {"namespaces", f.Namespaces}} {
				for j, g := range list.globs {
					if strings.Contains(g, "{{") {
						warn(codeStaticMatch, fmt.Sprintf("spec.match.resources[%d].%s[%d]", i, list.name, j),
							"match is static and indexed: {{ }} is not substituted here, the text is a glob",
							"move the check to a matchCondition (jmespath or conditions)")
					}
				}
			}
		}
	}
	// The entries CUE and Rego programs name are read.
	for _, n := range r.programNames() {
		read[n] = true
	}
	if readsAll {
		return out
	}
	var celSrc strings.Builder
	for _, v := range r.vars {
		if v.e.cel != nil {
			celSrc.WriteString(v.e.cel.Source() + "\n")
		}
	}
	for _, c := range r.conditions {
		if c.e.cel != nil {
			celSrc.WriteString(c.e.cel.Source() + "\n")
		}
	}
	for _, v := range r.validates {
		if v.e.cel != nil {
			celSrc.WriteString(v.e.cel.Source() + "\n")
		}
		if v.msgExpr != nil {
			celSrc.WriteString(v.msgExpr.Source() + "\n")
		}
	}
	for _, m := range r.mutations {
		if m.m != nil {
			celSrc.WriteString(m.m.Source() + "\n")
		}
	}
	for _, a := range r.audits {
		if a.prog != nil {
			celSrc.WriteString(a.prog.Source() + "\n")
		}
	}
	cel := celSrc.String()
	for i := 0; i < r.contextEntries; i++ {
		v := r.vars[i]
		if read[v.name] || strings.Contains(cel, "variables."+v.name) || strings.Contains(cel, "variables[\""+v.name) || strings.Contains(cel, "variables['"+v.name) {
			continue
		}
		warn(codeUnusedContext, v.field,
			fmt.Sprintf("context entry %q is never read: no expression, condition or {{ }} refers to it", v.name),
			"remove it, or read it (JMESPath: "+v.name+", CEL: variables."+v.name+")")
	}
	return out
}

// programNames are the context entries and variables the CUE and Rego
// programs name.
func (r *Rule) programNames() []string {
	var names []string
	exprs := make([]*expr, 0, len(r.vars)+len(r.conditions)+len(r.validates))
	for i := range r.vars {
		exprs = append(exprs, &r.vars[i].e)
	}
	for i := range r.conditions {
		exprs = append(exprs, &r.conditions[i].e)
	}
	for i := range r.validates {
		exprs = append(exprs, &r.validates[i].e)
		if cp := r.validates[i].cue; cp != nil {
			names = append(names, cp.names...)
		}
	}
	for _, e := range exprs {
		if e.rego != nil {
			names = append(names, e.rego.names...)
		}
	}
	for _, m := range r.mutations {
		if m.cue != nil {
			names = append(names, m.cue.names...)
		}
	}
	return names
}

// customKinds says which kinds the policy may see that are not built in
// and have no schema among typed ("" when there are none): "any kind
// without a CRD given" when it names none.
func (r *Rule) customKinds(typed []kinds.KindSchema) string {
	if len(r.match.resources) == 0 {
		return "any kind without a CRD given"
	}
	var custom []string
	for _, f := range r.match.resources {
		if f.kinds == nil {
			return "any kind without a CRD given"
		}
		for _, k := range f.kinds {
			if !builtinKind(k) && !slices.ContainsFunc(typed, func(s kinds.KindSchema) bool { return s.Kind == k }) && !slices.Contains(custom, k) {
				custom = append(custom, k)
			}
		}
	}
	return strings.Join(custom, ", ")
}

// builtinKind reports whether a kind is one of Kubernetes' own (in any of
// its groups).
func builtinKind(kind string) bool {
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Kind == kind {
			return true
		}
	}
	return false
}

// LintSchemas types the self of each scoped CEL validation by the schemas
// of the custom resources the policy may see (lint --crd), as the API
// server types a CRD rule's self at the same place, and type-checks the
// expression and its messageExpression: one that does not type-check is
// an error (E201: at run time, where self is typed the same way, it fails
// or reads what the author did not mean). A scoped validation that may
// see custom resources no schema is given for, or whose place the schema
// does not type, stays dynamically typed (W206).
func (r *Rule) LintSchemas(origin string, schemas []kinds.KindSchema) []kinds.Finding {
	if r.Err != nil {
		return nil
	}
	var out []kinds.Finding
	add := func(sev, code, field string, pos int, msg, hint string) {
		out = append(out, kinds.Finding{Severity: sev, Code: code, Origin: origin, Kind: r.Kind, Rule: r.Key, Field: field, Pos: pos, Message: msg, Hint: hint})
	}
	dynamic := func(field, msg string) {
		add(kinds.SeverityWarning, codeDynamicScope, field, 0, msg,
			"give the CRDs of the kinds it sees with --crd (in the cluster the operator reads them); for rules that must hold whatever the policy, put them in the CRD's x-kubernetes-validations")
	}
	var seen []kinds.KindSchema
	for _, s := range schemas {
		if r.mayMatch(s.Group, s.Kind) {
			seen = append(seen, s)
		}
	}
	untyped := r.customKinds(seen)
	for i := range r.validates {
		v := &r.validates[i]
		if v.scopeText == "" || v.e.cel == nil {
			continue
		}
		if untyped != "" {
			dynamic(v.field+".scope", fmt.Sprintf("self is dynamically typed on %s: the JSON value, not typed by a CRD's schema (property names are not escaped as __dash__ and the like, lists of x-kubernetes-list-type set or map compare in order)", untyped))
		}
		if len(seen) == 0 {
			continue
		}
		pattern, ok := v.place.Pattern()
		if !ok {
			dynamic(v.field+".scope", "the scope's place depends on the object (a '..' step or a negative index): self is typed by the schema where it is found at run time, but cannot be type-checked here")
			continue
		}
		for j, k := range pattern {
			if _, isAny := k.(jsonpath.AnyMember); isAny {
				pattern[j] = nil
			}
		}
		for _, s := range seen {
			gvk := s.Group + "/" + s.Version + " " + s.Kind
			dt, ok := s.Typing.SelfType(pattern)
			if !ok {
				dynamic(v.field+".scope", fmt.Sprintf("the schema of %s does not type the scope's place (x-kubernetes-preserve-unknown-fields data, or no such property): self is dynamically typed there", gvk))
				continue
			}
			typed := map[string]*apiservercel.DeclType{varSelf: dt}
			check := func(field, src string) {
				_, ds := cel.Language{}.CompileTyped(scopedEnv(v.field), src, typed)
				for _, d := range ds {
					add(kinds.SeverityError, codeSchemaType, field, d.Pos+1,
						fmt.Sprintf("with self typed by the schema of %s at %s: %s", gvk, v.scopeText, d.Msg),
						"read self as a CRD rule at the same place would: property names escaped (x-mode is self.x__dash__mode), only declared properties")
				}
			}
			check(v.e.field, v.e.cel.Source())
			if v.msgExpr != nil {
				check(v.field+".messageExpression", v.msgExpr.Source())
			}
		}
	}
	return out
}

// mayMatch reports whether the policy's match may select objects of
// group and kind.
func (r *Rule) mayMatch(group, kind string) bool {
	if len(r.match.resources) == 0 {
		return true
	}
	for _, f := range r.match.resources {
		if (f.groups == nil || slices.Contains(f.groups, group)) && (f.kinds == nil || slices.Contains(f.kinds, kind)) {
			return true
		}
	}
	return false
}
