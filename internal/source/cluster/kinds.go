package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// Kinds is the engine's KindReader in the cluster (kinitiras' k8s and
// owner references): it reads objects of any kind from the manager's
// cache, which starts an informer for a kind the first time it is read
// and keeps it watched (the operator needs get, list and watch on the
// kinds references read; the Helm chart's kinitiras.referenceRules grant
// them).
type Kinds struct {
	Reader client.Reader // the manager's cache
	// Protected is the operator's namespace: its Secrets are never read
	// for a rule, nor Secrets across namespaces (ErrForbidden).
	Protected string
	// Mapper tells a kind's scope (the manager's REST mapper); nil: a
	// built-in kind's scope, other kinds namespaced.
	Mapper meta.RESTMapper
}

// KindFor is the kind of a resource, as the API server's discovery says
// (a MutatingPolicy's targets are named by resource).
func (k *Kinds) KindFor(group, version, resource string) (string, error) {
	if k.Mapper == nil {
		return "", fmt.Errorf("no REST mapper to name the kind of %s", resource)
	}
	gvk, err := k.Mapper.KindFor(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
	if err != nil {
		return "", err
	}
	return gvk.Kind, nil
}

// ResourceFor is the resource of a kind, as the API server's discovery
// says (Kyverno's resource.ToGVR).
func (k *Kinds) ResourceFor(apiVersion, kind string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "", err
	}
	if k.Mapper == nil {
		return "", fmt.Errorf("no REST mapper to name the resource of %s", kind)
	}
	m, err := k.Mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return "", err
	}
	return m.Resource.Resource, nil
}

// Namespaced reports whether a kind's objects have a namespace, as the
// API server's discovery says (Kyverno's validate.cel params are looked
// up in the object's namespace when they do).
func (k *Kinds) Namespaced(apiVersion, kind string) (bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false, err
	}
	if k.Mapper == nil {
		return !kinds.IsClusterScoped(kind), nil
	}
	m, err := k.Mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// protect refuses the operator's Secrets and a list of Secrets across
// namespaces.
func (k *Kinds) protect(gv schema.GroupVersion, kind, namespace string) error {
	if gv.Group != "" || kind != "Secret" || (namespace != "" && namespace != k.Protected) {
		return nil
	}
	if namespace == "" {
		return fmt.Errorf("%w: Secrets across namespaces are never read for a rule", ErrForbidden)
	}
	return fmt.Errorf("%w: Secrets in %s, the operator's namespace, are never read for a rule", ErrForbidden, namespace)
}

var _ engine.KindReader = (*Kinds)(nil)

// GetKind reads one object; nil when it does not exist.
func (k *Kinds) GetKind(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]any, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	if err := k.protect(gv, kind, namespace); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gv.WithKind(kind))
	if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return u.Object, nil
}

// ListKind lists the objects of a kind in namespace ("" for all) whose
// labels the selector matches, at most limit (> 0) of them: the cache
// copies no more.
func (k *Kinds) ListKind(ctx context.Context, apiVersion, kind, namespace, selector string, limit int) ([]map[string]any, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	if err := k.protect(gv, kind, namespace); err != nil {
		return nil, err
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gv.WithKind(kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if limit > 0 {
		opts = append(opts, client.Limit(int64(limit)))
	}
	if err := k.Reader.List(ctx, l, opts...); err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	out := make([]map[string]any, len(l.Items))
	for i := range l.Items {
		out[i] = l.Items[i].Object
	}
	return out, nil
}
