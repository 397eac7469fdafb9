package policy

import (
	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// Kind is the adapter of one of the two kinds: Policy (namespaced) or
// ClusterPolicy. It is stateless and safe for concurrent use.
type Kind struct {
	cluster bool
	opts    []Option
}

var _ kinds.Kind = (*Kind)(nil)

// NewPolicyKind returns Policy's adapter.
// Its options apply to every policy it compiles; its policies share a
// NestedCache.
func NewPolicyKind(opts ...Option) *Kind {
	return &Kind{opts: append([]Option{WithNestedCache(NewNestedCache())}, opts...)}
}

// NewClusterPolicyKind returns ClusterPolicy's adapter.
func NewClusterPolicyKind(opts ...Option) *Kind {
	return &Kind{cluster: true, opts: append([]Option{WithNestedCache(NewNestedCache())}, opts...)}
}

// Name is "Policy" or "ClusterPolicy".
func (k *Kind) Name() string {
	if k.cluster {
		return v1alpha1.KindClusterPolicy
	}
	return v1alpha1.KindPolicy
}

// Group is modwright.io.
func (*Kind) Group() string { return v1alpha1.Group }

// Versions are the versions served: v1alpha1.
func (*Kind) Versions() []string { return []string{v1alpha1.Version} }

// Compile decodes a manifest strictly and compiles it.
func (k *Kind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	var (
		meta Meta
		spec *v1alpha1.PolicySpec
	)
	if k.cluster {
		var p v1alpha1.ClusterPolicy
		if err := kinds.Decode(m, k.Name(), v1alpha1.GroupVersion.String(), &p); err != nil {
			return nil, err
		}
		meta, spec = Meta{Namespace: p.Namespace, Name: p.Name}, &p.Spec
	} else {
		var p v1alpha1.Policy
		if err := kinds.Decode(m, k.Name(), v1alpha1.GroupVersion.String(), &p); err != nil {
			return nil, err
		}
		meta, spec = Meta{Namespace: p.Namespace, Name: p.Name}, &p.Spec
	}
	r := Compile(k.Name(), meta, spec, k.opts...)
	if r.Err != nil {
		return r, r.Err
	}
	return r, nil
}

// Meta names a policy: a Policy has a namespace, a ClusterPolicy none.
type Meta struct {
	Namespace, Name string
}
