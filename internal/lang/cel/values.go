package cel

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/modwright/modwright/internal/lang"
)

type refVal = ref.Val

// activation binds an Activation's fields and Vars to the declared
// variables; a declared variable with no value is null.
type activation struct {
	in   *lang.Activation
	vars []string
}

var _ interpreter.Activation = (*activation)(nil)

func (a *activation) ResolveName(name string) (any, bool) {
	declared := false
	for _, v := range a.vars {
		if v == name {
			declared = true
			break
		}
	}
	if !declared {
		return nil, false
	}
	in := a.in
	if in == nil {
		return types.NullValue, true
	}
	switch name {
	case VarObject:
		return jsonAdapter.NativeToValue(in.Object), true
	case VarOldObject:
		return jsonAdapter.NativeToValue(in.OldObject), true
	case VarSelf:
		return jsonAdapter.NativeToValue(in.Item), true
	}
	if v, ok := in.Vars[name]; ok {
		return jsonAdapter.NativeToValue(v), true
	}
	return types.NullValue, true
}

func (a *activation) Parent() interpreter.Activation { return nil }

// adapter converts JSON trees to CEL values lazily: a map or list is
// wrapped, and its members are converted as CEL reads them.
type adapter struct{}

var jsonAdapter types.Adapter = adapter{}

func (adapter) NativeToValue(v any) ref.Val {
	switch v := v.(type) {
	case nil:
		return types.NullValue
	case ref.Val:
		return v
	case bool:
		return types.Bool(v)
	case string:
		return types.String(v)
	case json.Number:
		return number(v)
	case map[string]any:
		return jsonMap{v}
	case []any:
		return types.NewDynamicList(jsonAdapter, v)
	case lang.Lazy:
		return lazyMap{v}
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// number is n as a CEL int when it is an integer's text, else a double.
func number(n json.Number) ref.Val {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return types.Int(i)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !isRangeError(err) {
		return types.NewErr("invalid number %q", string(n))
	}
	return types.Double(f)
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// jsonMap is a JSON object as a CEL map whose null members are absent.
type jsonMap struct{ m map[string]any }

var (
	_ traits.Mapper   = jsonMap{}
	_ traits.Foldable = jsonMap{}
)

func (j jsonMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		if types.IsUnknownOrError(key) {
			return key, false
		}
		return nil, false
	}
	v, ok := j.m[string(k)]
	if !ok || v == nil {
		return nil, false
	}
	return jsonAdapter.NativeToValue(v), true
}

func (j jsonMap) Contains(key ref.Val) ref.Val {
	_, found := j.Find(key)
	return types.Bool(found)
}

func (j jsonMap) Get(key ref.Val) ref.Val {
	v, found := j.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

func (j jsonMap) Size() ref.Val {
	n := 0
	for _, v := range j.m {
		if v != nil {
			n++
		}
	}
	return types.Int(n)
}

func (j jsonMap) Iterator() traits.Iterator {
	keys := make([]string, 0, len(j.m))
	for k, v := range j.m {
		if v != nil {
			keys = append(keys, k)
		}
	}
	return &keyIterator{keys: keys}
}

func (j jsonMap) Fold(f traits.Folder) {
	for k, v := range j.m {
		if v != nil && !f.FoldEntry(types.String(k), jsonAdapter.NativeToValue(v)) {
			return
		}
	}
}

// present is j without its null members: a CEL map of native values.
func (j jsonMap) present() traits.Mapper {
	m := make(map[string]any, len(j.m))
	for k, v := range j.m {
		if v != nil {
			m[k] = v
		}
	}
	return types.NewStringInterfaceMap(jsonAdapter, m)
}

func (j jsonMap) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return j.present().ConvertToNative(typeDesc)
}

func (j jsonMap) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case types.MapType:
		return j
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", types.MapType, typeVal)
}

func (j jsonMap) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Mapper)
	if !ok {
		return types.False
	}
	if j.Size() != o.Size() {
		return types.False
	}
	for k, v := range j.m {
		if v == nil {
			continue
		}
		ov, found := o.Find(types.String(k))
		if !found || types.Equal(jsonAdapter.NativeToValue(v), ov) != types.True {
			return types.False
		}
	}
	return types.True
}

func (j jsonMap) Type() ref.Type { return types.MapType }
func (j jsonMap) Value() any     { return j.m }

// lazyMap is a lang.Lazy as a CEL map from its names to its members:
// reading a member (select, index, has(), in) calls Member, whose error
// becomes the evaluation's error (wrapped, so errors.Is sees through it);
// size and iteration use Names and compute nothing. A member whose value is
// null is present (has() is true), as in the apiserver's variables.
type lazyMap struct{ l lang.Lazy }

var _ traits.Mapper = lazyMap{}

func (m lazyMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		if types.IsUnknownOrError(key) {
			return key, true
		}
		return types.MaybeNoSuchOverloadErr(key), true
	}
	v, ok, err := m.l.Member(string(k))
	if err != nil {
		return types.WrapErr(fmt.Errorf("%s: %w", string(k), err)), true
	}
	if !ok {
		return nil, false
	}
	if v == nil {
		return types.NullValue, true
	}
	return jsonAdapter.NativeToValue(v), true
}

func (m lazyMap) Contains(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if found && types.IsUnknownOrError(v) {
		return v
	}
	return types.Bool(found)
}

func (m lazyMap) Get(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

func (m lazyMap) Size() ref.Val { return types.Int(len(m.l.Names())) }

func (m lazyMap) Iterator() traits.Iterator { return &keyIterator{keys: m.l.Names()} }

func (m lazyMap) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from lazy map to '%v'", typeDesc)
}

func (m lazyMap) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", types.MapType, typeVal)
}

// Equal compares by identity of the Lazy, as the apiserver compares its
// lazy maps.
func (m lazyMap) Equal(other ref.Val) ref.Val {
	o, ok := other.(lazyMap)
	return types.Bool(ok && o.l == m.l)
}

func (m lazyMap) Type() ref.Type { return types.MapType }
func (m lazyMap) Value() any     { return m.l }

// keyIterator iterates a jsonMap's present keys.
type keyIterator struct {
	keys []string
	i    int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	k := it.keys[it.i]
	it.i++
	return types.String(k)
}

func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion on iterators not supported")
}
func (it *keyIterator) ConvertToType(ref.Type) ref.Val { return types.NewErr("no such overload") }
func (it *keyIterator) Equal(ref.Val) ref.Val          { return types.NewErr("no such overload") }
func (it *keyIterator) Type() ref.Type                 { return types.IteratorType }
func (it *keyIterator) Value() any                     { return nil }

// JSONOf converts a value EvalValue gave to a JSON tree as EvalCost would
// (to show it); a value that is not a CEL value is returned as it is.
func JSONOf(v any) (any, error) {
	if rv, ok := v.(ref.Val); ok {
		return toJSON(rv)
	}
	return v, nil
}

// toJSON converts a CEL result to a JSON tree: null, bool, string,
// json.Number (ints, uints and finite doubles), []any and map[string]any
// (string keys); bytes become their base64 text, durations and
// timestamps their CEL string form. Other types have no JSON form.
func toJSON(v ref.Val) (any, error) {
	switch v := v.(type) {
	case *types.Err:
		return nil, fmt.Errorf("cel: %w", v)
	case jsonMap:
		return v.m, nil
	case *dynamic.ObjectVal:
		return nativeJSON(v.Value())
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.String:
		return string(v), nil
	case types.Int:
		return json.Number(strconv.FormatInt(int64(v), 10)), nil
	case types.Uint:
		return json.Number(strconv.FormatUint(uint64(v), 10)), nil
	case types.Double:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("cel: result %v has no JSON form", f)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(v), nil
	case types.Duration, types.Timestamp:
		return string(v.ConvertToType(types.StringType).(types.String)), nil
	case traits.Lister:
		n, _ := v.Size().(types.Int)
		out := make([]any, 0, int(n))
		for it := v.Iterator(); it.HasNext() == types.True; {
			e, err := toJSON(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	case traits.Mapper:
		n, _ := v.Size().(types.Int)
		out := make(map[string]any, int(n))
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("cel: result map has a key of type %s, JSON objects have string keys", k.Type().TypeName())
			}
			e, err := toJSON(v.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(ks)] = e
		}
		return out, nil
	}
	return nil, fmt.Errorf("cel: result of type %s has no JSON form", v.Type().TypeName())
}
