package cel

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
)

// TestObjectPaths: the paths into the object an expression reads.
func TestObjectPaths(t *testing.T) {
	env := &lang.Env{Name: "t", Vars: []lang.Var{{Name: VarObject}, {Name: VarOldObject}, {Name: "params"}}}
	for _, tc := range []struct {
		src  string
		want [][]string
	}{
		{"object.spec.replicas > 1", [][]string{{"spec", "replicas"}}},
		{"object.metadata.?labels.?app.orValue('') == 'x'", [][]string{{"metadata", "labels", "app"}}},
		{"object.metadata.labels['app.kubernetes.io/name'] == 'x'", [][]string{{"metadata", "labels", "app.kubernetes.io/name"}}},
		{"has(object.spec.x) && object.spec.x > 1", [][]string{{"spec", "x"}}},
		{"object.spec.containers.exists(c, c.image == 'x')", [][]string{{"spec", "containers"}}},
		{"object.spec.containers[0].name == 'x'", [][]string{{"spec", "containers", "0", "name"}}},
		{"object.spec.containers[?1].hasValue()", [][]string{{"spec", "containers", "1"}}},
		{"object.spec.containers[params.i].name == 'x'", [][]string{{"spec", "containers"}}},
		{"size(object) > 1", [][]string{{}}},
		{"object == oldObject", [][]string{{}}},
		{"oldObject.spec.x == 1", [][]string{}},
		{"object.a.b == 1 && object.a.c == 2 && object.a.b > 0", [][]string{{"a", "b"}, {"a", "c"}}},
		{"params.x == 1", [][]string{}},
	} {
		p, ds := Language{}.CompileExpr(env, tc.src)
		if ds != nil {
			t.Fatalf("%s: %v", tc.src, ds)
		}
		if diff := cmp.Diff(tc.want, p.ObjectPaths()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.src, diff)
		}
	}
}
