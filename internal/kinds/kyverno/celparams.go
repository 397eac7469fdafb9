package kyverno

import (
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// celParamRef is a validate.cel's paramKind and paramRef, checked at load
// as Kyverno checks them: the objects its expressions read as `params`,
// each in turn, as a ValidatingAdmissionPolicy's binding names them.
type celParamRef struct {
	apiVersion, kind string
	name, namespace  string
	// selector is the label selector in the selector syntax (""
	// selects every object) when no name is given.
	selector string
	// deny: parameterNotFoundAction Deny (no object selected fails the rule).
	deny bool
}

// maxParams bounds the objects a selector may pick for one rule: each is
// one evaluation of every expression.
const maxParams = 100

// errNoParams is the error of a rule whose paramRef finds no object under
// parameterNotFoundAction Deny (Kyverno's message).
var errNoParams = errors.New("no params found")

func (c *compiler) celParams(field string, pk *admissionregistrationv1.ParamKind, pr *admissionregistrationv1.ParamRef) *celParamRef {
	switch {
	case pk != nil && pk.APIVersion == "":
		c.errf(field+".paramKind.apiVersion", "cel.paramKind.apiVersion is required")
	case pk != nil && pk.Kind == "":
		c.errf(field+".paramKind.kind", "cel.paramKind.kind is required")
	case pk != nil && pr == nil:
		c.errf(field+".paramRef", "cel.paramRef is required")
	case pr != nil && pk == nil:
		c.errf(field+".paramKind", "cel.paramKind is required")
	case pr != nil && (pr.Name == "") == (pr.Selector == nil):
		c.errf(field+".paramRef", "one of cel.paramRef.name or cel.paramRef.selector must be set")
	case pr != nil && pr.ParameterNotFoundAction == nil:
		c.errf(field+".paramRef.parameterNotFoundAction", "cel.paramRef.parameterNotFoundAction is required")
	case pk == nil:
		return nil
	default:
		out := &celParamRef{apiVersion: pk.APIVersion, kind: pk.Kind, name: pr.Name, namespace: pr.Namespace}
		if _, err := schema.ParseGroupVersion(pk.APIVersion); err != nil {
			c.errf(field+".paramKind.apiVersion", "%v", err)
			return nil
		}
		switch a := *pr.ParameterNotFoundAction; a {
		case admissionregistrationv1.DenyAction:
			out.deny = true
		case admissionregistrationv1.AllowAction:
		default:
			c.errf(field+".paramRef.parameterNotFoundAction", "unsupported value %q: Allow or Deny", a)
			return nil
		}
		if out.namespace != "" && kinds.IsClusterScoped(pk.Kind) {
			c.errf(field+".paramRef.namespace", "paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
			return nil
		}
		if pr.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(pr.Selector)
			if err != nil {
				c.errf(field+".paramRef.selector", "%v", err)
				return nil
			}
			out.selector = sel.String()
		}
		return out
	}
	return nil
}

// ScopeReader is a KindReader that knows a kind's scope (in the cluster
// its REST mapping; offline whether the context's objects of the kind
// have a namespace). A reader that does not know it leaves the built-in
// kinds' scopes, other kinds taken as namespaced.
type ScopeReader interface {
	Namespaced(apiVersion, kind string) (bool, error)
}

// params are the objects a rule's expressions are evaluated with, as
// Kyverno collects them: a namespaced kind's in paramRef.namespace, else
// in the object's namespace; one by name (its absence is the rule's
// error) or those the selector picks (none under Deny: errNoParams).
// A Policy reads its own namespace only, as its rule reader may.
func (p *Policy) params(h *engine.Handle, pr *celParamRef, objNS string) ([]map[string]any, error) {
	namespaced := !kinds.IsClusterScoped(pr.kind)
	if sr, ok := h.Kinds().(ScopeReader); ok {
		var err error
		if namespaced, err = sr.Namespaced(pr.apiVersion, pr.kind); err != nil {
			return nil, fmt.Errorf("failed to check if resource is namespaced or not (%w)", err)
		}
	}
	ns := ""
	switch {
	case namespaced && pr.namespace != "":
		ns = pr.namespace
	case namespaced && objNS == "":
		return nil, errors.New("can't use namespaced paramRef to match cluster-scoped resources")
	case namespaced:
		ns = objNS
	case pr.namespace != "":
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	kr, err := p.sourceReader(h, "reads params", pr.apiVersion, pr.kind, ns, pr.name)
	if err != nil {
		return nil, err
	}
	if pr.name != "" {
		o, err := kr.GetKind(h.Context(), pr.apiVersion, pr.kind, ns, pr.name)
		if err != nil {
			return nil, err
		}
		if o == nil {
			return nil, fmt.Errorf("%s %q not found", pr.kind, pr.name)
		}
		return []map[string]any{o}, nil
	}
	objs, err := kr.ListKind(h.Context(), pr.apiVersion, pr.kind, ns, pr.selector, maxParams+1)
	if err != nil {
		return nil, err
	}
	if len(objs) > maxParams {
		return nil, fmt.Errorf("more than %d %s objects selected as params: at most %d", maxParams, pr.kind, maxParams)
	}
	if len(objs) == 0 && pr.deny {
		return nil, errNoParams
	}
	return objs, nil
}
