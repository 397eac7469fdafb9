package policy

import (
	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang/cel"
)

// Kind is the adapter of one of the two kinds: ModwrightPolicy
// (namespaced) or ClusterModwrightPolicy, or of one of their former names,
// Policy and ClusterPolicy (read for one release: kinds.Renamed). It holds
// its rules' shared caches and is safe for concurrent use.
type Kind struct {
	name string // as manifests spell it; v1alpha1.PolicyKind says its scope
	opts []Option
}

var _ kinds.Kind = (*Kind)(nil)

// NewPolicyKind returns ModwrightPolicy's adapter.
// Its options apply to every policy it compiles; its policies share a
// NestedCache.
func NewPolicyKind(opts ...Option) *Kind {
	return newKind(v1alpha1.KindModwrightPolicy, opts)
}

// NewClusterPolicyKind returns ClusterModwrightPolicy's adapter.
func NewClusterPolicyKind(opts ...Option) *Kind {
	return newKind(v1alpha1.KindClusterModwrightPolicy, opts)
}

// NewKinds returns the adapters of every name the policies are read under:
// ModwrightPolicy, ClusterModwrightPolicy, and their former names Policy
// and ClusterPolicy (deprecated: kinds.Renamed), with opts.
func NewKinds(opts ...Option) []kinds.Kind {
	return []kinds.Kind{
		NewPolicyKind(opts...), NewClusterPolicyKind(opts...),
		renamed{newKind(v1alpha1.KindPolicy, opts)}, renamed{newKind(v1alpha1.KindClusterPolicy, opts)},
	}
}

func newKind(name string, opts []Option) *Kind {
	return &Kind{name: name, opts: append([]Option{WithNestedCache(NewNestedCache()), WithCELEnvs(cel.NewEnvCache())}, opts...)}
}

// renamed is a kind read under its former name: its rules are the
// current kind's (named, ordered and deduplicated as such).
type renamed struct{ *Kind }

var _ kinds.Renamed = renamed{}

// RenamedTo is the kind's current name.
func (r renamed) RenamedTo() string { return v1alpha1.CurrentKind(r.name) }

// Name is the kind as manifests spell it: "ModwrightPolicy",
// "ClusterModwrightPolicy", or a former name.
func (k *Kind) Name() string { return k.name }

// Group is modwright.io.
func (*Kind) Group() string { return v1alpha1.Group }

// Versions are the versions served: v1alpha1.
func (*Kind) Versions() []string { return []string{v1alpha1.Version} }

// Compile decodes a manifest strictly and compiles it.
func (k *Kind) Compile(m *kinds.Manifest) (engine.Rule, error) {
	// Every name of the kind has the same spec: decoded as the current one.
	var p v1alpha1.ModwrightPolicy
	if err := kinds.Decode(m, k.Name(), v1alpha1.GroupVersion.String(), &p); err != nil {
		return nil, err
	}
	meta, spec := Meta{Namespace: p.Namespace, Name: p.Name}, &p.Spec
	r := Compile(v1alpha1.CurrentKind(k.name), meta, spec, k.opts...)
	if r.Err != nil {
		return r, r.Err
	}
	return r, nil
}

// Meta names a policy: a Policy has a namespace, a ClusterPolicy none.
type Meta struct {
	Namespace, Name string
}
