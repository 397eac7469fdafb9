package policy

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// labelsPath is where an object selector reads a label, before its key.
var labelsPath = []string{"metadata", "labels"}

// fields are the tests of Match the kernel may decide (engine.Field), in
// Match's order: the object selector's labels (matchLabels, and
// matchExpressions with In), which hold or not with no error, then the
// match conditions that test one string of the object (cel.FieldTest), up
// to the first that does not. The conditions only when nothing before
// them can fail (a namespace selector, which reads the namespace) and the
// policy never sees a DELETE: a condition sees the object as null there,
// where the kernel sees the old object.
func (r *Rule) fields(m *v1alpha1.MatchResources) []engine.Field {
	var fs []engine.Field
	if m != nil {
		fs = selectorFields(m.ObjectSelector)
		if m.NamespaceSelector != nil || (m.Exclude != nil && m.Exclude.NamespaceSelector != nil) {
			return fs
		}
	}
	if r.Index.Operations.Has(rules.Delete) {
		return fs
	}
	for i := range r.conditions {
		c := &r.conditions[i]
		if c.conds != nil || c.e.cel == nil {
			break
		}
		ft := c.e.cel.FieldTest()
		if ft == nil {
			break
		}
		fs = append(fs, engine.Field{Path: ft.Path, Values: ft.Values, Strict: ft.Strict})
	}
	return fs
}

// selectorFields are a label selector's tests of one label each: a label
// missing, or of another value, fails the selector.
func selectorFields(sel *metav1.LabelSelector) []engine.Field {
	if sel == nil {
		return nil
	}
	var fs []engine.Field
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		fs = append(fs, engine.Field{Path: labelPath(k), Values: []string{sel.MatchLabels[k]}})
	}
	for _, e := range sel.MatchExpressions {
		if e.Operator == metav1.LabelSelectorOpIn && len(e.Values) > 0 {
			fs = append(fs, engine.Field{Path: labelPath(e.Key), Values: e.Values})
		}
	}
	return fs
}

func labelPath(key string) []string {
	return append(slices.Clip(labelsPath), key)
}
