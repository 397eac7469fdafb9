package cel

import (
	"errors"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
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
var ErrNoAuthorizer = errors.New("authorizer is not available offline (no cluster)")

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
