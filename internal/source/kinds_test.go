package source

import (
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
)

// testKinds is the registry the tests load rules with: ModRule alone.
func testKinds() *kinds.Registry { return kinds.NewRegistry(modrule.NewKind("")) }

// modRule is a loaded rule as the ModRule it is.
func modRule(r engine.Rule) *modrule.Rule { return r.(*modrule.Rule) }
