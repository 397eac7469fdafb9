package runner

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// Stage is the step of the admission chain that refused an object.
type Stage string

const (
	// StageRules: the rules denied the object (or could not decide it).
	StageRules Stage = "rules"
	// StageInvalid: the object is invalid for its CRD before admission.
	StageInvalid Stage = "invalid"
	// StageMutatingPolicies: a MutatingAdmissionPolicy refused it.
	StageMutatingPolicies Stage = "mutating policies"
	// StageInvalidAfter: what mutating admission made of it is invalid
	// (its CRD's schema, or any object's metadata).
	StageInvalidAfter Stage = "invalid after the rules"
	// StageValidatingPolicies: a ValidatingAdmissionPolicy refused it.
	StageValidatingPolicies Stage = "validating policies"
)

// Chain is the API server's admission chain, offline, around the rules
// (a Driver): the decoding and validation of a custom resource against
// its CRD (ChainOptions.CRDs), the MutatingAdmissionPolicies with the
// rules between them (and the IfNeeded ones again after the rules), the
// validation of what mutating admission made (its CRD's schema, or the
// metadata of any object), then the ValidatingAdmissionPolicies. apply,
// explain, krm and test run every object through it, with the Engine
// driver; the corpus runs each case through it with the Webhook driver
// too, so that what the CLI shows is what the server does.
//
// A Chain is a Driver: its Result says which step refused an object
// (Stage) and what each step added (Pruned, SchemaWarnings,
// PolicyWarnings, Checked).
type Chain struct {
	rules Driver
	o     ChainOptions
	// objects are the policies' params and namespaces, normalized and
	// indexed once.
	objects *admissionpolicy.Objects
	user    user.Info
}

// ChainOptions are what a Chain runs around its rules.
type ChainOptions struct {
	// CRDs validate the custom resources of their kinds; nil: none.
	CRDs *crdschema.Set
	// Policies are the Validating and MutatingAdmissionPolicies and their
	// bindings; nil: none.
	Policies *admissionpolicy.Set
	// Objects are where the policies look up params and namespaces (the
	// context objects); User is the requester they see.
	Objects []map[string]any
	User    engine.UserInfo
	// DefaultNamespace is the namespace of a namespaced context object
	// that names none (params among them).
	DefaultNamespace string
	// AsWritten keeps the objects as written: the CRD checks run on
	// decoded copies, the rules see the object without the defaults
	// decoding adds, and the result is theirs (krm: manifests stay as
	// their authors wrote them).
	AsWritten bool
}

var _ Driver = (*Chain)(nil)

// NewChain returns the chain of o around rules.
func NewChain(rules Driver, o ChainOptions) *Chain {
	c := &Chain{rules: rules, o: o}
	if o.Policies.Len() > 0 {
		var objs []map[string]any
		for _, obj := range o.Objects {
			if n, err := admissionpolicy.Normalize(obj); err == nil {
				objs = append(objs, n)
			}
		}
		c.objects = admissionpolicy.PrepareObjects(objs, kinds.IsClusterScoped, o.DefaultNamespace)
	}
	c.user = &user.DefaultInfo{Name: o.User.Username, UID: o.User.UID, Groups: o.User.Groups}
	return c
}

// Checks say which steps of the chain looked at an object.
type Checks struct {
	// Schema: a CRD serves the object's kind (checked before and, when
	// the rules admitted it, after mutating admission).
	Schema bool
	// MutatingPolicies: MutatingAdmissionPolicies ran around the rules.
	MutatingPolicies bool
	// ValidatingPolicies: ValidatingAdmissionPolicies ran on the result.
	ValidatingPolicies bool
}

// stores reports whether op stores an object (the CRD checks and mutating
// admission apply).
func stores(op rules.Operation) bool { return op == rules.Create || op == rules.Update }

// Run admits one request through the chain. The error is the rules'
// (Driver.Run's); every refusal is a Result with its Stage.
func (c *Chain) Run(ctx context.Context, req Request) (*Result, error) {
	if req.Payload {
		// A JSON payload is no object of the API server's: its rules alone.
		return c.rules.Run(ctx, req)
	}
	checked := req
	var crd *crdschema.Version
	if c.o.CRDs != nil && stores(req.Operation) {
		av, _ := req.Object["apiVersion"].(string)
		kind, _ := req.Object["kind"].(string)
		crd = c.o.CRDs.For(av, kind)
	}
	if crd != nil {
		pre := crd.Validate(ctx, req.Object, req.Old, req.Namespace)
		if err := pre.Err(crd); err != nil {
			return &Result{Denial: err.Error(), Stage: StageInvalid, Checked: Checks{Schema: true}, Decision: &engine.Decision{}}, nil
		}
		checked.Object = pre.Object
	}
	if !c.o.AsWritten {
		req = checked
	}
	res, err := c.mutate(ctx, req)
	if err != nil {
		return nil, err
	}
	res.Checked.Schema = crd != nil
	if !res.Allowed {
		return res, nil
	}
	if stores(req.Operation) {
		if c.checkAfter(ctx, crd, req, res); !res.Allowed {
			return res, nil
		}
	}
	c.validate(ctx, req, res)
	return res, nil
}

// mutate runs mutating admission: the rules, between the
// MutatingAdmissionPolicies when there are some.
func (c *Chain) mutate(ctx context.Context, req Request) (*Result, error) {
	if !c.o.Policies.Mutates() || !stores(req.Operation) {
		res, err := c.rules.Run(ctx, req)
		if res != nil && !res.Allowed && res.Stage == "" {
			res.Stage = StageRules
		}
		return res, err
	}
	var res *Result
	var err error
	out, refused := c.o.Policies.Mutate(ctx, c.request(req, req.Object), func(obj map[string]any) (map[string]any, error) {
		in := req
		in.Object = obj
		if res, err = c.rules.Run(ctx, in); err != nil || !res.Allowed {
			return nil, nil // the rules' error or denial ends the chain, reported as such
		}
		m, _ := res.Object.(map[string]any)
		return m, nil
	})
	switch {
	case err != nil:
		return nil, err
	case refused != nil:
		return &Result{Denial: refused.Error(), Stage: StageMutatingPolicies, Checked: Checks{MutatingPolicies: true}, Decision: &engine.Decision{}}, nil
	case !res.Allowed:
		res.Stage, res.Checked.MutatingPolicies = StageRules, true
		return res, nil
	}
	res.Checked.MutatingPolicies = true
	res.Object, res.Patch = out, patch.Diff(req.Object, out)
	if res.Decision != nil {
		res.Decision.Object, res.Decision.Patch = out, res.Patch
	}
	return res, nil
}

// checkAfter validates what mutating admission made of req's object, as
// the API server does before storing it: its CRD's schema (crd nil: the
// metadata of any object).
func (c *Chain) checkAfter(ctx context.Context, crd *crdschema.Version, req Request, res *Result) {
	result, ok := res.Object.(map[string]any)
	if !ok {
		return
	}
	if crd == nil {
		if err := kinds.ValidateMetadata(result); err != nil {
			res.refuse(StageInvalidAfter, err.Error())
		}
		return
	}
	post := crd.Validate(ctx, result, req.Old, req.Namespace)
	res.Pruned = post.UnknownFields
	if err := post.SchemaErr(crd); err != nil {
		res.refuse(StageInvalidAfter, err.Error())
		return
	}
	res.SchemaWarnings = post.Warnings
	res.Warnings = append(res.Warnings, post.Warnings...)
	if !c.o.AsWritten {
		res.Object = post.Object
		if res.Decision != nil {
			res.Decision.Object = post.Object
		}
	}
}

// validate runs the ValidatingAdmissionPolicies on what mutating
// admission admitted (on DELETE, the object being deleted).
func (c *Chain) validate(ctx context.Context, req Request, res *Result) {
	if !c.o.Policies.Validates() {
		return
	}
	obj, _ := res.Object.(map[string]any)
	if req.Operation == rules.Delete {
		obj = req.Object
	}
	v := c.o.Policies.Validate(ctx, c.request(req, obj))
	res.Checked.ValidatingPolicies = true
	res.PolicyWarnings = v.Warnings
	res.Warnings = append(res.Warnings, v.Warnings...)
	if v.Err != nil {
		res.refuse(StageValidatingPolicies, v.Err.Error())
	}
}

// refuse turns an admitted result into a refusal at stage.
func (r *Result) refuse(stage Stage, denial string) {
	r.Allowed, r.Denial, r.Stage, r.Object, r.Patch = false, denial, stage, nil, nil
}

// request is req as the policies see it, with obj as its object.
func (c *Chain) request(req Request, obj map[string]any) admissionpolicy.Request {
	return admissionpolicy.Request{Operation: string(req.Operation), Object: obj, OldObject: req.Old, Namespace: req.Namespace,
		Prepared: c.objects, User: c.user}
}
