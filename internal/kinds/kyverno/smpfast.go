package kyverno

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/modwright/modwright/internal/value"
)

// fastMerge is kustomize's strategic merge (merge2, as mergeWhole runs
// it) for the overlays whose result it can tell without kustomize's walk,
// which reads every node's comments for a schema and costs most of a
// mutate: an object of a built-in kind (kustomize's schema known), an
// overlay of maps, scalars and lists without null, $ directives or empty
// maps, each list either one the schema does not merge (replaced) or one
// merged by a single key whose elements all carry it, once. As kustomize
// with MergeOptionsListPrepend, a merged list holds the overlay's elements
// first, in its order (merged into the object's of the same key), then the
// object's others in theirs. ok is false for anything else, and the caller
// merges with kustomize: TestMergePruned and FuzzMergePruned hold the two
// equal. obj is unchanged; the result shares what the overlay does not
// reach with it, and the overlay's values.
func fastMerge(obj any, overlay map[string]any) (any, bool) {
	om, ok := obj.(map[string]any)
	if !ok {
		return nil, false
	}
	av, _ := om["apiVersion"].(string)
	kind, _ := om["kind"].(string)
	if av == "" || kind == "" {
		return nil, false
	}
	s := openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: av, Kind: kind})
	if s == nil {
		return nil, false
	}
	return fastMergeMap(om, overlay, s)
}

// fastMergeMap merges the overlay's map into the object's.
func fastMergeMap(om, pm map[string]any, s *openapi.ResourceSchema) (any, bool) {
	if len(pm) == 0 {
		return nil, false
	}
	out := make(map[string]any, len(om)+len(pm))
	for k, v := range om {
		out[k] = v
	}
	for k, pv := range pm {
		if !plainKey(k) || pv == nil {
			return nil, false
		}
		var fs *openapi.ResourceSchema
		if s != nil {
			fs = s.Field(k)
		}
		dv := om[k]
		if dv == nil {
			// Added as the overlay has it.
			if !addable(pv, fs) {
				return nil, false
			}
			out[k] = pv
			continue
		}
		switch p := pv.(type) {
		case map[string]any:
			d, ok := dv.(map[string]any)
			if !ok {
				return nil, false
			}
			if out[k], ok = fastMergeMap(d, p, fs); !ok {
				return nil, false
			}
		case []any:
			d, ok := dv.([]any)
			if !ok {
				return nil, false
			}
			if out[k], ok = fastMergeList(d, p, fs); !ok {
				return nil, false
			}
		default:
			if !scalar(dv) {
				return nil, false
			}
			out[k] = pv
		}
	}
	return out, true
}

// plainKey reports whether kustomize merges a member of this name as any
// other: not a $ directive, not YAML's merge key, not empty (an error in
// kustomize's walk).
func plainKey(k string) bool {
	return k != "" && k != "<<" && !strings.HasPrefix(k, "$")
}

// scalar reports whether v is a JSON scalar (not null).
func scalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any, nil:
		return false
	}
	return true
}

// mergeKey is the single key the schema merges a list by; replaced is
// true for a list it does not merge; ok is false otherwise (no schema,
// several keys, a list of primitives merged).
func mergeKey(s *openapi.ResourceSchema) (key string, replaced, ok bool) {
	if s == nil {
		return "", false, false
	}
	strategy, _ := s.PatchStrategyAndKey()
	if !strings.Contains(","+strategy+",", ",merge,") {
		return "", true, true
	}
	_, keys := s.PatchStrategyAndKeyList()
	if len(keys) != 1 || keys[0] == "" {
		return "", false, false
	}
	return keys[0], false, true
}

// fastMergeList merges the overlay's list into the object's.
func fastMergeList(dl, pl []any, s *openapi.ResourceSchema) (any, bool) {
	key, replaced, ok := mergeKey(s)
	switch {
	case !ok:
		return nil, false
	case replaced:
		return pl, true
	}
	dByKey, ok := keyed(dl, key)
	if !ok {
		return nil, false
	}
	pByKey, ok := keyed(pl, key)
	if !ok || len(pl) == 0 {
		return nil, false
	}
	es := s.Elements()
	out := make([]any, 0, len(dl)+len(pl))
	for _, pe := range pl {
		pm := pe.(map[string]any)
		kv := pm[key]
		i, found := dByKey[value.Text(kv)]
		if !found {
			if !addable(pm, es) {
				return nil, false
			}
			out = append(out, pm)
			continue
		}
		dm := dl[i].(map[string]any)
		if !value.Equal(dm[key], kv) || value.TypeName(dm[key]) != value.TypeName(kv) {
			return nil, false // kustomize compares the keys' texts
		}
		m, ok := fastMergeMap(dm, pm, es)
		if !ok {
			return nil, false
		}
		out = append(out, m)
	}
	for _, de := range dl {
		if _, inPatch := pByKey[value.Text(de.(map[string]any)[key])]; !inPatch {
			out = append(out, de)
		}
	}
	return out, true
}

// keyed indexes a list of maps by the text of their key's scalar value;
// ok is false when an element is not a map, lacks the key, has it empty,
// or shares its value with another.
func keyed(l []any, key string) (map[string]int, bool) {
	out := make(map[string]int, len(l))
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok || !scalar(m[key]) {
			return nil, false
		}
		t := value.Text(m[key])
		if _, dup := out[t]; dup || t == "" {
			return nil, false // kustomize drops elements around an empty key
		}
		out[t] = i
	}
	return out, true
}

// addable reports whether kustomize adds v where the object has nothing
// as v is: scalars, maps of them (not empty, no null, no $ directive),
// lists the schema does not merge.
func addable(v any, s *openapi.ResourceSchema) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		if len(x) == 0 {
			return false
		}
		for k, c := range x {
			if !plainKey(k) {
				return false
			}
			var fs *openapi.ResourceSchema
			if s != nil {
				fs = s.Field(k)
			}
			if !addable(c, fs) {
				return false
			}
		}
		return true
	case []any:
		_, replaced, ok := mergeKey(s)
		if !ok || !replaced || len(x) == 0 {
			return false
		}
		for _, e := range x {
			if !scalar(e) {
				return false
			}
		}
		return true
	}
	return true
}
