package modrule_test

import (
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/value"
)

func metav1ObjectMeta(name, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns}
}

func readResourceTB(tb testing.TB, path string) any {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := value.Decode(b)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// registry is the kinds a test loads rules with: ModRule alone.
func registry() *kinds.Registry { return kinds.NewRegistry(modrule.NewKind("")) }

// asRules gives compiled ModRules as the engine's rules.
func asRules(rs []*modrule.Rule) []engine.Rule {
	out := make([]engine.Rule, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}
