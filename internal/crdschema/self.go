package crdschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/google/cel-go/common/types/ref"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/runtime"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// The typing of a custom resource's values as the API server types a
// CRD rule's self: an expression placed at a path sees the value there
// typed by the schema there. Policies' scoped validations use it (their
// scope is the rule's place).

// Typing is the schema of a CRD version as CEL types values by it.
type Typing struct {
	// Structural is the version's structural schema, defaults pruned as
	// the API server prunes them; nil when the version has none.
	Structural *structuralschema.Structural
	// root is Structural with the type and object metadata the API
	// server declares for CEL (apiVersion, kind, metadata.name and
	// generateName).
	root *structuralschema.Structural
}

// Typings are the typings of the served versions of a CRD as the API
// server holds it (apiextensions.k8s.io/v1, as a JSON tree), by
// apiVersion and kind (TypingKey): a CRD read from the cluster, which the
// API server validated, is not validated again.
func Typings(obj map[string]any) (map[string]*Typing, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, crd); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidCRD, err)
	}
	out := map[string]*Typing{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		is, err := versionSchema(crd, v.Name)
		if err != nil {
			return nil, fmt.Errorf("%w %s: version %s: %v", ErrInvalidCRD, crd.Name, v.Name, err)
		}
		t, err := typingOf(is)
		if err != nil {
			return nil, fmt.Errorf("%w %s: version %s: %v", ErrInvalidCRD, crd.Name, v.Name, err)
		}
		if t.Structural != nil {
			out[TypingKey(crd.Spec.Group+"/"+v.Name, crd.Spec.Names.Kind)] = &t
		}
	}
	return out, nil
}

// TypingKey is the key of a kind in Typings: apiVersion and kind.
func TypingKey(apiVersion, kind string) string { return apiVersion + " " + kind }

// Types reports whether a CRD of the set serves apiVersion and kind with a
// schema.
func (s *Set) Types(apiVersion, kind string) bool {
	v := s.For(apiVersion, kind)
	return v != nil && v.Structural != nil
}

// TypedValue is value, found at path in an object of apiVersion and kind,
// as the CRD rule at that place sees self (Version.Self); ok is false when
// no CRD of the set serves the kind or its schema does not type the
// place. It is what an engine.SchemaReader gives.
func (s *Set) TypedValue(apiVersion, kind string, path []any, value any) (any, bool) {
	v := s.For(apiVersion, kind)
	if v == nil {
		return nil, false
	}
	return v.Self(path, value)
}

// Self is value, found at path (object keys as strings, list indices as
// ints, root first) in an object of v's kind, as a CEL value typed by the
// schema at that place, as the API server binds self for a rule there:
// property names escaped (__dash__, __dot__, reserved words), lists of
// x-kubernetes-list-type set and map compared as sets and maps, formats
// (duration, date, date-time, byte) typed, and at the root and embedded
// resources only apiVersion, kind, metadata.name and
// metadata.generateName of the type and object metadata. ok is false
// when the schema does not type the place (no schema; data kept by
// x-kubernetes-preserve-unknown-fields). Numbers may be json.Number.
func (v *Typing) Self(path []any, value any) (ref.Val, bool) {
	node, ok := v.schemaAt(path)
	if !ok {
		return nil, false
	}
	return common.UnstructuredToVal(decoded(value), &model.Structural{Structural: node}), true
}

// SelfType is the CEL type the API server declares self with for a rule
// at pattern (Self's path, nil standing for any member of a list or map):
// what an expression that reads self there is type-checked against. ok is
// false where the schema does not type the place.
func (v *Typing) SelfType(pattern []any) (*apiservercel.DeclType, bool) {
	node, ok := v.schemaAt(pattern)
	if !ok {
		return nil, false
	}
	dt := model.SchemaDeclType(node, len(pattern) == 0 || node.XEmbeddedResource)
	if dt == nil {
		return nil, false
	}
	// Object types are declared by name (the API server's is unique per
	// environment; an expression's environment has this one alone).
	return dt.MaybeAssignTypeName("selfType"), true
}

// schemaAt walks v's schema along path (strings, ints, nil for any
// member), with the type and object metadata of the root and of each
// embedded resource it goes through as the API server declares them.
func (v *Typing) schemaAt(path []any) (*structuralschema.Structural, bool) {
	if v.Structural == nil {
		return nil, false
	}
	s := v.root
	for _, k := range path {
		if s.XEmbeddedResource {
			s = model.WithTypeAndObjectMeta(s)
		}
		var next *structuralschema.Structural
		switch k := k.(type) {
		case string:
			if p, ok := s.Properties[k]; ok {
				next = &p
			} else if s.AdditionalProperties != nil {
				next = s.AdditionalProperties.Structural
			}
		case int:
			next = s.Items
		case nil:
			if s.Items != nil {
				next = s.Items
			} else if s.AdditionalProperties != nil {
				next = s.AdditionalProperties.Structural
			}
		}
		if next == nil {
			return nil, false
		}
		s = next
	}
	return s, true
}

// decoded is v with its numbers as the API server decodes them (int64
// when integral, else float64): v itself when it has no json.Number nor
// integral float64, else a copy of the maps and lists that hold one.
func decoded(v any) any {
	d, _ := decode(v)
	return d
}

func decode(v any) (any, bool) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, true
		}
		f, _ := v.Float64()
		return f, true
	case float64:
		// A YAML decoder's number: integral ones are int64 as the API
		// server decodes them (a schema's number takes either).
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), true
		}
		return v, false
	case map[string]any:
		var out map[string]any
		for k, e := range v {
			d, changed := decode(e)
			if !changed {
				continue
			}
			if out == nil {
				out = maps.Clone(v)
			}
			out[k] = d
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range v {
			d, changed := decode(e)
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(v)
			}
			out[i] = d
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}
