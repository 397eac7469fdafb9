package cli

import (
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/kinds/policy"
)

// defaultClusterRulesNamespace is the --cluster-rules-namespace default.
const defaultClusterRulesNamespace = modrule.DefaultClusterRulesNamespace

// newRegistry is the kinds modwright serves from files (apply, test,
// explain, lint, krm, serve --standalone), with clusterNS as the
// cluster-rules namespace ("" for the default): the one place the front
// ends name a kind.
func newRegistry(clusterNS string) *kinds.Registry {
	return kinds.NewRegistry(modrule.NewKind(clusterNS), policy.NewPolicyKind(), policy.NewClusterPolicyKind(),
		kinitiras.NewClusterOverridePolicyKind(), kinitiras.NewOverridePolicyKind(), kinitiras.NewClusterValidatePolicyKind())
}

// newClusterRegistry is the kinds the operator watches in the cluster:
// kinitiras' with --kinitiras (their CRDs must then be installed).
func newClusterRegistry(clusterNS string, withKinitiras bool) *kinds.Registry {
	if withKinitiras {
		return newRegistry(clusterNS)
	}
	return kinds.NewRegistry(modrule.NewKind(clusterNS), policy.NewPolicyKind(), policy.NewClusterPolicyKind())
}
