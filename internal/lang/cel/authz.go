package cel

import (
	"context"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/modwright/modwright/internal/lang"
)

// The authorizer variables, as the apiserver declares them for admission
// policies: declaring VarAuthorizer in an Env declares both.
const (
	VarAuthorizer      = "authorizer"
	VarRequestResource = "authorizer.requestResource"
)

// ErrNoAuthorizer is the error of an evaluation that reads the authorizer
// when the Activation binds none (offline, no cluster to ask).
var ErrNoAuthorizer = lang.NoReader("authorizer is not available offline (no cluster)")

// authzVars declares the authorizer variables with the types of the
// apiserver's authz library.
func authzVars() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Variable(VarAuthorizer, library.AuthorizerType),
		cel.Variable(VarRequestResource, library.ResourceCheckType),
	}
}

// NewAuthorizer is the value of VarAuthorizer (Activation.Vars) that asks
// a for the decisions of u, as the apiserver binds it.
func NewAuthorizer(u user.Info, a authorizer.UnconditionalAuthorizer) any {
	return library.NewAuthorizerVal(u, a)
}

// NewRequestResourceAuthorizer is the value of VarRequestResource
// (Activation.Vars): the checks of the request's resource r for u.
func NewRequestResourceAuthorizer(u user.Info, a authorizer.UnconditionalAuthorizer, r library.Resource) any {
	return library.NewResourceAuthorizerVal(u, a, r)
}

// resolveAuthz binds an authorizer variable: its value in Vars, else an
// error (ErrNoAuthorizer) that any use of it returns.
func resolveAuthz(in *lang.Activation, name string) any {
	if in != nil {
		if v, ok := in.Vars[name]; ok && v != nil {
			return jsonAdapter.NativeToValue(v)
		}
	}
	return types.WrapErr(ErrNoAuthorizer)
}

// AuthzUser is who asks, AuthzCheck one question, in plain types: the
// caller (a rule kind) need not know Kubernetes' authorization types.
type AuthzUser struct {
	Name, UID string
	Groups    []string
	Extra     map[string][]string
}

// AuthzCheck is one authorization question, or the request's resource
// (BindAuthorizer).
type AuthzCheck struct {
	Verb                                  string
	ResourceRequest                       bool
	Group, Version, Resource, Subresource string
	Namespace, Name                       string
	Path                                  string
}

// Decide answers one question for a user.
type Decide func(ctx context.Context, u AuthzUser, c AuthzCheck) (allowed bool, reason string, err error)

// BindAuthorizer sets the authorizer variables in vars (VarAuthorizer and
// VarRequestResource, whose resource is res) to ask decide for u.
func BindAuthorizer(vars map[string]any, u AuthzUser, res AuthzCheck, decide Decide) {
	info := &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	a := deciderAuthorizer{u: u, decide: decide}
	vars[VarAuthorizer] = NewAuthorizer(info, a)
	vars[VarRequestResource] = NewRequestResourceAuthorizer(info, a, requestResource(res))
}

type deciderAuthorizer struct {
	u      AuthzUser
	decide Decide
}

func (d deciderAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	allowed, reason, err := d.decide(ctx, d.u, AuthzCheck{
		Verb: a.GetVerb(), ResourceRequest: a.IsResourceRequest(),
		Group: a.GetAPIGroup(), Version: a.GetAPIVersion(), Resource: a.GetResource(), Subresource: a.GetSubresource(),
		Namespace: a.GetNamespace(), Name: a.GetName(), Path: a.GetPath(),
	})
	switch {
	case err != nil:
		return authorizer.DecisionNoOpinion, reason, err
	case allowed:
		return authorizer.DecisionAllow, reason, nil
	}
	return authorizer.DecisionDeny, reason, nil
}

type requestResource AuthzCheck

func (r requestResource) GetName() string      { return r.Name }
func (r requestResource) GetNamespace() string { return r.Namespace }
func (r requestResource) GetResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}
func (r requestResource) GetSubresource() string { return r.Subresource }
