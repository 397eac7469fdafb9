package cel

import (
	"reflect"
	"strings"
	"sync"
)

// goTypes remembers what the JSONPatch fast path reads of the built-in
// kinds' Go types (fastpatch.go): for each type reached, whether it
// decodes itself (a Quantity, a Time) and, for a struct, the type of each
// field by JSON name (inlined and embedded structs included). Walking a
// struct's fields and parsing their tags on every patched path was a
// sixth of a matching Policy's evaluation. The domain is the Go types of
// the binary, so the cache is bounded; it is safe for concurrent use. A
// nil *goTypes computes without remembering.
type goTypes struct {
	mu    sync.RWMutex
	infos map[reflect.Type]*goTypeInfo
}

type goTypeInfo struct {
	decodesItself bool
	fields        map[string]reflect.Type // a struct's, by JSON name
}

func newGoTypes() *goTypes { return &goTypes{infos: map[reflect.Type]*goTypeInfo{}} }

// info is what t's values are made of; t is not a pointer.
func (g *goTypes) info(t reflect.Type) *goTypeInfo {
	if g == nil {
		return newGoTypeInfo(t)
	}
	g.mu.RLock()
	in := g.infos[t]
	g.mu.RUnlock()
	if in != nil {
		return in
	}
	in = newGoTypeInfo(t)
	g.mu.Lock()
	g.infos[t] = in
	g.mu.Unlock()
	return in
}

func newGoTypeInfo(t reflect.Type) *goTypeInfo {
	in := &goTypeInfo{decodesItself: reflect.PointerTo(t).Implements(unmarshaler)}
	if t.Kind() == reflect.Struct {
		in.fields = map[string]reflect.Type{}
		addJSONFields(in.fields, t)
	}
	return in
}

// addJSONFields adds t's fields by JSON name, looking into inlined and
// embedded structs; a name seen first wins, as a field found first did.
func addJSONFields(fields map[string]reflect.Type, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if strings.Contains(f.Tag.Get("json"), ",inline") || (f.Anonymous && tag == "") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addJSONFields(fields, ft)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if _, seen := fields[tag]; !seen {
			fields[tag] = f.Type
		}
	}
}
