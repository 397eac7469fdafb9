package audit

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

// AdmissionPolicies audits objects against Kubernetes'
// ValidatingAdmissionPolicies (which the API server never audits), each
// policy alone with its bindings, as the API server would admit a CREATE
// of the object: a denial, a warning (the Warn action) or a
// validation_failure audit annotation (the Audit action) is a fail; a
// policy that admits says nothing. It is immutable.
type AdmissionPolicies struct {
	names   []string
	sets    []*admissionpolicy.Set
	objects *admissionpolicy.Objects
	grs     []schema.GroupResource
	all     bool
	// each are the resources each policy can match.
	each []policyResources
}

type policyResources struct {
	grs []schema.GroupResource
	all bool
}

// NewAdmissionPolicies audits set's validating policies; objects are the
// Namespaces and params they read (each normalized here once), defaultNS
// the namespace of a namespaced object that names none. Nil when the set
// has no validating policy.
func NewAdmissionPolicies(set *admissionpolicy.Set, objects []map[string]any, defaultNS string) (*AdmissionPolicies, error) {
	names, sets := set.ValidatingPolicies()
	if len(names) == 0 {
		return nil, nil
	}
	p := &AdmissionPolicies{names: names, sets: sets}
	p.grs, p.all = set.Resources()
	for _, s := range sets {
		var r policyResources
		r.grs, r.all = s.Resources()
		p.each = append(p.each, r)
	}
	norm := make([]map[string]any, 0, len(objects))
	for _, o := range objects {
		n, err := admissionpolicy.Normalize(o)
		if err != nil {
			return nil, err
		}
		norm = append(norm, n)
	}
	p.objects = admissionpolicy.PrepareObjects(norm, kinds.IsClusterScoped, defaultNS)
	return p, nil
}

// Len is the number of policies audited.
func (p *AdmissionPolicies) Len() int {
	if p == nil {
		return 0
	}
	return len(p.names)
}

// Resources are the group and resource names the policies can match
// (all: any).
func (p *AdmissionPolicies) Resources() (grs []schema.GroupResource, all bool) {
	if p == nil {
		return nil, false
	}
	return p.grs, p.all
}

// Names are the policies' names.
func (p *AdmissionPolicies) Names() []string {
	if p == nil {
		return nil
	}
	return p.names
}

// Covers reports whether the policy named can match objects of the kind
// of obj (by its resource, from the kind's name; its matchConstraints'
// selectors and exclusions aside).
func (p *AdmissionPolicies) Covers(name string, obj map[string]any) bool {
	i := slices.Index(p.Names(), name)
	if i < 0 {
		return false
	}
	if p.each[i].all {
		return true
	}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gvr, _ := meta.UnsafeGuessKindToResource(schema.FromAPIVersionAndKind(av, kind))
	return slices.Contains(p.each[i].grs, gvr.GroupResource())
}

// Check audits one object of namespace ns (nil p: no results).
func (p *AdmissionPolicies) Check(ctx context.Context, obj map[string]any, ns string) []Result {
	if p == nil {
		return nil
	}
	req := kinds.OfflineRequest(obj, ns, rules.Create)
	res := Resource{APIVersion: req.Kind.Version, Kind: req.Kind.Kind, Namespace: ns, Name: req.Name}
	if req.Kind.Group != "" {
		res.APIVersion = req.Kind.Group + "/" + req.Kind.Version
	}
	var out []Result
	for i, set := range p.sets {
		r := set.Validate(ctx, admissionpolicy.Request{Operation: string(rules.Create), Object: obj, Namespace: ns, Prepared: p.objects})
		var msgs []string
		if r.Err != nil {
			msgs = append(msgs, r.Err.Error())
		}
		msgs = append(msgs, r.Warnings...)
		if a := r.Annotations[admissionpolicy.ValidationFailureAnnotation]; a != "" && len(msgs) == 0 {
			// The Audit action alone: its failures' messages.
			var fs []struct{ Message string }
			if json.Unmarshal([]byte(a), &fs) != nil || len(fs) == 0 {
				msgs = append(msgs, a)
			}
			for _, f := range fs {
				msgs = append(msgs, f.Message)
			}
		}
		if len(msgs) > 0 {
			out = append(out, Result{Policy: p.names[i], Kind: "ValidatingAdmissionPolicy", Group: "admissionregistration.k8s.io",
				Rule: p.names[i], Result: Fail, Message: strings.Join(msgs, "; "), Resource: res})
		}
	}
	return out
}
