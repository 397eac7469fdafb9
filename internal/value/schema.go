package value

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Mismatch is a value of a tree whose JSON type the Go type it is decoded
// into does not accept: what encoding/json reports as "cannot unmarshal bool
// into Go struct field X.y of type string", with the element's full path.
type Mismatch struct {
	// Path is the field's path from the root, with array indices:
	// spec.match[0].matchValue.
	Path string
	// Want is the JSON type the field takes: "string", "number", "integer",
	// "boolean", "array" or "object".
	Want string
	// Got is the value found.
	Got any
}

func (m *Mismatch) Error() string {
	msg := fmt.Sprintf("%s must be %s %s, not %s %s", m.Path, article(m.Want), m.Want, article(TypeName(m.Got)), TypeName(m.Got))
	switch m.Got.(type) {
	case bool, json.Number:
		s := fmt.Sprint(m.Got)
		msg += fmt.Sprintf(" (%s)", s)
		if m.Want == "string" {
			field := m.Path[strings.LastIndexAny(m.Path, ".]")+1:]
			msg += fmt.Sprintf(`; YAML reads an unquoted %s as %s %s: quote it, as in %s: "%s"`, s, article(TypeName(m.Got)), TypeName(m.Got), field, s)
		}
	}
	return msg
}

func article(t string) string {
	if t != "" && strings.ContainsRune("aeiou", rune(t[0])) {
		return "an"
	}
	return "a"
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// FindMismatch returns the first value of v (in document order: struct
// fields in declaration order, array elements by index) whose JSON type t,
// a Go type decoded with encoding/json rules and `json` tags, does not
// accept; nil when there is none. Types with their own JSON or text
// decoding, interfaces and unknown fields are not checked: it explains a
// decoding error, it does not replace the decoder.
func FindMismatch(v any, t reflect.Type) *Mismatch {
	return findMismatch(v, t, "", 0)
}

// maxMismatchDepth bounds the walk; a deeper tree fails decoding anyway.
const maxMismatchDepth = 100

func findMismatch(v any, t reflect.Type, path string, depth int) *Mismatch {
	if v == nil || depth > maxMismatchDepth {
		return nil // null is accepted by every type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) || t.Implements(unmarshalerType) {
		return nil
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		if _, ok := v.(string); !ok {
			return &Mismatch{Path: path, Want: "string", Got: v}
		}
		return nil
	}
	bad := func(want string) *Mismatch { return &Mismatch{Path: path, Want: want, Got: v} }
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return bad("string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return bad("boolean")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return bad("integer")
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			if _, err := strconv.ParseUint(string(n), 10, 64); err != nil {
				return bad("integer")
			}
		}
	case reflect.Float32, reflect.Float64:
		if !IsNumber(v) {
			return bad("number")
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok { // []byte is base64 text
				return bad("string")
			}
			return nil
		}
		a, ok := v.([]any)
		if !ok {
			return bad("array")
		}
		for i, e := range a {
			if m := findMismatch(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", depth+1); m != nil {
				return m
			}
		}
	case reflect.Map:
		o, ok := v.(map[string]any)
		if !ok {
			return bad("object")
		}
		for _, k := range slices.Sorted(maps.Keys(o)) {
			if m := findMismatch(o[k], t.Elem(), join(path, k), depth+1); m != nil {
				return m
			}
		}
	case reflect.Struct:
		o, ok := v.(map[string]any)
		if !ok {
			return bad("object")
		}
		return structMismatch(o, t, path, depth)
	}
	return nil
}

func structMismatch(o map[string]any, t reflect.Type, path string, depth int) *Mismatch {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if m := structMismatch(o, ft, path, depth); m != nil {
					return m
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fv, ok := o[name]
		if !ok {
			continue
		}
		if m := findMismatch(fv, f.Type, join(path, name), depth+1); m != nil {
			return m
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
