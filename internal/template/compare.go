package template

import (
	"errors"
	"reflect"
	"strings"
	"text/template"
)

// Comparing two long strings costs their length, which the comparison
// builtins (eq, ne, lt, le, gt, ge) do not report: a metered instance
// replaces them with functions that charge for the strings, then run
// text/template's own builtin on the two values, so that every result and
// error stays exactly what text/template gives.
var comparisons = func() map[string]*template.Template {
	m := map[string]*template.Template{}
	for _, name := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
		m[name] = template.Must(template.New(name).Parse("{{ if " + name + " .A .B }}1{{ end }}"))
	}
	m["eq1"] = template.Must(template.New("eq").Parse("{{ if eq .A }}1{{ end }}"))
	return m
}()

type comparands struct{ A, B any }

func asAny(v reflect.Value) any {
	if !v.IsValid() || !v.CanInterface() {
		return nil
	}
	return v.Interface()
}

func stringLen(v reflect.Value) int {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() == reflect.String {
		return v.Len()
	}
	return 0
}

// compare runs the builtin name on a and b, charging for long strings.
func (m *meter) compare(name string, a, b reflect.Value) (bool, error) {
	if err := m.tryCharge(name, nodeCost+int64(min(stringLen(a), stringLen(b)))/8); err != nil {
		return false, err
	}
	if ok, done := compareBasic(name, a, b); done {
		return ok, nil
	}
	var out strings.Builder
	if err := comparisons[name].Execute(&out, comparands{asAny(a), asAny(b)}); err != nil {
		// Report the builtin's own error, as text/template would.
		for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
			err = next
		}
		return false, err
	}
	return out.Len() > 0, nil
}

// comparisonFuncs are the metered replacements of the comparison builtins.
func (m *meter) comparisonFuncs() template.FuncMap {
	two := func(name string) func(a, b reflect.Value) (bool, error) {
		return func(a, b reflect.Value) (bool, error) { return m.compare(name, a, b) }
	}
	return template.FuncMap{
		// eq a b c... is true when a equals any of b, c...: the builtin
		// compares them in order and stops at the first match or error.
		"eq": func(a reflect.Value, bs ...reflect.Value) (bool, error) {
			if len(bs) == 0 {
				return m.compare("eq1", a, reflect.Value{}) // the builtin's error for a missing argument
			}
			for _, b := range bs {
				if ok, err := m.compare("eq", a, b); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		},
		"ne": two("ne"), "lt": two("lt"), "le": two("le"), "gt": two("gt"), "ge": two("ge"),
	}
}

func indirect(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Interface && !v.IsNil() {
		return v.Elem()
	}
	return v
}

// compareBasic compares two strings, two signed integers or two booleans
// directly, where the builtins' result is plain Go comparison; done is
// false for anything else, which the builtin itself then compares.
func compareBasic(name string, a, b reflect.Value) (result, done bool) {
	a, b = indirect(a), indirect(b)
	var c int
	switch {
	case a.Kind() == reflect.String && b.Kind() == reflect.String:
		c = strings.Compare(a.String(), b.String())
	case isInt(a.Kind()) && isInt(b.Kind()):
		c = cmpInt(a.Int(), b.Int())
	case a.Kind() == reflect.Bool && b.Kind() == reflect.Bool && (name == "eq" || name == "ne"):
		c = 1
		if a.Bool() == b.Bool() {
			c = 0
		}
	default:
		return false, false
	}
	switch name {
	case "eq":
		return c == 0, true
	case "ne":
		return c != 0, true
	case "lt":
		return c < 0, true
	case "le":
		return c <= 0, true
	case "gt":
		return c > 0, true
	case "ge":
		return c >= 0, true
	}
	return false, false
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
