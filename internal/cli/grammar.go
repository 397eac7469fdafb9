package cli

import (
	"fmt"

	"github.com/spf13/pflag"
)

// What every command shares in its grammar: flag aliases and counts.

// aliasFlags makes each old flag name of aliases read as its new one, so
// that one grammar serves every command while the old names keep working
// (--format for -o/--output, --pack for --rule-pack). Help shows the new
// names only.
func aliasFlags(f *pflag.FlagSet, aliases map[string]string) {
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := aliases[name]; ok {
			return pflag.NormalizedName(to)
		}
		return pflag.NormalizedName(name)
	})
}

// plural is n and noun, in the plural unless n is 1: "1 error",
// "2 errors", "0 warnings".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
