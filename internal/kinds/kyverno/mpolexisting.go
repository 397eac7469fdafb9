package kyverno

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// A MutatingPolicy with evaluation.mutateExisting mutates existing objects
// too, as Kyverno's background controller does once a trigger (an object
// the policy matches) is admitted: its targets are the objects of the
// resources targetMatchConstraints names (else matchConstraints), in the
// namespaces its namespace selector picks (a namespaced policy's own
// namespace) and with the labels its object selector asks; each target
// is mutated by the policy's mutations, its match conditions holding for
// it, with the trigger's request, and changed by the difference (its
// resourceVersion tested). In the cluster the operator patches them
// (engine.Handle.Change); offline apply prints them and a test suite
// compares them (targetResources).

// mpolTargets are where a MutatingPolicy's targets are listed.
type mpolTargets struct {
	resources []targetResource
	// nsSelector picks the namespaces (hasNSSelector: one is given);
	// objSelector the objects' labels (selector syntax).
	nsSelector    string
	hasNSSelector bool
	objSelector   string
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
			c.errf("spec.targetMatchConstraints.expression", "targets selected by an expression are not supported: name their resources (resourceRules)")
			return nil
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
	for i, r := range mc.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					res, _, _ = strings.Cut(res, "/")
					if g == "*" || v == "*" || res == "*" {
						c.errf(fmt.Sprintf("%s.resourceRules[%d]", field, i), "mutateExisting lists its targets: name their group, version and resource (not *)")
						return nil
					}
					out.resources = append(out.resources, targetResource{g, v, res})
				}
			}
		}
	}
	sel := func(f string, ls *metav1.LabelSelector) string {
		if ls == nil {
			return ""
		}
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			c.errf(f, "%v", err)
			return ""
		}
		return s.String()
	}
	if mc.NamespaceSelector != nil {
		out.hasNSSelector = true
		out.nsSelector = sel(field+".namespaceSelector", mc.NamespaceSelector)
	}
	out.objSelector = sel(field+".objectSelector", mc.ObjectSelector)
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
// its owner could read them (a namespaced policy in its namespace only).
func (p *CELPolicy) targets(h *engine.Handle) ([]map[string]any, error) {
	kr := h.Kinds()
	if kr == nil {
		return nil, engine.NoReader("no reader of the objects to mutate (offline: give them with --context or a test's targetResources)")
	}
	t := p.existing
	// selected are the namespaces the selector picks (nil: any): the
	// targets are listed once per resource and kept when in one of them.
	var selected map[string]bool
	if t.hasNSSelector && p.ns == "" {
		nss, err := kr.ListKind(h.Context(), "v1", "Namespace", "", t.nsSelector)
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
		objs, err := kr.ListKind(h.Context(), apiVersion, kind, p.ns, t.objSelector)
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
// does: the policy's match conditions and variables over the target, its
// mutations in order; a target they change is changed by the difference.
// Each target gives a result naming it (Target).
func (p *CELPolicy) mutateTargets(h *engine.Handle) []RuleResult {
	objs, err := p.targets(h)
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
	act, done := p.prepareWith(h, tobj, nil)
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
