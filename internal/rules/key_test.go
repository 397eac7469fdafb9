package rules_test

import (
	"testing"

	"github.com/modwright/modwright/internal/rules"
)

func TestKey(t *testing.T) {
	for _, c := range []struct{ ns, name, want string }{
		{"team-a", "web", "team-a/web"},
		{"", "cluster-wide", "cluster-wide"},
	} {
		if got := rules.Key(c.ns, c.name); got != c.want {
			t.Errorf("Key(%q, %q) = %q, want %q", c.ns, c.name, got, c.want)
		}
	}
}
