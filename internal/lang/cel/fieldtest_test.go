package cel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFieldTest(t *testing.T) {
	labels := []string{"metadata", "labels", "team"}
	for _, tc := range []struct {
		src  string
		want *FieldTest
	}{
		{`object.metadata.?labels.?team.orValue('') == 'nobody'`, &FieldTest{Path: labels, Values: []string{"nobody"}, Strict: 1}},
		{`'nobody' == object.metadata.?labels.?team.orValue('')`, &FieldTest{Path: labels, Values: []string{"nobody"}, Strict: 1}},
		{`object.metadata.?labels[?'app.kubernetes.io/name'].orValue('') in ['a', 'b']`, &FieldTest{Path: []string{"metadata", "labels", "app.kubernetes.io/name"}, Values: []string{"a", "b"}, Strict: 1}},
		{`object.?metadata.labels.team.orValue('') == 'x'`, &FieldTest{Path: labels, Values: []string{"x"}, Strict: 0}},
		{`object.metadata.?labels.team.orValue('') == 'x'`, &FieldTest{Path: labels, Values: []string{"x"}, Strict: 1}},
		{`object.metadata.name == 'x'`, &FieldTest{Path: []string{"metadata", "name"}, Values: []string{"x"}, Strict: 2}},
		{`object.metadata.labels['team'] == 'x'`, &FieldTest{Path: labels, Values: []string{"x"}, Strict: 3}},
		// Not one test of one string.
		{`object.metadata.?labels.?team.orValue('x') == 'x'`, nil}, // a missing label holds
		{`object.metadata.?labels.?team.orValue('') in ['x', '']`, nil},
		{`object.metadata.?labels.?team.orValue('') != 'x'`, nil},
		{`has(object.metadata.labels)`, nil},
		{`has(object.metadata.labels.team) && object.metadata.labels.team == 'x'`, nil},
		{`object.metadata.name == variables.x`, nil},
		{`object.spec.replicas == 3`, nil},
		{`oldObject.metadata.name == 'x'`, nil},
		{`object == 'x'`, nil},
		{`object.metadata.name in object.spec.names`, nil},
		{`object.metadata.name.lowerAscii() == 'x'`, nil},
		{`object.metadata.labels[object.metadata.name] == 'x'`, nil},
		{`object.metadata.?labels.?team == optional.of('x')`, nil},
		{`[object.metadata.name][0] == 'x'`, nil},
	} {
		t.Run(tc.src, func(t *testing.T) {
			if d := cmp.Diff(tc.want, compile(t, tc.src).FieldTest()); d != "" {
				t.Errorf("FieldTest (-want +got):\n%s", d)
			}
		})
	}
}
