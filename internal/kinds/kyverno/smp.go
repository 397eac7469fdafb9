package kyverno

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"

	"github.com/modwright/modwright/internal/lang/pattern"
	"github.com/modwright/modwright/internal/value"
)

// Kyverno's patchStrategicMerge is an overlay whose keys may carry anchors:
// conditional "(k)" and global "<(k)" (the overlay applies only where the
// object's value matches, checked as a validation pattern) and
// add-if-not-present "+(k)". They are resolved against the object first
// (resolveAnchors), then the overlay, free of anchors, is merged into the
// object by kustomize's strategic merge (kyaml's merge2: a built-in kind's
// lists by their merge keys from the Kubernetes schema, other lists of maps
// by name), as Kyverno does. Everything here works on a copy of the overlay
// and on the object's JSON: the object is never changed.

// conditionError is a conditional (or global) anchor that does not hold.
// At the top of the overlay it leaves the object as it is; in a list
// element it leaves that element out (a global one: out of the whole
// overlay unless another element holds).
type conditionError struct {
	global bool
	err    error
}

func (e *conditionError) Error() string {
	if e.global {
		return "global condition failed: " + e.err.Error()
	}
	return "condition failed: " + e.err.Error()
}

func (e *conditionError) Unwrap() error { return e.err }

func isCondition(err error, global bool) bool {
	var ce *conditionError
	return errors.As(err, &ce) && ce.global == global
}

// strategicMerge returns obj with the overlay merged in (obj unchanged).
func strategicMerge(obj, overlay any) (any, error) {
	ov, err := resolveAnchors(value.DeepCopy(overlay), obj)
	switch {
	case isCondition(err, false) || isCondition(err, true):
		return obj, nil // a condition of the whole overlay does not hold
	case err != nil:
		return nil, fmt.Errorf("failed to preProcess rule: %w", err)
	}
	m, ok := ov.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("failed to preProcess rule: patchStrategicMerge is a JSON %s, not an object", value.TypeName(ov))
	}
	removeConditions(m)
	return mergeJSON(obj, m)
}

// mergeJSON merges the overlay into obj with kustomize's strategic merge.
// Only the part of the object the overlay reaches is merged (the members of
// each map it names, down to its lists, scalars and directives; the
// object's apiVersion and kind, which choose the schema): kustomize walks
// every node it is given, and most of an object is out of a patch's reach.
// The merged part is then put back into a copy of the object. Where a map
// that was cut came out of the merge empty or gone, whether kustomize would
// have kept it may depend on the members left out: the whole object is
// merged then. TestMergePruned and FuzzMergePruned hold the two equal.
func mergeJSON(obj any, overlay map[string]any) (any, error) {
	if out, ok := fastMerge(obj, overlay); ok {
		return out, nil
	}
	part := prune(obj, overlay, true)
	merged, err := mergeWhole(part, overlay)
	if err != nil {
		return nil, err
	}
	if out, ok := reassemble(obj, merged, overlay); ok {
		return out, nil
	}
	return mergeWhole(obj, overlay)
}

// cut reports whether prune cuts a map of the object for this member of
// the overlay: both maps, and the overlay's without a $ directive (which
// may read the members around it).
func cut(obj, ov any) (om, pm map[string]any, ok bool) {
	om, ok1 := obj.(map[string]any)
	pm, ok2 := ov.(map[string]any)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	for k := range pm {
		if strings.HasPrefix(k, "$") {
			return nil, nil, false
		}
	}
	return om, pm, true
}

// named is a list of maps each with a distinct string "name" (the key of
// most lists of a Kubernetes object, and the one kustomize uses for lists
// without a schema), none with a $ directive: by name, which element is
// which. ok is false otherwise.
func named(v any) (byName map[string]map[string]any, ok bool) {
	l, isList := v.([]any)
	if !isList || len(l) == 0 {
		return nil, false
	}
	byName = make(map[string]map[string]any, len(l))
	for _, e := range l {
		m, isMap := e.(map[string]any)
		if !isMap {
			return nil, false
		}
		n, isStr := m["name"].(string)
		if _, dup := byName[n]; !isStr || dup {
			return nil, false
		}
		for k := range m {
			if strings.HasPrefix(k, "$") {
				return nil, false
			}
		}
		byName[n] = m
	}
	return byName, true
}

// cutList reports whether prune cuts a list of the object for this member
// of the overlay: both lists of named maps. Each element of the object is
// then cut to the members any element of the overlay names (with which
// kustomize matches them, whatever its merge key), each cut further by
// the overlay's element of the same name.
func cutList(obj, ov any) (ol []any, ovByName map[string]map[string]any, keys map[string]bool, ok bool) {
	ovByName, ok = named(ov)
	if !ok {
		return nil, nil, nil, false
	}
	if _, ok := named(obj); !ok {
		return nil, nil, nil, false
	}
	keys = map[string]bool{"name": true}
	for _, e := range ovByName {
		for k := range e {
			keys[k] = true
		}
	}
	return obj.([]any), ovByName, keys, true
}

// mergeProbe marks each element of a cut list: an element that keeps it
// after the merge was merged into (kustomize merged the list by a key);
// one that lost it was replaced (kustomize replaced the list, as it does
// a list its schema does not make associative), and the whole object is
// merged instead. No field of an object has a "/" in its name.
const mergeProbe = "modwright.io/merge-probe"

// pruneList is the part of a list of named maps the overlay reaches, each
// element marked with mergeProbe.
func pruneList(ol []any, ovByName map[string]map[string]any, keys map[string]bool) []any {
	out := make([]any, len(ol))
	for i, e := range ol {
		em := e.(map[string]any)
		oe := ovByName[em["name"].(string)]
		pe := make(map[string]any, len(keys)+1)
		pe[mergeProbe] = true
		for k := range keys {
			v, ok := em[k]
			if !ok {
				continue
			}
			if pv, reached := oe[k]; reached && k != "name" {
				v = prune(v, pv, false)
			}
			pe[k] = v
		}
		out[i] = pe
	}
	return out
}

// reassembleList puts the merged elements back into copies of the
// object's, by name, in the merged list's order; ok is false when the
// names do not say which is which (an element gone, or renamed).
func reassembleList(ol []any, merged any, ovByName map[string]map[string]any, keys map[string]bool) ([]any, bool) {
	mByName, ok := named(merged)
	if !ok {
		return nil, false
	}
	orig, _ := named(ol)
	for n := range orig {
		if _, kept := mByName[n]; !kept {
			return nil, false // gone, or renamed by another merge key
		}
	}
	out := make([]any, 0, len(mByName))
	for _, me := range merged.([]any) {
		mm := me.(map[string]any)
		n := mm["name"].(string)
		em, existed := orig[n]
		_, probed := mm[mergeProbe]
		if !existed {
			if _, added := ovByName[n]; !added || probed {
				return nil, false // not the overlay's, or an element renamed
			}
			out = append(out, mm)
			continue
		}
		if !probed {
			return nil, false // replaced, not merged into
		}
		oe := ovByName[n]
		r := make(map[string]any, len(em)+len(mm))
		for k, v := range em {
			if !keys[k] {
				r[k] = v
			}
		}
		for k, mv := range mm {
			if k == mergeProbe {
				continue
			}
			v, had := em[k]
			pv, reached := oe[k]
			if !had || !reached || k == "name" {
				r[k] = mv
				continue
			}
			rv, ok := reassemble(v, mv, pv)
			if !ok {
				return nil, false
			}
			r[k] = rv
		}
		for k := range keys {
			if _, kept := mm[k]; kept {
				continue
			}
			if v, had := em[k]; had {
				// Gone after the merge: deleted by the overlay, unless it was
				// a map prune cut.
				if vm, vp, cutHere := cut(v, oe[k]); cutHere && slices.ContainsFunc(sortedKeys(vm), func(k string) bool { _, in := vp[k]; return !in }) {
					return nil, false
				}
			}
		}
		out = append(out, r)
	}
	return out, true
}

// prune is the part of obj the overlay reaches (obj unchanged, shared).
func prune(obj, ov any, root bool) any {
	if ol, ovByName, keys, ok := cutList(obj, ov); ok {
		return pruneList(ol, ovByName, keys)
	}
	om, pm, ok := cut(obj, ov)
	if !ok {
		return obj
	}
	out := make(map[string]any, len(pm)+2)
	for k, pv := range pm {
		if v, ok := om[k]; ok {
			out[k] = prune(v, pv, false)
		}
	}
	if root {
		for _, k := range []string{"apiVersion", "kind"} {
			if v, ok := om[k]; ok {
				out[k] = v
			}
		}
	}
	return out
}

// reassemble puts the merged part back into a copy of obj; ok is false
// when a map prune cut is empty or gone after the merge.
func reassemble(obj, merged, ov any) (any, bool) {
	if ol, ovByName, keys, ok := cutList(obj, ov); ok {
		return reassembleList(ol, merged, ovByName, keys)
	}
	om, pm, ok := cut(obj, ov)
	if !ok {
		return merged, true
	}
	mm, ok := merged.(map[string]any)
	if !ok || (len(mm) == 0 && len(om) > 0) {
		return nil, false
	}
	out := make(map[string]any, len(om)+len(pm))
	for k, v := range om {
		if _, reached := pm[k]; !reached {
			out[k] = v
		}
	}
	for k, mv := range mm {
		if _, reached := pm[k]; !reached {
			out[k] = mv // apiVersion and kind, as they were
			continue
		}
		if v, ok := om[k]; ok {
			r, ok := reassemble(v, mv, pm[k])
			if !ok {
				return nil, false
			}
			out[k] = r
		} else {
			out[k] = mv
		}
	}
	for k, pv := range pm {
		if _, kept := mm[k]; kept {
			continue
		}
		// Gone after the merge: deleted by the overlay, unless it was a map
		// prune cut (its fate may depend on what was left out).
		if v, ok := om[k]; ok {
			if vm, vp, cutHere := cut(v, pv); cutHere && slices.ContainsFunc(sortedKeys(vm), func(k string) bool { _, in := vp[k]; return !in }) {
				return nil, false
			}
		}
	}
	return out, true
}

// mergeWhole merges the overlay into obj, the value trees turned into
// YAML nodes and back directly (no text).
func mergeWhole(obj any, overlay map[string]any) (any, error) {
	dst, err := toNode(obj, 0)
	if err != nil {
		return nil, err
	}
	patch, err := toNode(overlay, 0)
	if err != nil {
		return nil, err
	}
	out, err := merge2.Merge(kyaml.NewRNode(patch), kyaml.NewRNode(dst), kyaml.MergeOptions{ListIncreaseDirection: kyaml.MergeOptionsListPrepend})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("the patch deletes the object")
	}
	return fromNode(out.YNode(), 0)
}

// maxNodeDepth bounds the trees turned into YAML nodes (the object and the
// overlay are bounded by the request and the policy; this bounds the
// recursion).
const maxNodeDepth = 10000

var errTooDeep = fmt.Errorf("deeper than %d levels", maxNodeDepth)

// toNode is a JSON value tree as a YAML node tree, every scalar tagged.
func toNode(v any, depth int) (*kyaml.Node, error) {
	if depth > maxNodeDepth {
		return nil, errTooDeep
	}
	switch t := v.(type) {
	case map[string]any:
		n := &kyaml.Node{Kind: kyaml.MappingNode, Tag: kyaml.NodeTagMap, Content: make([]*kyaml.Node, 0, 2*len(t))}
		for _, k := range sortedKeys(t) {
			c, err := toNode(t[k], depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagString, Value: k}, c)
		}
		return n, nil
	case []any:
		n := &kyaml.Node{Kind: kyaml.SequenceNode, Tag: kyaml.NodeTagSeq, Content: make([]*kyaml.Node, 0, len(t))}
		for _, e := range t {
			c, err := toNode(e, depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case string:
		return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagString, Value: t}, nil
	case bool:
		return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagBool, Value: value.Text(t)}, nil
	case nil:
		return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagNull, Value: "null"}, nil
	case json.Number:
		tag := kyaml.NodeTagInt
		if strings.ContainsAny(string(t), ".eE") {
			tag = kyaml.NodeTagFloat
		}
		return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: tag, Value: string(t)}, nil
	}
	if value.IsNumber(v) {
		return toNode(json.Number(value.Text(v)), depth)
	}
	return nil, fmt.Errorf("a %T is not a JSON value", v)
}

// fromNode is a YAML node tree (toNode's, merged) as a JSON value tree.
func fromNode(n *kyaml.Node, depth int) (any, error) {
	if depth > maxNodeDepth {
		return nil, errTooDeep
	}
	switch n.Kind {
	case kyaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, errors.New("an empty YAML document")
		}
		return fromNode(n.Content[0], depth+1)
	case kyaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := fromNode(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case kyaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := fromNode(c, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case kyaml.ScalarNode:
		switch n.ShortTag() {
		case kyaml.NodeTagString:
			return n.Value, nil
		case kyaml.NodeTagNull:
			return nil, nil
		case kyaml.NodeTagBool:
			return n.Value == "true", nil
		case kyaml.NodeTagInt, kyaml.NodeTagFloat:
			return value.Decode([]byte(n.Value))
		}
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return value.Decode(b)
}

// anchorOf is a key's anchor modifier ("" conditional, "<" global, "+"
// add if not present, or one of the validation anchors = X ^); ok is
// false for a plain key.
func anchorOf(k string) (mod, key string, ok bool) { return pattern.ParseAnchor(k) }

// isConditionKey: a conditional or global anchor.
func isConditionKey(k string) bool {
	mod, _, ok := anchorOf(k)
	return ok && (mod == "" || mod == "<")
}

// isMutationAnchor: a conditional, global or add-if-not-present anchor.
func isMutationAnchor(k string) bool {
	mod, _, ok := anchorOf(k)
	return ok && (mod == "" || mod == "<" || mod == "+")
}

// sortedKeys: the overlay's keys in a fixed order (Kyverno walks them in
// the document's order; which of two failing conditions is reported first
// is all that can depend on it).
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// resolveAnchors resolves the overlay's anchors against the object's value
// at the same place (nil where the object has none), changing the overlay
// in place; a list may grow, so the overlay's new value is returned.
func resolveAnchors(ov, obj any) (any, error) {
	switch t := ov.(type) {
	case map[string]any:
		return t, resolveMap(t, obj)
	case []any:
		if len(t) > 0 {
			if _, ok := t[0].(map[string]any); ok {
				return resolveListOfMaps(t, obj)
			}
		}
	}
	return ov, nil
}

func resolveMap(ov map[string]any, obj any) error {
	if _, err := addIfNotPresent(ov, obj); err != nil {
		return err
	}
	if err := checkConditions(ov, obj); err != nil {
		return err
	}
	objMap, _ := obj.(map[string]any)
	for _, k := range sortedKeys(ov) {
		if isMutationAnchor(k) {
			continue
		}
		var at any
		if objMap != nil {
			at = objMap[k]
		}
		v, err := resolveAnchors(ov[k], at)
		if err != nil {
			return err
		}
		ov[k] = v
	}
	return nil
}

// addIfNotPresent resolves the "+(k)" keys of a map: dropped where the
// object has k, else written k. It returns how many there were.
func addIfNotPresent(ov map[string]any, obj any) (int, error) {
	objMap, _ := obj.(map[string]any)
	n := 0
	for _, k := range sortedKeys(ov) {
		mod, key, ok := anchorOf(k)
		if !ok || mod != "+" {
			continue
		}
		n++
		v := ov[k]
		delete(ov, k)
		if _, present := objMap[key]; !present {
			ov[key] = v
		}
	}
	return n, nil
}

// checkConditions checks a map's global anchors, then its conditional
// ones, against the object's values.
func checkConditions(ov map[string]any, obj any) error {
	objMap, _ := obj.(map[string]any)
	for _, global := range []bool{true, false} {
		for _, k := range sortedKeys(ov) {
			mod, key, ok := anchorOf(k)
			if !ok || (global && mod != "<") || (!global && mod != "") {
				continue
			}
			have, present := objMap[key]
			if !present {
				return &conditionError{global: global, err: fmt.Errorf("could not found %q key in the resource", key)}
			}
			if m, ok := ov[k].(map[string]any); ok {
				if n, err := addIfNotPresent(m, have); err != nil {
					return err
				} else if n > 0 {
					continue
				}
			}
			if err := holds(ov[k], have); err != nil {
				return &conditionError{global: global, err: err}
			}
		}
	}
	return nil
}

// holds checks the object's value against a condition's value as a
// validation pattern. Scalars are compared in their text form on both
// sides, as Kyverno reads them from the YAML nodes.
func holds(want, have any) error {
	p, err := pattern.Compile(scalarText(want))
	if err != nil {
		return err
	}
	if f := p.Match(scalarText(have)); f != nil {
		if f.Path != "" {
			return fmt.Errorf("%s at path %s", f.Msg, f.Path)
		}
		return errors.New(f.Msg)
	}
	return nil
}

func scalarText(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		return v
	case string:
		return v
	}
	return value.Text(v)
}

// resolveListOfMaps resolves a list of maps: an element with anchors
// applies to each element of the object's list its conditions hold for,
// as a new element naming it (the name is how the merge finds it); the
// anchored elements themselves go when the conditions are removed.
func resolveListOfMaps(ov []any, obj any) ([]any, error) {
	var objList []any
	switch t := obj.(type) {
	case nil:
	case []any:
		objList = t
	default:
		return nil, fmt.Errorf("the overlay has a list where the object has a JSON %s", value.TypeName(obj))
	}
	out := ov
	for _, el := range ov {
		if !hasAnchors(el, isMutationAnchor) {
			continue
		}
		global := hasAnchors(el, func(k string) bool { m, _, ok := anchorOf(k); return ok && m == "<" })
		held := false
		var lastGlobal error
		cp := value.DeepCopy(el)
		for _, item := range objList {
			// The same copy for every element, resolved in place again and
			// again, as Kyverno does ("+(k)" resolved by an element stays so).
			v, err := resolveAnchors(cp, item)
			if err == nil {
				cp = v
			} else {
				switch {
				case isCondition(err, false):
					continue
				case isCondition(err, true):
					lastGlobal = err
					continue
				}
				return nil, err
			}
			if global {
				held = true
				continue
			}
			out = appendNamed(out, cp, item)
		}
		if obj == nil {
			if _, err := resolveAnchors(cp, nil); err != nil {
				if isCondition(err, false) {
					continue
				}
				return nil, err
			}
			if global {
				held = true
			}
		}
		if !held && lastGlobal != nil {
			return nil, lastGlobal
		}
	}
	return out, nil
}

// appendNamed appends a copy of the resolved element, its anchors
// removed, with the name of the object's element it applies to; an
// element without a name, or one with nothing left but anchors, is not
// added.
func appendNamed(list []any, el, item any) []any {
	m, _ := item.(map[string]any)
	name, ok := m["name"]
	if !ok || name == nil || name == "" {
		return list
	}
	cp := value.DeepCopy(el)
	cp, empty := dropAnchors(cp, true, false)
	if empty {
		return list
	}
	cm, ok := cp.(map[string]any)
	if !ok {
		return list
	}
	cm["name"] = name
	return append(list, cm)
}

// hasAnchors reports whether a key anywhere in v is an anchor is accepts,
// or a string value anywhere reads as a conditional or global anchor.
func hasAnchors(v any, is func(string) bool) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if is(k) || hasAnchors(e, is) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(t, func(e any) bool { return hasAnchors(e, is) })
	case string:
		return isConditionKey(t)
	}
	return false
}

// removeConditions removes what only conditions held from the resolved
// overlay: its conditional keys, and every map or list left empty of
// anything else.
func removeConditions(ov map[string]any) {
	for _, k := range sortedKeys(ov) {
		v, del := dropAnchors(ov[k], isConditionKey(k), false)
		if del {
			delete(ov, k)
		} else {
			ov[k] = v
		}
	}
}

// dropAnchors removes the conditional anchors under v; del reports that v
// itself goes (it held anchors only; a scalar goes when dropScalar).
func dropAnchors(v any, dropScalar, intoMaps bool) (out any, del bool) {
	switch t := v.(type) {
	case map[string]any:
		return t, dropAnchorsInMap(t, intoMaps)
	case []any:
		return dropAnchorsInList(t, intoMaps)
	}
	return v, dropScalar
}

func dropAnchorsInMap(m map[string]any, intoMaps bool) bool {
	kept := false
	for _, k := range sortedKeys(m) {
		if !isConditionKey(k) {
			continue
		}
		v, del := dropAnchors(m[k], true, intoMaps)
		if del {
			delete(m, k)
		} else {
			m[k], kept = v, true
		}
	}
	if kept {
		// The anchors that keep something become plain keys.
		for _, k := range sortedKeys(m) {
			if !isConditionKey(k) {
				continue
			}
			_, key, _ := anchorOf(k)
			v := m[k]
			delete(m, k)
			m[key] = v
		}
	}
	empty := true
	for _, k := range sortedKeys(m) {
		v, del := dropAnchors(m[k], false, intoMaps)
		if del {
			delete(m, k)
		} else {
			m[k], empty = v, false
		}
	}
	return empty
}

// dropAnchorsInList removes the elements that hold anchors (or, with
// intoMaps, only what is anchored in them). Kyverno removes them by their
// index in the list as it was, from the list as it is; so does this, for
// the same result.
func dropAnchorsInList(list []any, intoMaps bool) ([]any, bool) {
	wasEmpty := len(list) == 0
	live := slices.Clone(list)
	shifted := false
	for i, el := range list {
		del := false
		if hasAnchors(el, isMutationAnchor) {
			del = true
			if _, isMap := el.(map[string]any); intoMaps && isMap {
				_, del = dropAnchors(el, true, intoMaps)
			}
		} else {
			var v any
			v, del = dropAnchors(el, false, intoMaps) // a map changes in place
			if !del && !shifted {
				live[i] = v
			}
		}
		if del && i < len(live) {
			live = slices.Delete(live, i, i+1)
			shifted = true
		}
	}
	return live, len(live) == 0 && !wasEmpty
}
