package kinitiras

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Kind is the adapter of one of kinitiras' three kinds. It is stateless
// and safe for concurrent use.
type Kind struct {
	name    string
	opts    []Option
	metrics *Metrics // nil: none
}

var (
	_ kinds.Kind       = (*Kind)(nil)
	_ kinds.Admitter   = (*Kind)(nil)
	_ kinds.Observed   = (*Kind)(nil)
	_ kinds.PathServed = (*Kind)(nil)
)

// NewKinds returns the three adapters (ClusterOverridePolicy,
// OverridePolicy, ClusterValidatePolicy) sharing one Metrics, the kinds'
// observer. Their options apply to every policy they compile.
func NewKinds(opts ...Option) []kinds.Kind {
	m := NewMetrics()
	return []kinds.Kind{&Kind{KindClusterOverride, opts, m}, &Kind{KindOverridePolicy, opts, m}, &Kind{KindClusterValidate, opts, m}}
}

// Observer is the kcloudlabs_* metrics (nil for an adapter made alone).
func (k *Kind) Observer() kinds.Observer {
	if k.metrics == nil {
		return nil
	}
	return k.metrics
}

// kinitiras' own webhook paths: override policies at /mutate, validate
// policies at /validate.
const (
	MutatePath   = "/mutate"
	ValidatePath = "/validate"
)

// OwnPath is the path kinitiras' webhook served the kind at.
func (k *Kind) OwnPath() (path, name string) {
	if k.name == KindClusterValidate {
		return ValidatePath, "kinitiras-validate"
	}
	return MutatePath, "kinitiras-mutate"
}

// Default renders the manifest's templates into renderedCue and defaults
// a condition's affectMode to reject, as kinitiras' policy webhook does.
func (k *Kind) Default(m *kinds.Manifest) ([]byte, error) {
	ops, err := Render(m.Object)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	return json.Marshal(ops)
}

// Check refuses a manifest whose templates do not render (its stored
// renderedCue, if any, was checked by Compile).
func (k *Kind) Check(m *kinds.Manifest) error {
	_, err := Render(m.Object)
	return err
}

// NewOverridePolicyKind, NewClusterOverridePolicyKind and
// NewClusterValidatePolicyKind return the adapters.
// Their options apply to every policy they compile.
func NewOverridePolicyKind(opts ...Option) *Kind { return &Kind{KindOverridePolicy, opts, nil} }
func NewClusterOverridePolicyKind(opts ...Option) *Kind {
	return &Kind{KindClusterOverride, opts, nil}
}
func NewClusterValidatePolicyKind(opts ...Option) *Kind {
	return &Kind{KindClusterValidate, opts, nil}
}

// Name is the kind's name.
func (k *Kind) Name() string { return k.name }

// Group is policy.kcloudlabs.io.
func (*Kind) Group() string { return Group }

// Versions are the versions served: v1alpha1.
func (*Kind) Versions() []string { return []string{Version} }

// Compile compiles a manifest into a rule: override policies mutate in
// tier 0 (after every ClusterOverridePolicy come the OverridePolicies, each
// kind's rules by name, as kinitiras orders them: the kernel's order is
// tier, kind, namespace, name); ClusterValidatePolicies validate the final
// object.
func (k *Kind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	if err := kinds.Served(m, k.name, Group+"/"+Version); err != nil {
		return nil, err
	}
	p, err := Compile(m.Object, k.opts...)
	if p == nil {
		return nil, err
	}
	r := &Rule{p: p}
	// kinitiras patches the object only, never its last-applied
	// configuration.
	r.RuleInfo = engine.RuleInfo{Kind: k.name, Key: p.key(), Namespace: p.Namespace, Name: p.Name, FailurePolicy: engine.FailureFail, KeepLastApplied: true}
	if err == nil {
		namespaceErr := func(msg string) error {
			return &rules.CompileError{Kind: k.name, Rule: p.key(), Errors: []rules.FieldError{{Field: "metadata.namespace", Pos: -1, Msg: msg}}}
		}
		switch {
		case k.name == KindOverridePolicy && p.Namespace == "":
			err = namespaceErr("an OverridePolicy needs a namespace")
		case k.name != KindOverridePolicy && p.Namespace != "":
			err = namespaceErr("a " + k.name + " has no namespace")
		}
	}
	r.Err = err
	all := []rules.Operation{rules.Create, rules.Update, rules.Delete, rules.Connect}
	var rulesOps []ops
	if k.name == KindClusterValidate {
		r.Phase = engine.Validate
		for _, v := range p.validates {
			rulesOps = append(rulesOps, v.ops)
		}
	} else {
		r.Phase = engine.Mutate
		all = all[:2] // an override never patches a DELETE (nor a CONNECT)
		for _, o := range p.overrides {
			rulesOps = append(rulesOps, o.ops)
		}
	}
	for _, op := range all {
		for _, o := range rulesOps {
			if o.has(op) {
				r.Index.Operations |= engine.OpSetOf(op)
				break
			}
		}
	}
	if k.name == KindOverridePolicy {
		r.Index.Namespace = p.Namespace
	} else {
		r.Index.AnyNamespace = true
	}
	var ks []string
	for _, s := range p.selectors {
		if !slices.Contains(ks, s.Kind) {
			ks = append(ks, s.Kind)
		}
	}
	if len(p.selectors) > 0 {
		r.Index.Kinds = ks
	}
	return r, err
}

// Rule is a compiled kinitiras policy as the kernel runs it.
type Rule struct {
	engine.RuleInfo
	p *Policy
}

var _ engine.Rule = (*Rule)(nil)

// Info returns the kernel's view of the rule.
func (r *Rule) Info() *engine.RuleInfo { return &r.RuleInfo }

// InScope is never asked (the index decides).
func (r *Rule) InScope(string) bool { return true }

// Match decides the selectors on the object as earlier rules left it.
func (r *Rule) Match(h *engine.Handle) (bool, error) {
	obj, _ := h.Object().(map[string]any)
	if h.Tracing() {
		tr := &Trace{}
		for i := range r.p.selectors {
			ok, err := SelectorMatches(&r.p.selectors[i], obj)
			tr.Selectors = append(tr.Selectors, SelectorVerdict{Selects: ok, Err: err})
		}
		h.Trace().Detail = tr
	}
	return r.p.selects(obj), nil
}

// Trace is what a policy records for explain: each selector's verdict.
type Trace struct {
	Selectors []SelectorVerdict
}

// SelectorVerdict is one resourceSelectors entry's verdict.
type SelectorVerdict struct {
	Selects bool
	Err     error
}

// Apply runs the policy's rules for the operation: overrides patch the
// object (the difference, atomically); validations deny with the reason,
// as kinitiras' webhook (403 Forbidden).
func (r *Rule) Apply(h *engine.Handle) error {
	obj, _ := h.Object().(map[string]any)
	op := h.Request().Operation
	var old map[string]any
	if q := h.Request(); op == rules.Update {
		old, _ = q.OldObject.(map[string]any)
		if old == nil && q.OldObjectJSON != nil {
			if v, err := value.Decode(q.OldObjectJSON); err == nil {
				old, _ = v.(map[string]any)
			}
		}
	}
	if r.Phase == engine.Validate {
		ok, msg, err := Validate(h.Context(), readersOf(h, r.Namespace), []*Policy{r.p}, obj, old, op)
		if re := (*RuleError)(nil); errors.As(err, &re) {
			return engine.InField(fmt.Sprintf("spec.validateRules[%d]", re.Index), re.Err)
		}
		if err != nil {
			return engine.InField("spec.validateRules", err)
		}
		if !ok {
			h.Deny(msg, "Forbidden", http.StatusForbidden)
		}
		return nil
	}
	var cur any = obj
	for i := range r.p.overrides {
		o := &r.p.overrides[i]
		if !o.ops.has(op) {
			continue
		}
		next, err := o.apply(h.Context(), readersOf(h, r.Namespace), cur, old)
		if err != nil {
			return engine.InField(fmt.Sprintf("spec.overrideRules[%d]", i), err)
		}
		cur = next
	}
	ops := patch.Diff(obj, cur)
	if len(ops) == 0 {
		return nil
	}
	if h.Tracing() {
		h.Trace().Ops = ops
	}
	return h.Patch(ops)
}

// readersOf are the engine's readers references use, confined to ns, the
// policy's namespace ("" for the cluster kinds: full reach), and, there,
// to what its rule reader may read.
func readersOf(h *engine.Handle, ns string) *Readers {
	rd := &Readers{Kinds: h.Kinds(), HTTP: h.HTTP(), Namespace: ns}
	if ns != "" { // the cluster kinds read as the operator (and allocate no closure)
		rd.Authorize = h.AuthorizeRead
	}
	return rd
}
