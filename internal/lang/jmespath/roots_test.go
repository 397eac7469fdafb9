package jmespath

import (
	"slices"
	"testing"

	"github.com/modwright/modwright/internal/lang"
)

func TestRoots(t *testing.T) {
	for _, c := range []struct {
		src   string
		names []string
		all   bool
		path  []string
	}{
		{src: "request.object.metadata.name", names: []string{"request"}, path: []string{"request", "object", "metadata", "name"}},
		{src: "request.object.spec.containers[*].image", names: []string{"request"}},
		{src: "length(images.containers) > `0` && foo", names: []string{"foo", "images"}},
		{src: "request.object.spec.containers[?name == 'a'].image | [0]", names: []string{"request"}},
		{src: "@", all: true},
		{src: "*", all: true},
		{src: "keys(@)", all: true},
		{src: "$.a", all: true},
		{src: "request.object.x[?@ == 'b']", names: []string{"request"}},
		{src: "sort_by(items, &name)", names: []string{"items"}},
		{src: "{a: cm.data.x, b: request.name}", names: []string{"cm", "request"}},
		{src: "'lit'", names: nil},
		{src: "a[0].b", names: []string{"a"}},
		{src: "a || b", names: []string{"a", "b"}},
		{src: "x", names: []string{"x"}, path: []string{"x"}},
	} {
		p, ds := Language{}.CompileExpr(&lang.Env{Name: "t"}, c.src)
		if ds != nil {
			t.Fatalf("%s: %v", c.src, ds)
		}
		names, all := p.Roots()
		slices.Sort(names)
		if all != c.all || !slices.Equal(names, c.names) {
			t.Errorf("%s: Roots() = %v, %v; want %v, %v", c.src, names, all, c.names, c.all)
		}
		if got := p.FieldPath(); !slices.Equal(got, c.path) {
			t.Errorf("%s: FieldPath() = %v, want %v", c.src, got, c.path)
		}
	}
}
