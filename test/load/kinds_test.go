package load

import (
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/kinds/policy"
)

// testKinds is the registry the tests load rules with: ModRule, ModwrightPolicy and
// ClusterModwrightPolicy.
func testKinds() *kinds.Registry {
	return kinds.NewRegistry(modrule.NewKind(""), policy.NewPolicyKind(), policy.NewClusterPolicyKind())
}
