package webhook

import (
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
)

// testKinds is the registry the tests load rules with: ModRule alone.
func testKinds() *kinds.Registry { return kinds.NewRegistry(modrule.NewKind("")) }
