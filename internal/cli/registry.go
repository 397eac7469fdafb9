package cli

import (
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/kinds/policy"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
)

// defaultClusterRulesNamespace is the --cluster-rules-namespace default.
const defaultClusterRulesNamespace = modrule.DefaultClusterRulesNamespace

// newRegistry is the kinds modwright serves from files (apply, test,
// explain, lint, krm), with clusterNS as the cluster-rules namespace (""
// for the default): the one place the front ends name a kind. CUE runs in
// this process.
func newRegistry(clusterNS string) *kinds.Registry {
	return newServingRegistry(clusterNS, cuelang.Language{})
}

// newServingRegistry is newRegistry compiling CUE with cue (serve
// --standalone: its workers).
func newServingRegistry(clusterNS string, cue cuelang.Language) *kinds.Registry {
	ks := append([]kinds.Kind{modrule.NewKind(clusterNS)}, policy.NewKinds(policy.WithCUE(cue))...)
	return kinds.NewRegistry(append(ks, kinitiras.NewKinds(kinitiras.WithCUE(cue))...)...)
}

// newClusterRegistry is the kinds the operator watches in the cluster,
// compiling CUE with cue: kinitiras' with --kinitiras (their CRDs must
// then be installed).
func newClusterRegistry(clusterNS string, withKinitiras bool, cue cuelang.Language) *kinds.Registry {
	if withKinitiras {
		return newServingRegistry(clusterNS, cue)
	}
	return kinds.NewRegistry(append([]kinds.Kind{modrule.NewKind(clusterNS)}, policy.NewKinds(policy.WithCUE(cue))...)...)
}
