package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
)

// What every command shares in its grammar: flag aliases, counts, tables.

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

// printTable prints rows under columns as `kubectl get` does, through
// kubectl's own table printer (k8s.io/cli-runtime): upper-case headers,
// columns padded to their widest cell. A cell is a string or a number.
func printTable(w io.Writer, columns []string, rows [][]any) error {
	t := &metav1.Table{ColumnDefinitions: make([]metav1.TableColumnDefinition, len(columns))}
	for i, c := range columns {
		t.ColumnDefinitions[i] = metav1.TableColumnDefinition{Name: c, Type: "string"}
	}
	t.Rows = make([]metav1.TableRow, len(rows))
	for i, r := range rows {
		t.Rows[i] = metav1.TableRow{Cells: r}
	}
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(t, w)
}
