package modrule

import (
	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// KindAdapter is ModRule's kinds.Kind: it decodes ModRule manifests
// strictly and compiles them with its Compiler (whose Cache it shares
// among all the rules it compiles).
type KindAdapter struct {
	Compiler Compiler
}

var _ kinds.Kind = (*KindAdapter)(nil)

// NewKind returns ModRule's kind adapter, compiling with a new Cache and
// clusterNS as the cluster-rules namespace ("" for the default).
func NewKind(clusterNS string) *KindAdapter {
	return &KindAdapter{Compiler: Compiler{Cache: NewCache(), ClusterRulesNamespace: clusterNS}}
}

// Name is "ModRule".
func (*KindAdapter) Name() string { return Kind }

// Group is api.kubemod.io.
func (*KindAdapter) Group() string { return v1beta1.Group }

// Versions are the versions served: v1beta1.
func (*KindAdapter) Versions() []string { return []string{v1beta1.GroupVersion.Version} }

// Compile decodes a ModRule manifest strictly (Decode) and compiles it.
func (k *KindAdapter) Compile(m *kinds.Manifest) (engine.Rule, error) {
	mr, err := Decode(m)
	if err != nil {
		return nil, err
	}
	// mr is this call's own: compiled without a copy.
	r, err := k.Compiler.compileOwned(mr)
	return r, err
}

// IsModRule reports whether a manifest is a ModRule of api.kubemod.io.
func IsModRule(m *kinds.Manifest) bool {
	return m.Kind() == v1beta1.Kind && m.Group() == v1beta1.Group
}

// Decode decodes a ModRule manifest strictly: an apiVersion not served,
// unknown or duplicate fields and values of the wrong type are errors
// naming the rule and the field.
func Decode(m *kinds.Manifest) (*v1beta1.ModRule, error) {
	var mr v1beta1.ModRule
	if err := kinds.Decode(m, Kind, v1beta1.GroupVersion.String(), &mr); err != nil {
		return nil, err
	}
	return &mr, nil
}
