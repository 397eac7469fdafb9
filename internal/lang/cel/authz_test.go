package cel

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/modwright/modwright/internal/lang"
)

// allowCreate allows creating deployments in namespace "a".
type allowCreate struct{}

func (allowCreate) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() == "create" && a.GetResource() == "deployments" && a.GetNamespace() == "a" && a.GetUser().GetName() == "alice" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionDeny, "no", nil
}

type resource struct{}

func (resource) GetName() string      { return "web" }
func (resource) GetNamespace() string { return "a" }
func (resource) GetResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
}
func (resource) GetSubresource() string { return "" }

func TestAuthorizer(t *testing.T) {
	e := env()
	e.Vars = append(e.Vars, lang.Var{Name: VarAuthorizer})
	alice := &user.DefaultInfo{Name: "alice"}
	with := &lang.Activation{Vars: map[string]any{
		VarAuthorizer:      NewAuthorizer(alice, allowCreate{}),
		VarRequestResource: NewRequestResourceAuthorizer(alice, allowCreate{}, resource{}),
	}}
	for _, tc := range []struct {
		src  string
		in   *lang.Activation
		want any
		err  error
	}{
		{src: "authorizer.group('apps').resource('deployments').namespace('a').check('create').allowed()", in: with, want: true},
		{src: "authorizer.group('apps').resource('deployments').namespace('b').check('create').allowed()", in: with, want: false},
		{src: "authorizer.requestResource.check('create').allowed()", in: with, want: true},
		{src: "authorizer.requestResource.check('delete').reason()", in: with, want: "no"},
		{src: "authorizer.group('apps').resource('deployments').check('create').allowed()", in: &lang.Activation{}, err: ErrNoAuthorizer},
		{src: "authorizer.requestResource.check('create').allowed()", in: nil, err: ErrNoAuthorizer},
		{src: "object == null || authorizer.path('/healthz').check('get').allowed()", in: &lang.Activation{Object: map[string]any{}}, err: ErrNoAuthorizer},
		{src: "object == null", in: &lang.Activation{}, want: true},
	} {
		p, ds := Language{}.CompileExpr(e, tc.src)
		if ds != nil {
			t.Fatalf("Compile(%q): %v", tc.src, ds)
		}
		got, err := p.Eval(context.Background(), tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "authorizer is not available offline (no cluster)") {
				t.Errorf("Eval(%q) error %v, want %v", tc.src, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Eval(%q) = %v, %v, want %v", tc.src, got, err, tc.want)
		}
	}
	if _, ds := (Language{}).CompileExpr(env(), "authorizer.path('/x').check('get').allowed()"); ds == nil {
		t.Errorf("authorizer compiled in an environment that does not declare it")
	}
}
