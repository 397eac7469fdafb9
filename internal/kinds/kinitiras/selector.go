package kinitiras

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modwright/modwright/api/kinitiras/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The selector types are kinitiras' (api/kinitiras/v1alpha1).
type (
	ResourceSelector         = v1alpha1.ResourceSelector
	FieldSelector            = v1alpha1.FieldSelector
	FieldSelectorRequirement = v1alpha1.FieldSelectorRequirement
)

// ErrNotString is in the chain of the error of a field selector whose
// field holds something else than a string (the selector does not
// match, as in kinitiras).
var ErrNotString = errors.New("the field is not a string")

// Matches reports whether any selector selects obj (none selects
// nothing, as kinitiras' ResourceMatchSelectors; a policy without
// selectors is the caller's business).
func Matches(obj map[string]any, selectors []ResourceSelector) bool {
	for i := range selectors {
		if ok, _ := SelectorMatches(&selectors[i], obj); ok {
			return true
		}
	}
	return false
}

// SelectorMatches decides one selector, as kinitiras: apiVersion and kind exactly,
// the namespace when given; then a name decides alone; else the field
// selector and the label selector must both hold (no selector: any). The
// error says why a selector that cannot be decided does not match (an
// unknown operator, a field that is not a string, a bad label selector).
func SelectorMatches(s *ResourceSelector, obj map[string]any) (bool, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	if apiVersion != s.APIVersion || kind != s.Kind || (s.Namespace != "" && ns != s.Namespace) {
		return false, nil
	}
	if s.Name != "" {
		return s.Name == name, nil
	}
	if s.FieldSelector != nil {
		ok, err := fieldSelectorMatches(s.FieldSelector, obj)
		if err != nil || !ok {
			return false, err
		}
	}
	if s.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector)
		if err != nil {
			return false, err
		}
		ls, _ := md["labels"].(map[string]any)
		set := labels.Set{}
		for k, v := range ls {
			if sv, ok := v.(string); ok {
				set[k] = sv
			}
		}
		return sel.Matches(set), nil
	}
	return true, nil
}

// fieldSelectorMatches decides a field selector.
func fieldSelectorMatches(f *FieldSelector, obj map[string]any) (bool, error) {
	keys := make([]string, 0, len(f.MatchFields))
	for k := range f.MatchFields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, found, err := fieldValue(obj, k)
		if err != nil || !found || v != f.MatchFields[k] {
			return false, err
		}
	}
	for i := range f.MatchExpressions {
		ok, err := requirementMatches(f.MatchExpressions[i], obj)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// requirementMatches decides one requirement; an unknown operator is an
// error.
func requirementMatches(r *FieldSelectorRequirement, obj map[string]any) (bool, error) {
	if r == nil {
		return false, nil
	}
	v, found, err := fieldValue(obj, r.Field)
	if err != nil {
		return false, err
	}
	switch r.Operator {
	case metav1.LabelSelectorOpExists:
		return found, nil
	case metav1.LabelSelectorOpDoesNotExist:
		return !found, nil
	case metav1.LabelSelectorOpIn:
		return found && slices.Contains(r.Value, v), nil
	case metav1.LabelSelectorOpNotIn:
		return !slices.Contains(r.Value, v), nil
	}
	return false, fmt.Errorf("field %s: unknown operator %q: use Exists, DoesNotExist, In or NotIn", r.Field, r.Operator)
}

// fieldValue reads a dotted field path, as kinitiras (unstructured's
// NestedString): the part after ".annotations." is one key (annotation
// keys hold dots); a null on the way is not there; a value that is not a
// string (null included) is an error wrapping ErrNotString.
func fieldValue(obj map[string]any, field string) (string, bool, error) {
	var path []string
	if i := strings.Index(field, ".annotations."); i != -1 {
		path = append(strings.Split(field[:i], "."), "annotations", field[i+len(".annotations."):])
	} else {
		path = strings.Split(field, ".")
	}
	var cur any = obj
	for _, k := range path {
		if cur == nil {
			return "", false, nil // a null on the way: not there
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, fmt.Errorf("field %s: %w (a %T on the way)", field, ErrNotString, cur)
		}
		if cur, ok = m[k]; !ok {
			return "", false, nil
		}
	}
	s, ok := cur.(string)
	if !ok {
		return "", false, fmt.Errorf("field %s: %w", field, ErrNotString)
	}
	return s, true, nil
}
