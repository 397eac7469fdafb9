package kyverno

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// A MutatingPolicy with evaluation.mutateExisting mutates existing objects
// too, as Kyverno's background controller does once a trigger (an object
// the policy matches) is admitted: its targets are the objects of the
// resources targetMatchConstraints names (else matchConstraints), in the
// namespaces its namespace selector picks (a namespaced policy's own
// namespace) and with the labels its object selector asks, or those its
// targetMatchConstraints.expression gives (a CEL expression over the
// trigger: an object, or a list's items, read with Kyverno's resource
// library); each target is mutated by the policy's mutations, its
// targetMatchConditions holding for it, with the trigger's request, and
// changed by the difference (its resourceVersion tested). In the cluster
// the operator patches them (engine.Handle.Change); offline apply prints
// them and a test suite compares them (targetResources).
//
// When the policy comes or changes, the operator mutates the targets that
// exist (engine.RuleInfo.Existing; each evaluated with Request.Existing):
// every target of its resources, trigger or not, as Kyverno does; with a
// target expression, those of each existing trigger.

// mpolTargets are where a MutatingPolicy's targets are listed.
type mpolTargets struct {
	resources []targetResource
	// expr selects the targets (targetMatchConstraints.expression); nil:
	// the resources, by the selectors.
	expr *cel.Program
	// nsSelector picks the namespaces (hasNSSelector: one is given);
	// objSelector the objects' labels (selector syntax).
	nsSelector    string
	hasNSSelector bool
	objSelector   string
	// nsSel and objSel are the same, parsed (isTarget matches with them).
	nsSel, objSel labels.Selector
}

// targetResource is one resource targets are listed from.
type targetResource struct {
	group, version, resource string
}

// KindResolver is a KindReader that knows the kind of a resource (in the
// cluster its REST mapping; offline the context objects'). Without one, a
// built-in resource's kind is Kubernetes'.
type KindResolver interface {
	KindFor(group, version, resource string) (string, error)
}

// errNoKind: a target resource whose kind is not known.
var errNoKind = errors.New("no kind is known for the resource")

func (c *compiler) mpolTargets(spec *kpoliciesv1.MutatingPolicySpec) *mpolTargets {
	mc := spec.MatchConstraints
	field := "spec.matchConstraints"
	if t := spec.TargetMatchConstraints; t != nil {
		if t.Expression != "" {
			// The triggers' resources are where the operator looks when
			// the policy comes (each trigger's targets, as Kyverno).
			out := &mpolTargets{expr: c.celProgram("spec.targetMatchConstraints.expression", t.Expression)}
			out.resources, _ = namedResources(mc)
			return out
		}
		if len(t.ResourceRules) > 0 {
			mc, field = &t.MatchResources, "spec.targetMatchConstraints"
		}
	}
	if mc == nil {
		c.errf(field, "mutateExisting needs the resources of its targets")
		return nil
	}
	out := &mpolTargets{}
	var i int
	if out.resources, i = namedResources(mc); i >= 0 {
		c.errf(fmt.Sprintf("%s.resourceRules[%d]", field, i), "mutateExisting lists its targets: name their group, version and resource (not *)")
		return nil
	}
	sel := func(f string, ls *metav1.LabelSelector) (string, labels.Selector) {
		if ls == nil {
			return "", labels.Everything()
		}
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			c.errf(f, "%v", err)
			return "", labels.Nothing()
		}
		return s.String(), s
	}
	if mc.NamespaceSelector != nil {
		out.hasNSSelector = true
		out.nsSelector, out.nsSel = sel(field+".namespaceSelector", mc.NamespaceSelector)
	}
	out.objSelector, out.objSel = sel(field+".objectSelector", mc.ObjectSelector)
	return out
}

// namedResources are the resources mc's rules name, and the index of the
// first rule with a wildcard (-1: none).
func namedResources(mc *admissionregistrationv1.MatchResources) ([]targetResource, int) {
	var out []targetResource
	if mc == nil {
		return nil, -1
	}
	for i, r := range mc.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					res, _, _ = strings.Cut(res, "/")
					if g == "*" || v == "*" || res == "*" {
						return nil, i
					}
					out = append(out, targetResource{g, v, res})
				}
			}
		}
	}
	return out, -1
}

// existingResources are the resources whose objects the operator
// evaluates when the policy comes (engine.RuleInfo.ExistingResources):
// its targets', or with a target expression its triggers' (nil: every
// kind its index takes, when a rule names them with a wildcard).
func (t *mpolTargets) existingResources() []engine.GroupVersionResource {
	var out []engine.GroupVersionResource
	for _, r := range t.resources {
		out = append(out, engine.GroupVersionResource{Group: r.group, Version: r.version, Resource: r.resource})
	}
	return out
}

// kindFor is the kind of a target resource.
func kindFor(h *engine.Handle, t targetResource) (string, error) {
	if kr, ok := h.Kinds().(KindResolver); ok {
		return kr.KindFor(t.group, t.version, t.resource)
	}
	gv := schema.GroupVersion{Group: t.group, Version: t.version}
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.GroupVersion() != gv || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == t.resource {
			return gvk.Kind, nil
		}
	}
	return "", fmt.Errorf("%w: %s", errNoKind, schema.GroupVersionResource{Group: t.group, Version: t.version, Resource: t.resource})
}

// targets lists the policy's targets through the engine's KindReader, as
// its owner could read them (a namespaced policy in its namespace only),
// or evaluates its target expression over the trigger (act).
func (p *CELPolicy) targets(h *engine.Handle, act *lang.Activation) ([]map[string]any, error) {
	if p.existing.expr != nil {
		return p.selectedTargets(h, act)
	}
	kr := h.Kinds()
	if kr == nil {
		return nil, engine.NoReader("no reader of the objects to mutate (offline: give them with --context or a test's targetResources)")
	}
	t := p.existing
	// selected are the namespaces the selector picks (nil: any): the
	// targets are listed once per resource and kept when in one of them.
	var selected map[string]bool
	if t.hasNSSelector && p.ns == "" {
		nss, err := kr.ListKind(h.Context(), "v1", "Namespace", "", t.nsSelector, 0)
		if err != nil {
			return nil, fmt.Errorf("listing the namespaces of the targets: %w", err)
		}
		selected = make(map[string]bool, len(nss))
		for _, n := range nss {
			if name, _ := metadataOf(n)["name"].(string); name != "" {
				selected[name] = true
			}
		}
	}
	var out []map[string]any
	for _, res := range t.resources {
		kind, err := kindFor(h, res)
		if err != nil {
			return nil, err
		}
		if p.ns != "" {
			if err := h.AuthorizeRead(p.ns, res.group, res.resource, p.ns, ""); err != nil {
				return nil, err
			}
		}
		apiVersion := schema.GroupVersion{Group: res.group, Version: res.version}.String()
		// Without a namespace selector the listing stops past the bound
		// (with one, the objects are kept by namespace after it).
		limit := 0
		if selected == nil {
			limit = maxGeneratedPerRule + 1 - len(out)
		}
		objs, err := kr.ListKind(h.Context(), apiVersion, kind, p.ns, t.objSelector, limit)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if ns, _ := metadataOf(o)["namespace"].(string); selected != nil && !selected[ns] {
				continue
			}
			if len(out) == maxGeneratedPerRule {
				return nil, fmt.Errorf("more than %d objects to mutate: a policy mutates at most %d", maxGeneratedPerRule, maxGeneratedPerRule)
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// mutateTargets mutates each target as Kyverno's background controller
// does: the policy's target match conditions and variables over the
// target, its mutations in order; a target they change is changed by the
// difference.
// Each target gives a result naming it (Target).
func (p *CELPolicy) mutateTargets(h *engine.Handle, act *lang.Activation) []RuleResult {
	objs, err := p.targets(h, act)
	if err != nil {
		return []RuleResult{{Status: Error, Message: "failed to load targets: " + err.Error(), cause: err}}
	}
	var out []RuleResult
	for _, tobj := range objs {
		res := p.mutateTarget(h, tobj)
		res.Target = TargetName(tobj)
		out = append(out, res)
	}
	return out
}

// mutateTarget mutates one target (read only: the reader's).
func (p *CELPolicy) mutateTarget(h *engine.Handle, tobj map[string]any) RuleResult {
	act, done := p.prepareWith(h, tobj, nil, p.targetConds)
	if done != nil {
		return *done
	}
	cur, res := p.applyMutations(h, act, tobj)
	if res != nil {
		return *res
	}
	ops := patch.Diff(tobj, cur)
	if len(ops) == 0 {
		return RuleResult{Status: Pass, Message: "success"}
	}
	if rv, _ := metadataOf(tobj)["resourceVersion"].(string); rv != "" {
		ops = append([]patch.Operation{{Op: patch.Test, Path: patch.Pointer{"metadata", "resourceVersion"}, Value: rv}}, ops...)
	}
	h.Change("", cur, ops)
	return RuleResult{Status: Pass, Message: "success", Generated: []map[string]any{cur}}
}

// mutatesExisting reports whether a review's trigger makes the policy
// mutate its targets: an admitted object, not a DELETE nor a background
// scan.
func (p *CELPolicy) mutatesExisting(h *engine.Handle) bool {
	q := h.Request()
	return p.existing != nil && !q.Background && q.Operation != rules.Delete && q.Operation != rules.Connect
}

// selectedTargets are the objects the target expression gives over the
// trigger: an object, or a list's items (Kyverno's resource.List), each
// named by its apiVersion, kind, namespace and name (a namespaced
// policy's in its own namespace) and read again through the engine's
// KindReader, as the policy's owner could read it: the object mutated is
// the one that exists, whatever the expression made of it. At most
// maxGeneratedPerRule.
func (p *CELPolicy) selectedTargets(h *engine.Handle, act *lang.Activation) ([]map[string]any, error) {
	const field = "spec.targetMatchConstraints.expression"
	v, err := p.existing.expr.Eval(h.Context(), act)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: gives a %s, not an object (or a list's items)", field, value.TypeName(v))
	}
	items := []any{m}
	if list, ok := m["items"].([]any); ok {
		items = list
	}
	if len(items) > maxGeneratedPerRule {
		return nil, fmt.Errorf("%s: %d objects to mutate: a policy mutates at most %d", field, len(items), maxGeneratedPerRule)
	}
	kr := h.Kinds()
	if kr == nil && len(items) > 0 {
		return nil, engine.NoReader("no reader of the objects to mutate (offline: give them with --context or a test's targetResources)")
	}
	out := make([]map[string]any, 0, len(items))
	for i, it := range items {
		o, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: item %d is a %s, not an object", field, i, value.TypeName(it))
		}
		apiVersion, _ := o["apiVersion"].(string)
		kind, _ := o["kind"].(string)
		name, _ := metadataOf(o)["name"].(string)
		ns, _ := metadataOf(o)["namespace"].(string)
		switch {
		case apiVersion == "" || kind == "" || name == "":
			return nil, fmt.Errorf("%s: item %d is no object (no apiVersion, kind or name)", field, i)
		case p.ns != "" && ns != p.ns:
			return nil, fmt.Errorf("%w: %s: %s is outside the policy's namespace %s", ErrOutsideNamespace, field, TargetName(o), p.ns)
		}
		if p.ns != "" {
			res, err := resourceOf(h, apiVersion, kind)
			if err != nil {
				return nil, fmt.Errorf("%s: item %d: %w", field, i, err)
			}
			gv, _ := schema.ParseGroupVersion(apiVersion)
			if err := h.AuthorizeRead(p.ns, gv.Group, res, ns, name); err != nil {
				return nil, err
			}
		}
		cur, err := kr.GetKind(h.Context(), apiVersion, kind, ns, name)
		if err != nil {
			return nil, fmt.Errorf("%s: item %d: %w", field, i, err)
		}
		if cur == nil {
			return nil, fmt.Errorf("%s: %s does not exist", field, TargetName(o))
		}
		out = append(out, cur)
	}
	return out, nil
}

// existingTargets reports whether the policy came and the object under
// evaluation, which exists, may be one of its targets (not a trigger:
// without a target expression, Kyverno mutates every target then).
func (p *CELPolicy) existingTargets(h *engine.Handle) bool {
	return p.mutatesExisting(h) && h.Request().Existing && p.existing.expr == nil
}

// mutateExistingTarget mutates the object under evaluation when it is one
// of the policy's targets (the policy came: engine.Request.Existing), its
// result naming it; nothing when it is none, or its target match
// conditions do not hold.
func (p *CELPolicy) mutateExistingTarget(h *engine.Handle) error {
	obj, _ := h.Object().(map[string]any)
	ok, err := p.isTarget(h, obj)
	if err != nil {
		h.Fail("spec", err)
		return nil
	}
	if !ok {
		return nil
	}
	res := p.mutateTarget(h, obj)
	if res.Status == Skip {
		return nil
	}
	res.Policy, res.Target = p.info.Key, TargetName(obj)
	if tr := h.Trace(); tr != nil {
		tr.Detail = &Trace{Results: []RuleResult{res}}
	}
	if res.Status == Error {
		h.Fail("spec", causedError{res.Message, res.cause})
	}
	return nil
}

// isTarget reports whether obj, of the request's resource, is one of the
// policy's targets: of its resources, in its namespace (a namespaced
// policy) or one its namespace selector picks, with the labels its object
// selector asks.
func (p *CELPolicy) isTarget(h *engine.Handle, obj map[string]any) (bool, error) {
	t := p.existing
	gvr, sub := requestResource(h)
	if obj == nil || sub != "" || !slices.Contains(t.resources, targetResource{gvr.Group, gvr.Version, gvr.Resource}) {
		return false, nil
	}
	ns, _ := metadataOf(obj)["namespace"].(string)
	if p.ns != "" && ns != p.ns {
		return false, nil
	}
	if !t.objSel.Matches(labels.Set(kinds.MetadataStrings(obj, "labels"))) {
		return false, nil
	}
	if t.hasNSSelector && p.ns == "" {
		if ns == "" {
			return false, nil // listed through the selected namespaces: a cluster-scoped object is none
		}
		ls, err := stateOf(h).selectorLabels(h, ns)
		if err != nil {
			return false, err
		}
		if !t.nsSel.Matches(labels.Set(ls)) {
			return false, nil
		}
	}
	return true, nil
}
