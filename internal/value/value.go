package value

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
)

// Encode renders a tree as compact JSON with sorted object keys and no HTML
// escaping (see AppendJSON).
func Encode(v any) ([]byte, error) {
	return AppendJSON(make([]byte, 0, 256), v)
}

// DeepCopy returns a copy of v that shares no map or slice with it.
func DeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return map[string]any{}
		}
		// maps.Clone copies the table without rehashing; only the
		// containers among the members need replacing.
		m := maps.Clone(t)
		for k, e := range m {
			switch e.(type) {
			case map[string]any, []any:
				m[k] = DeepCopy(e)
			}
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = DeepCopy(e)
		}
		return s
	default:
		return v
	}
}

// IsNumber reports whether v is a number of any representation.
func IsNumber(v any) bool {
	switch v.(type) {
	case json.Number, float64, int64, int:
		return true
	}
	return false
}

// Float returns v as a float64 when v is a number.
func Float(v any) (float64, bool) {
	switch t := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		return f, err == nil
	case float64:
		return t, true
	case int64:
		return float64(t), true
	case int:
		return float64(t), true
	}
	return 0, false
}

// CompareNumbers orders two numbers: -1, 0 or +1. Integers are compared
// exactly; anything else as float64.
func CompareNumbers(a, b any) (int, bool) {
	if ai, ok := ExactInt(a); ok {
		if bi, ok := ExactInt(b); ok {
			switch {
			case ai < bi:
				return -1, true
			case ai > bi:
				return 1, true
			}
			return 0, true
		}
	}
	af, ok1 := Float(a)
	bf, ok2 := Float(b)
	if !ok1 || !ok2 || math.IsNaN(af) || math.IsNaN(bf) {
		return 0, false
	}
	switch {
	case af < bf:
		return -1, true
	case af > bf:
		return 1, true
	}
	return 0, true
}

// ExactInt returns v as an int64 when it is an integer written as one (no
// fraction or exponent) that fits.
func ExactInt(v any) (int64, bool) {
	switch t := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(t), 10, 64)
		return i, err == nil
	case int64:
		return t, true
	case int:
		return int64(t), true
	}
	return 0, false
}

// Equal reports whether two values are the same JSON value: numbers compare
// by value (1, 1.0 and 1e0 are equal), objects ignore key order.
func Equal(a, b any) bool { return EqualSharing(a, b, nil) }

// EqualSharing is Equal, asking same first of every pair of containers
// it compares: true says they are equal without walking them (a subtree
// two trees share). same may be nil.
func EqualSharing(a, b any, same func(a, b any) bool) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if same != nil && same(a, b) {
			return true
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !EqualSharing(xv, yv, same) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if same != nil && same(a, b) {
			return true
		}
		for i := range x {
			if !EqualSharing(x[i], y[i], same) {
				return false
			}
		}
		return true
	}
	if IsNumber(a) && IsNumber(b) {
		if an, ok := a.(json.Number); ok {
			if bn, ok := b.(json.Number); ok && an == bn {
				return true // same text, even when it overflows a float64 (1e400)
			}
		}
		c, ok := CompareNumbers(a, b)
		return ok && c == 0
	}
	return false
}

// Text is the text form of a value used by matchValue, matchValues and
// matchRegex: strings as they are, numbers in plain decimal (never exponent
// notation), true/false, null, objects and arrays as compact JSON.
func Text(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return t
	case bool:
		if t {
			return "true"
		}
		return "false"
	case json.Number:
		return NumberText(t)
	case float64:
		return formatFloat(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case int:
		return strconv.Itoa(t)
	default:
		b, err := Encode(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}

// NumberText renders a JSON number in plain decimal: "1e6" -> "1000000",
// "1.50" -> "1.5", "100" -> "100".
func NumberText(n json.Number) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return formatFloat(f)
}

func formatFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// TypeName names the JSON type of v for error messages.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	if IsNumber(v) {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
