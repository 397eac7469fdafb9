package kinitiras

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"

	jsonpatchv4 "gopkg.in/evanphx/json-patch.v4"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// The kinds, group and version.
const (
	Group               = "policy.kcloudlabs.io"
	Version             = "v1alpha1"
	KindOverridePolicy  = "OverridePolicy"
	KindClusterOverride = "ClusterOverridePolicy"
	KindClusterValidate = "ClusterValidatePolicy"
)

// manifest is a policy as stored: the fields this part of the kind reads.
type manifest struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		ResourceSelectors []ResourceSelector `json:"resourceSelectors"`
		OverrideRules     []struct {
			TargetOperations []string `json:"targetOperations"`
			Overriders       struct {
				Plaintext   []json.RawMessage `json:"plaintext"`
				Cue         string            `json:"cue"`
				Template    *OverrideTemplate `json:"template"`
				RenderedCue string            `json:"renderedCue"`
				Origin      []Origin          `json:"origin"`
			} `json:"overriders"`
		} `json:"overrideRules"`
		ValidateRules []struct {
			TargetOperations []string          `json:"targetOperations"`
			Cue              string            `json:"cue"`
			Template         *ValidateTemplate `json:"template"`
			RenderedCue      string            `json:"renderedCue"`
		} `json:"validateRules"`
	} `json:"spec"`
}

// Policy is a compiled kinitiras policy. It is immutable.
type Policy struct {
	Kind, Namespace, Name string
	selectors             []ResourceSelector
	overrides             []overrideRule
	validates             []validateRule
	// Overriders keeps each override rule's overriders as written (the
	// applied-overrides annotations list them).
	overriders []json.RawMessage
}

type ops []string // target operations; empty or "*": all

func (o ops) has(op rules.Operation) bool {
	return len(o) == 0 || slices.Contains(o, "*") || slices.Contains(o, string(op))
}

type overrideRule struct {
	ops       ops
	refs      []extRef         // the template's references to other objects and HTTP
	rendered  *cuelang.Program // only with a template, as kinitiras
	direct    *directMetadata  // the template run directly in Go (equal to rendered)
	origin    []Origin
	cue       *cuelang.Program
	plaintext []any // JSON-patch operations
}

type validateRule struct {
	ops      ops
	refs     []extRef
	direct   *directCondition // the template run directly in Go, equal to rendered
	rendered *cuelang.Program
	cue      *cuelang.Program
}

// Compile compiles a policy manifest (a JSON tree); a policy that does not
// compile gives a *rules.CompileError naming every problem.
func Compile(obj map[string]any, opts ...Option) (*Policy, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	b, err := value.Encode(obj)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		kind, _ := obj["kind"].(string)
		return nil, kinds.DecodeError(&kinds.Manifest{Object: obj, JSON: b}, kind, reflect.TypeOf(m), err)
	}
	p := &Policy{Kind: m.Kind, Namespace: m.Metadata.Namespace, Name: m.Metadata.Name, selectors: m.Spec.ResourceSelectors}
	var errs []rules.FieldError
	for i, sel := range m.Spec.ResourceSelectors {
		if sel.FieldSelector == nil {
			continue
		}
		for j, r := range sel.FieldSelector.MatchExpressions {
			if r.Field == "" {
				errs = append(errs, rules.FieldError{Field: fmt.Sprintf("spec.resourceSelectors[%d].fieldSelector.matchExpressions[%d].field", i, j), Pos: -1,
					Msg: "field (a dotted path) is required; kinitiras' requirement spells field, operator and value"})
			}
		}
	}
	prog := func(field, src string) *cuelang.Program {
		if src == "" {
			return nil
		}
		pr, ds := o.cue.CompileExpr(&lang.Env{Name: field}, src)
		for _, d := range ds {
			errs = append(errs, rules.FieldError{Field: field, Pos: d.Pos, Msg: d.Msg})
		}
		return pr
	}
	for i, r := range m.Spec.OverrideRules {
		field := fmt.Sprintf("spec.overrideRules[%d].overriders", i)
		or := overrideRule{ops: r.TargetOperations, cue: prog(field+".cue", r.Overriders.Cue), refs: overrideRefs(r.Overriders.Template, "overriders.template")}
		if t := r.Overriders.Template; t != nil || r.Overriders.RenderedCue != "" {
			var direct bool
			or.rendered, direct = templateProgram(prog, &errs, field, t != nil, r.Overriders.RenderedCue,
				func() (string, []rules.FieldError) { return RenderOverride(t, field+".template") })
			if direct {
				or.direct = newDirectMetadata(t)
			}
		}
		errs = append(errs, checkOrigins(r.Overriders.Origin, field)...)
		or.origin = r.Overriders.Origin
		for j, raw := range r.Overriders.Plaintext {
			v, err := value.Decode(raw)
			if err != nil {
				errs = append(errs, rules.FieldError{Field: fmt.Sprintf("%s.plaintext[%d]", field, j), Pos: -1, Msg: err.Error()})
				continue
			}
			or.plaintext = append(or.plaintext, v)
		}
		if _, err := decodeV4(or.plaintext); err != nil && len(or.plaintext) > 0 {
			errs = append(errs, rules.FieldError{Field: field + ".plaintext", Pos: -1, Msg: err.Error()})
		}
		b, _ := json.Marshal(r.Overriders)
		p.overriders = append(p.overriders, b)
		p.overrides = append(p.overrides, or)
	}
	for i, r := range m.Spec.ValidateRules {
		field := fmt.Sprintf("spec.validateRules[%d]", i)
		vr := validateRule{ops: r.TargetOperations, cue: prog(field+".cue", r.Cue), refs: validateRefs(r.Template, "template")}
		if t := r.Template; t != nil || r.RenderedCue != "" {
			var direct bool
			vr.rendered, direct = templateProgram(prog, &errs, field, t != nil, r.RenderedCue,
				func() (string, []rules.FieldError) { return RenderValidate(t, field+".template") })
			if direct {
				vr.direct = newDirectCondition(t)
			}
		}
		p.validates = append(p.validates, vr)
	}
	if len(errs) > 0 {
		return p, &rules.CompileError{Kind: p.Kind, Rule: p.key(), Errors: errs}
	}
	return p, nil
}

// templateProgram is the program a rule's template runs: as kinitiras, the
// renderedCue its policy webhook stored (render, which the webhook and
// lint check, gives modwright's own: the template then runs natively when
// the two are the same); else, not through the webhook (offline), the
// template rendered here. A renderedCue without a template is checked but
// not run, as kinitiras runs it only with a template.
func templateProgram(prog func(field, src string) *cuelang.Program, errs *[]rules.FieldError, field string, hasTemplate bool,
	stored string, render func() (string, []rules.FieldError)) (*cuelang.Program, bool) {
	switch {
	case !hasTemplate:
		prog(field+".renderedCue", stored)
		return nil, false
	case stored != "":
		src, es := render()
		return prog(field+".renderedCue", stored), len(es) == 0 && src == stored
	}
	src, es := render()
	*errs = append(*errs, es...)
	if src == "" {
		return nil, false
	}
	return prog(field+".template (rendered)", src), true
}

// selects reports whether the policy applies to obj: its selectors (none:
// every object).
func (p *Policy) selects(obj map[string]any) bool {
	return len(p.selectors) == 0 || Matches(obj, p.selectors)
}

// Applied is one override rule applied, as kinitiras records it.
type Applied struct {
	PolicyName string          `json:"policyName"`
	Overriders json.RawMessage `json:"overriders"`
}

// ApplyOverrides applies the override policies to obj as kinitiras does:
// ClusterOverridePolicies, then the OverridePolicies of the object's
// namespace (modwright: only those; kinitiras also applied other
// namespaces' when their selectors matched), each group's matching rules
// sorted by policy name; within a rule renderedCue (with a template),
// then cue, then plaintext, each seeing the one before. obj is not
// modified.
func ApplyOverrides(ctx context.Context, rd *Readers, policies []*Policy, obj, old map[string]any, op rules.Operation) (result map[string]any, cluster, namespaced []Applied, err error) {
	cur := any(obj)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	for _, group := range []string{KindClusterOverride, KindOverridePolicy} {
		type match struct {
			p *Policy
			i int
		}
		var ms []match
		for _, p := range policies {
			if p.Kind != group || (group == KindOverridePolicy && (ns == "" || p.Namespace != ns)) {
				continue
			}
			cm, _ := cur.(map[string]any)
			if !p.selects(cm) {
				continue
			}
			for i := range p.overrides {
				if p.overrides[i].ops.has(op) {
					ms = append(ms, match{p, i})
				}
			}
		}
		sort.SliceStable(ms, func(a, b int) bool { return ms[a].p.Name < ms[b].p.Name })
		for _, m := range ms {
			r := &m.p.overrides[m.i]
			if cur, err = r.apply(ctx, rd, cur, old); err != nil {
				return nil, nil, nil, fmt.Errorf("%s %s: %w", m.p.Kind, m.p.key(), err)
			}
			a := Applied{PolicyName: m.p.Name, Overriders: m.p.overriders[m.i]}
			if group == KindClusterOverride {
				cluster = append(cluster, a)
			} else {
				namespaced = append(namespaced, a)
			}
		}
	}
	result, _ = cur.(map[string]any)
	return result, cluster, namespaced, nil
}

func (p *Policy) key() string { return rules.Key(p.Namespace, p.Name) }

func (r *overrideRule) apply(ctx context.Context, rd *Readers, obj any, old map[string]any) (any, error) {
	if r.rendered != nil {
		var o any = map[string]any{}
		if old != nil {
			o = old
		}
		cur, _ := obj.(map[string]any)
		extra, err := extraParams(ctx, rd, cur, r.refs)
		if err != nil {
			return nil, err
		}
		var out any
		if r.direct != nil {
			out = r.direct.patches(&sources{object: obj, oldObject: o, hasOld: true, extra: extra})
		} else {
			data := map[string]any{"object": obj, "oldObject": o, "extraParams": extra}
			if out, err = r.rendered.Run(ctx, map[string]any{cuelang.VarData: data}, cuelang.OutputPatches); err != nil {
				return nil, fmt.Errorf("renderedCue: %w", err)
			}
		}
		if obj, err = applyPatches(out, obj); err != nil {
			return nil, fmt.Errorf("renderedCue: %w", err)
		}
	}
	if r.cue != nil {
		out, err := r.cue.RunTasks(ctx, map[string]any{cuelang.VarObject: obj}, cuelang.OutputPatches, rd.tasks())
		if err != nil {
			return nil, fmt.Errorf("cue: %w", err)
		}
		if obj, err = applyPatches(out, obj); err != nil {
			return nil, fmt.Errorf("cue: %w", err)
		}
	}
	if len(r.origin) > 0 {
		// Each computed from the object as the origin step found it, then
		// applied in order (kinitiras then skipped plaintext: modwright
		// applies it).
		cur, _ := obj.(map[string]any)
		ops, err := originPatches(cur, r.origin)
		if err != nil {
			return nil, err
		}
		if obj, err = applyPatches(ops, obj); err != nil {
			return nil, fmt.Errorf("origin: %w", err)
		}
	}
	if len(r.plaintext) > 0 {
		var err error
		if obj, err = applyPatches(r.plaintext, obj); err != nil {
			return nil, fmt.Errorf("plaintext: %w", err)
		}
	}
	return obj, nil
}

func decodeV4(ops any) (jsonpatchv4.Patch, error) {
	b, err := value.Encode(ops)
	if err != nil {
		return nil, err
	}
	return jsonpatchv4.DecodePatch(b)
}

// applyPatches applies JSON-patch operations as kinitiras does (json-patch
// v4; through a copy-on-write document when v4 would apply them alike).
func applyPatches(ops any, obj any) (any, error) {
	l, ok := ops.([]any)
	if !ok {
		return nil, fmt.Errorf("patches must be a list of JSON-patch operations, not %v", ops)
	}
	return patch.ApplyV4(l, obj)
}

// Validate runs the ClusterValidatePolicies as kinitiras does, in order:
// the first rule whose program gives valid false rejects, with its reason;
// oldObject is passed on UPDATE only.
func Validate(ctx context.Context, rd *Readers, policies []*Policy, obj, old map[string]any, op rules.Operation) (allowed bool, message string, err error) {
	if op != rules.Update {
		old = nil
	}
	for _, p := range policies {
		if p.Kind != KindClusterValidate || !p.selects(obj) {
			continue
		}
		for i := range p.validates {
			r := &p.validates[i]
			if !r.ops.has(op) {
				continue
			}
			if r.rendered != nil {
				extra, err := extraParams(ctx, rd, obj, r.refs)
				if err != nil {
					return false, "", &RuleError{Policy: p.key(), Index: i, Err: err}
				}
				var ok bool
				var msg string
				if r.direct != nil {
					ok, msg, err = r.direct.validate(&sources{object: obj, oldObject: old, hasOld: old != nil, extra: extra})
				} else {
					data := map[string]any{"object": obj, "extraParams": extra}
					if old != nil {
						data["oldObject"] = old
					}
					ok, msg, err = runValidate(ctx, r.rendered, map[string]any{cuelang.VarData: data}, nil)
				}
				if err != nil {
					return false, "", &RuleError{Policy: p.key(), Index: i, Err: fmt.Errorf("template: %w", err)}
				}
				if !ok {
					return false, msg, nil
				}
			}
			if r.cue != nil {
				params := map[string]any{cuelang.VarObject: obj}
				if old != nil {
					params[cuelang.VarOldObject] = old
				}
				ok, msg, err := runValidate(ctx, r.cue, params, rd.tasks())
				if err != nil {
					return false, "", &RuleError{Policy: p.key(), Index: i, Err: fmt.Errorf("cue: %w", err)}
				}
				if !ok {
					return false, msg, nil
				}
			}
		}
	}
	return true, "", nil
}

// RuleError is the failure of one validate rule (its index in
// spec.validateRules) of a policy.
type RuleError struct {
	Policy string
	Index  int
	Err    error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("%s spec.validateRules[%d]: %v", e.Policy, e.Index, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

func runValidate(ctx context.Context, p *cuelang.Program, params map[string]any, tasks cuelang.Tasks) (bool, string, error) {
	out, err := p.RunTasks(ctx, params, cuelang.OutputValidate, tasks)
	if err != nil {
		return false, "", err
	}
	return cuelang.ValidateResult(out)
}
