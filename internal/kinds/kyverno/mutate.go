package kyverno

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/conditions"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/value"
)

// mutation is a compiled mutate: a patch (patchStrategicMerge or
// patchesJson6902, with {{ }} variables substituted per evaluation), or
// foreach entries.
type mutation struct {
	patch   *mutatePatch
	foreach []*foreachM
	// targets: the existing objects the patch applies to (mutate
	// existing), in place of the object admitted.
	targets []*targetM
	// onPolicyUpdate: mutateExistingOnPolicyUpdate (nil: the policy's).
	onPolicyUpdate *bool
}

// targetM is a compiled mutate.targets entry: its selector (apiVersion,
// kind, namespace, name, uid, selector) substituted per evaluation as one
// document, its context and preconditions read with the target.
type targetM struct {
	field   string
	spec    *subst.Document
	context []*ctxEntry
	pre     *conditions.Set
}

// mutatePatch is one patch of a mutate or of a foreach entry.
type mutatePatch struct {
	field string
	smp   *subst.Document // patchStrategicMerge
	json  *subst.Document // patchesJson6902 (a string)
	// fixed is patchesJson6902 decoded once, when it holds no variable.
	fixed jsonpatch.Patch
}

// foreachM is a compiled mutate.foreach entry.
type foreachM struct {
	field   string
	list    *jpExpr
	reverse bool // Descending (the default for patchStrategicMerge)
	context []*ctxEntry
	pre     *conditions.Set
	patch   *mutatePatch
	foreach []*foreachM
}

// mutation compiles a rule's mutate.
func (c *compiler) mutation(field string, raw []byte) *mutation {
	var m kyvernov1.Mutation
	if !c.decodeInto(field, raw, &m) {
		return nil
	}
	out := &mutation{onPolicyUpdate: m.MutateExistingOnPolicyUpdate}
	for i := range m.Targets {
		out.targets = append(out.targets, c.target(fmt.Sprintf("%s.targets[%d]", field, i), &m.Targets[i]))
	}
	switch {
	case len(m.ForEach) > 0:
		if m.PatchStrategicMerge != nil || m.PatchesJSON6902 != "" {
			c.errf(field, "a mutate has foreach or a patch, not both")
		}
		out.foreach = c.foreachMutation(field+".foreach", m.ForEach)
	default:
		out.patch = c.mutatePatch(field, m.PatchStrategicMerge, m.PatchesJSON6902)
		if out.patch == nil {
			c.errf(field, "mutate needs one of patchStrategicMerge, patchesJson6902 or foreach")
		}
	}
	return out
}

// target compiles a mutate.targets entry.
func (c *compiler) target(field string, t *kyvernov1.TargetResourceSpec) *targetM {
	out := &targetM{field: field, context: c.contextEntries(field+".context", t.Context)}
	if t.APIVersion == "" || t.Kind == "" {
		c.errf(field, "a target needs an apiVersion and a kind")
	}
	if t.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(t.Selector); err != nil {
			c.errf(field+".selector", "%v", err)
		}
	}
	sel := *t
	sel.Context, sel.Preconditions = nil, nil
	raw, err := json.Marshal(&sel)
	if err != nil {
		c.errf(field, "%v", err)
		return out
	}
	out.spec = c.document(field, raw)
	if t.Preconditions != nil {
		out.pre = c.conditionsOf(field+".preconditions", t.Preconditions)
	}
	return out
}

func (c *compiler) mutatePatch(field string, smp *apiextensionsv1.JSON, jsonPatch string) *mutatePatch {
	switch {
	case smp != nil && jsonPatch != "":
		c.errf(field, "patchStrategicMerge and patchesJson6902 cannot be used together")
		return nil
	case smp != nil:
		return &mutatePatch{field: field + ".patchStrategicMerge", smp: c.document(field+".patchStrategicMerge", smp.Raw)}
	case jsonPatch != "":
		f := field + ".patchesJson6902"
		d, err := subst.CompileDocument(jsonPatch)
		if err != nil {
			c.errf(f, "%v", err)
			return nil
		}
		c.p.progs.add(c, f, d.Expressions())
		mp := &mutatePatch{field: f, json: d}
		if !d.HasVariables() {
			// The text as substituted (escapes removed), decoded once.
			text, _ := d.Static().(string)
			var err error
			if mp.fixed, err = decodeJSONPatch(text); err != nil {
				c.errf(f, "%v", err)
			}
		}
		return mp
	}
	return nil
}

func (c *compiler) foreachMutation(field string, fs []kyvernov1.ForEachMutation) []*foreachM {
	var out []*foreachM
	for i := range fs {
		f := &fs[i]
		ff := fmt.Sprintf("%s[%d]", field, i)
		fm := &foreachM{field: ff, reverse: f.PatchStrategicMerge != nil}
		if f.List == "" {
			c.errf(ff+".list", "a foreach needs a list")
		} else {
			fm.list = c.jmesPath(ff+".list", f.List)
		}
		if f.Order != nil {
			switch *f.Order {
			case "Ascending":
				fm.reverse = false
			case "Descending":
				fm.reverse = true
			default:
				c.errf(ff+".order", "must be Ascending or Descending, not %q", *f.Order)
			}
		}
		fm.context = c.contextEntries(ff+".context", f.Context)
		if f.Preconditions != nil {
			fm.pre = c.block(ff+".preconditions", f.Preconditions.All, f.Preconditions.Any, f.Preconditions.Any != nil)
		}
		if f.ForEach != nil {
			var nested []kyvernov1.ForEachMutation
			if c.decodeInto(ff+".foreach", f.ForEach.Raw, &nested) {
				fm.foreach = c.foreachMutation(ff+".foreach", nested)
			}
		} else if fm.patch = c.mutatePatch(ff, f.PatchStrategicMerge, f.PatchesJSON6902); fm.patch == nil {
			c.errf(ff, "a foreach needs one of patchStrategicMerge, patchesJson6902 or foreach")
		}
		out = append(out, fm)
	}
	return out
}

// decodeJSONPatch reads patchesJson6902: YAML or JSON, a list of
// operations.
func decodeJSONPatch(text string) (jsonpatch.Patch, error) {
	data, err := sigsyaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, err
	}
	return jsonpatch.DecodePatch(data)
}

// mutationResult is what a mutate rule made of the object: its result,
// and the object after it (nil when unchanged).
type mutationResult struct {
	res RuleResult
	obj any
}

// existing reports whether the mutate changes existing objects (targets)
// rather than the object admitted.
func (m *mutation) existing() bool { return m != nil && len(m.targets) > 0 }

// mutateExisting applies the rule's patch (or foreach) to each existing
// target, as Kyverno's mutate existing does: the target read as the
// variable target, its own context and preconditions; the object admitted
// is left as it is. A changed target goes to the engine (Handle.Change)
// with the patch that makes it. One result per target; none when no
// target exists.
func (p *Policy) mutateExisting(h *engine.Handle, r *rule, s *scope) []RuleResult {
	var out []RuleResult
	n := 0
	for _, tm := range r.m.targets {
		objs, err := p.targets(h, s, tm)
		if err != nil {
			out = append(out, errorResult(r, "failed to load targets", err))
			continue
		}
		for _, tobj := range objs {
			if n++; n > maxGeneratedPerRule {
				return append(out, errorResult(r, "failed to load targets", fmt.Errorf("a rule may mutate at most %d objects", maxGeneratedPerRule)))
			}
			res := p.mutateTarget(h, r, s, tm, tobj)
			res.Target = TargetName(tobj)
			out = append(out, res)
		}
	}
	return out
}

// TargetName is how a result names its target: "Kind namespace/name" (or
// "Kind name" when cluster-scoped).
func TargetName(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	md := metadataOf(obj)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		return kind + " " + ns + "/" + name
	}
	return kind + " " + name
}

// mutateTarget mutates one target.
func (p *Policy) mutateTarget(h *engine.Handle, r *rule, s *scope, tm *targetM, tobj map[string]any) RuleResult {
	lib, err := jmespath.Prepare(tobj)
	if err != nil {
		return errorResult(r, "failed to add target resource to the context", err)
	}
	ts, err := s.with("target", lib).load(h, tm.context)
	if err != nil {
		return errorResult(r, "failed to load context", err)
	}
	if tm.pre != nil {
		pass, msg, err := tm.pre.Eval(ts.ctx, ts, nil)
		if err != nil {
			return errorResult(r, "failed to evaluate preconditions", err)
		}
		if !pass {
			return RuleResult{Rule: r.name, Status: Skip, Message: joinNonEmpty("; ", "preconditions not met", msg)}
		}
	}
	var mr mutationResult
	if r.m.foreach != nil {
		mr = p.mutateForeach(h, r, ts, r.m.foreach, tobj, 0)
	} else {
		mr = p.applyPatch(r, ts, r.m.patch, tobj)
	}
	if mr.res.Status != Pass {
		return mr.res
	}
	out, _ := mr.obj.(map[string]any)
	ops := patch.Diff(tobj, out)
	if rv, _ := metadataOf(tobj)["resourceVersion"].(string); rv != "" {
		ops = append([]patch.Operation{{Op: patch.Test, Path: patch.Pointer{"metadata", "resourceVersion"}, Value: rv}}, ops...)
	}
	h.Change(r.name, out, ops)
	return RuleResult{Rule: r.name, Status: Pass, Message: mutatedMessage(out), Generated: []map[string]any{out}}
}

// targets are the existing objects a target entry picks, read through the
// object reader as the policy's owner could (a Policy in its own
// namespace only): by name, or listed (by selector, and by the name's and
// namespace's wildcards).
func (p *Policy) targets(h *engine.Handle, s *scope, tm *targetM) ([]map[string]any, error) {
	v, err := tm.spec.Substitute(s.ctx, s)
	if err != nil {
		return nil, fmt.Errorf("failed to substitute variables in %s: %w", tm.field, err)
	}
	t, _ := v.(map[string]any) // read only: shared with the compiled spec and the request
	apiVersion, kind, name := str(t, "apiVersion"), str(t, "kind"), str(t, "name")
	ns := str(t, "namespace")
	if p.ns != "" {
		ns = p.ns // as Kyverno: a Policy's targets are in its namespace
	}
	wild := func(s string) bool { return strings.ContainsAny(s, "*?") }
	if name != "" && !wild(name) && !wild(ns) && t["selector"] == nil {
		kr, err := p.sourceReader(h, "reads targets", apiVersion, kind, ns, name)
		if err != nil {
			return nil, err
		}
		obj, err := kr.GetKind(h.Context(), apiVersion, kind, ns, name)
		if err != nil || obj == nil {
			return nil, err // none: no target
		}
		return []map[string]any{obj}, nil
	}
	sel, err := selectorText(t["selector"])
	if err != nil {
		return nil, fmt.Errorf("%s.selector: %w", tm.field, err)
	}
	listNS := ns
	if wild(ns) {
		listNS = ""
	}
	objs, err := p.listSources(h, apiVersion, kind, listNS, sel)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, o := range objs {
		md := metadataOf(o)
		if (name == "" || lang.MatchWildcard(name, str(md, "name"))) && (ns == "" || lang.MatchWildcard(ns, str(md, "namespace"))) {
			out = append(out, o)
		}
	}
	return out, nil
}

// mutateRule evaluates a mutate rule over the object as the rules before
// it left it, and patches the difference.
func (p *Policy) mutateRule(h *engine.Handle, r *rule, s *scope) RuleResult {
	orig := h.Object()
	var mr mutationResult
	if r.m.foreach != nil {
		mr = p.mutateForeach(h, r, s, r.m.foreach, orig, 0)
		if mr.res.Status == Error {
			mr.res.Message = "failed to mutate elements: " + mr.res.Message
		}
	} else {
		mr = p.applyPatch(r, s, r.m.patch, orig)
	}
	if mr.res.Status != Pass {
		return mr.res
	}
	if err := h.Patch(patch.Diff(orig, mr.obj)); err != nil {
		return errorResult(r, "failed to patch resource", err)
	}
	return RuleResult{Rule: r.name, Status: Pass, Message: mutatedMessage(mr.obj)}
}

// mutatedMessage is Kyverno's message of a rule that mutated the object.
func mutatedMessage(obj any) string {
	m, _ := obj.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	kind, _ := m["kind"].(string)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		return fmt.Sprintf("mutated %s/%s in namespace %s", kind, name, ns)
	}
	return fmt.Sprintf("mutated %s/%s", kind, name)
}

// applyPatch applies one patch to obj (unchanged): pass with the new
// object, skip when nothing changed, or the error.
func (p *Policy) applyPatch(r *rule, s *scope, mp *mutatePatch, obj any) mutationResult {
	errorOf := func(what string, err error) mutationResult {
		return mutationResult{res: errorResult(r, what, err)}
	}
	var out any
	switch {
	case mp.smp != nil:
		ov, err := mp.smp.Substitute(s.ctx, s)
		if err != nil {
			return errorOf("variable substitution failed", err)
		}
		if out, err = strategicMerge(obj, ov); err != nil {
			return errorOf("failed to patch resource", err)
		}
	default:
		p := mp.fixed
		if p == nil {
			text, err := mp.json.Substitute(s.ctx, s)
			if err != nil {
				return errorOf("variable substitution failed", err)
			}
			str, ok := text.(string)
			if !ok {
				return errorOf("variable substitution failed", fmt.Errorf("patchesJson6902 became a JSON %s", value.TypeName(text)))
			}
			if p, err = decodeJSONPatch(str); err != nil {
				return errorOf("failed to patch resource", fmt.Errorf("failed to decode patches: %w", err))
			}
		}
		var err error
		if out, err = patch.ApplyJSONPatchLenient(p, obj); err != nil {
			return errorOf("failed to patch resource", err)
		}
	}
	if value.Equal(obj, out) {
		return mutationResult{res: RuleResult{Rule: r.name, Status: Skip, Message: "no patches applied"}}
	}
	return mutationResult{res: RuleResult{Rule: r.name, Status: Pass}, obj: out}
}

// mutateForeach is Kyverno's mutate.foreach at one level: each entry's
// elements mutate the object in turn (the context's request.object is the
// object as the entries before left it); no element applied is a skip.
func (p *Policy) mutateForeach(h *engine.Handle, r *rule, s *scope, fes []*foreachM, obj any, nesting int) mutationResult {
	applied := 0
	cur := obj
	for _, fe := range fes {
		if fe.list == nil {
			continue
		}
		v, err := s.search(fe.list)
		if err != nil && !errors.Is(err, subst.ErrUndefined) {
			return mutationResult{res: errorResult(r, fmt.Sprintf("failed to evaluate list %s", fe.list.prog.Source()), err)}
		}
		elems, ok := v.([]any)
		if !ok {
			elems = []any{v}
		}
		mr := p.mutateElements(h, r, s, fe, elems, cur, nesting)
		switch mr.res.Status {
		case Error:
			return mr
		case Skip:
			continue
		}
		applied++
		cur = mr.obj
		lib, err := jmespath.Prepare(cur)
		if err != nil {
			return mutationResult{res: errorResult(r, "failed to update resource in context", err)}
		}
		s = s.with("request.object", lib)
		s.obj = cur
	}
	if applied == 0 {
		return mutationResult{res: RuleResult{Rule: r.name, Status: Skip, Message: "0 elements processed"}}
	}
	return mutationResult{res: RuleResult{Rule: r.name, Status: Pass, Message: fmt.Sprintf("%d elements processed", applied)}, obj: cur}
}

// mutateElements mutates obj once per element of one foreach entry (in
// reverse for a patchStrategicMerge, unless its order says otherwise).
func (p *Policy) mutateElements(h *engine.Handle, r *rule, s *scope, fe *foreachM, elems []any, obj any, nesting int) mutationResult {
	cur := obj
	idx := make([]int, len(elems))
	for i := range idx {
		idx[i] = i
	}
	if fe.reverse {
		slices.Reverse(idx)
	}
	for _, i := range idx {
		el := elems[i]
		if el == nil {
			continue
		}
		if err := h.Context().Err(); err != nil {
			return mutationResult{res: errorResult(r, "failed to mutate elements", err)}
		}
		es := s.with("element", el).with("elementIndex", float64(i)).
			with(fmt.Sprintf("element%d", nesting), el).with(fmt.Sprintf("elementIndex%d", nesting), float64(i))
		es, err := es.load(h, fe.context)
		if err != nil {
			return mutationResult{res: errorResult(r, fmt.Sprintf("failed to load to mutate.foreach[%d].context", i), err)}
		}
		if fe.pre != nil {
			pass, _, err := fe.pre.Eval(es.ctx, es, nil)
			if err != nil {
				return mutationResult{res: errorResult(r, fmt.Sprintf("failed to evaluate mutate.foreach[%d].preconditions", i), err)}
			}
			if !pass {
				continue
			}
		}
		var mr mutationResult
		if fe.foreach != nil {
			mr = p.mutateForeach(h, r, es, fe.foreach, cur, nesting+1)
		} else {
			mr = p.applyPatch(r, es, fe.patch, cur)
		}
		switch mr.res.Status {
		case Error, Fail:
			return mr
		case Pass:
			cur = mr.obj
		}
	}
	if value.Equal(obj, cur) {
		return mutationResult{res: RuleResult{Rule: r.name, Status: Skip, Message: "no patches applied"}}
	}
	return mutationResult{res: RuleResult{Rule: r.name, Status: Pass}, obj: cur}
}
