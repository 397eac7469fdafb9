package conditions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/blang/semver/v4"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/pattern"
	"github.com/modwright/modwright/internal/lang/quantity"
)

// The operators, by their lower-case names (Kyverno matches them without
// regard to case; "Equal" and "NotEqual" are old spellings).
type opKind uint8

const (
	opEquals opKind = iota + 1
	opNotEquals
	opIn
	opAnyIn
	opAllIn
	opNotIn
	opAnyNotIn
	opAllNotIn
	opGreaterThanOrEquals
	opGreaterThan
	opLessThanOrEquals
	opLessThan
	opDurationGreaterThanOrEquals
	opDurationGreaterThan
	opDurationLessThanOrEquals
	opDurationLessThan
)

var operators = map[string]opKind{
	"equal": opEquals, "equals": opEquals,
	"notequal": opNotEquals, "notequals": opNotEquals,
	"in": opIn, "anyin": opAnyIn, "allin": opAllIn,
	"notin": opNotIn, "anynotin": opAnyNotIn, "allnotin": opAllNotIn,
	"greaterthanorequals": opGreaterThanOrEquals, "greaterthan": opGreaterThan,
	"lessthanorequals": opLessThanOrEquals, "lessthan": opLessThan,
	"durationgreaterthanorequals": opDurationGreaterThanOrEquals, "durationgreaterthan": opDurationGreaterThan,
	"durationlessthanorequals": opDurationLessThanOrEquals, "durationlessthan": opDurationLessThan,
}

// Operators lists the operators' names as Kyverno's API spells them.
func Operators() []string {
	return []string{"Equals", "NotEquals", "In", "AnyIn", "AllIn", "NotIn", "AnyNotIn", "AllNotIn",
		"GreaterThanOrEquals", "GreaterThan", "LessThanOrEquals", "LessThan",
		"DurationGreaterThanOrEquals", "DurationGreaterThan", "DurationLessThanOrEquals", "DurationLessThan"}
}

func lookupOperator(name string) (opKind, bool) {
	k, ok := operators[strings.ToLower(name)]
	return k, ok
}

// normalize turns a JSON value tree into the form Kyverno's operators see
// (its documents go through encoding/json): numbers are float64.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return string(x)
		}
		return f
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case float32:
		return float64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// checkQuantities refuses (quantity.ErrOutOfRange, in lang.ErrLimit's
// chain) a key or value holding a quantity-shaped string beyond the
// bounds of package quantity: the operators compare strings as
// quantities, and apimachinery's arithmetic on "1e999999999" does not
// end. Kyverno would spin; the condition fails instead, and the rule
// with it (its failure policy decides).
func checkQuantities(vs ...any) error {
	for _, v := range vs {
		switch x := v.(type) {
		case string:
			if err := quantity.Check(x); err != nil {
				return err
			}
		case []any:
			if err := checkQuantities(x...); err != nil {
				return err
			}
		case map[string]any:
			for _, e := range x {
				if err := checkQuantities(e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// evaluate applies op to a normalized key and value.
func evaluate(op opKind, key, value any) bool {
	switch op {
	case opEquals:
		return equals(key, value)
	case opNotEquals:
		return notEquals(key, value)
	case opIn, opNotIn:
		return in(op == opNotIn, key, value)
	case opAnyIn, opAnyNotIn:
		return anyIn(op == opAnyNotIn, key, value)
	case opAllIn, opAllNotIn:
		return allIn(op == opAllNotIn, key, value)
	case opGreaterThanOrEquals, opGreaterThan, opLessThanOrEquals, opLessThan:
		return numeric(op, key, value)
	default:
		return durationOp(op, key, value)
	}
}

// equals is Kyverno's Equals: by the key's type; strings compare as
// durations, then quantities, then with wildcards in the value.
func equals(key, value any) bool {
	switch k := key.(type) {
	case bool:
		v, ok := value.(bool)
		return ok && k == v
	case float64:
		switch v := value.(type) {
		case float64:
			return v == k
		case string:
			f, err := strconv.ParseFloat(v, 64)
			return err == nil && f == k
		}
		return false
	case string:
		if kd, vd, ok := durations(k, value); ok {
			return kd.Seconds() == vd.Seconds()
		}
		if kq, err := quantity.Parse(k); err == nil {
			if v, ok := value.(string); ok {
				vq, err := quantity.Parse(v)
				return err == nil && kq.Equal(vq)
			}
		}
		v, ok := value.(string)
		return ok && lang.MatchWildcard(v, k)
	case map[string]any:
		v, ok := value.(map[string]any)
		return ok && reflect.DeepEqual(k, v)
	case []any:
		v, ok := value.([]any)
		return ok && reflect.DeepEqual(k, v)
	}
	return false
}

// notEquals is Kyverno's NotEquals, which is not quite !Equals: a value of
// another type than the key's is not equal, a null key never is.
func notEquals(key, value any) bool {
	switch k := key.(type) {
	case bool:
		v, ok := value.(bool)
		return !ok || k != v
	case float64:
		switch v := value.(type) {
		case float64:
			return v != k
		case string:
			f, err := strconv.ParseFloat(v, 64)
			return err != nil || f != k
		}
		return true
	case string:
		if kd, vd, ok := durations(k, value); ok {
			return kd.Seconds() != vd.Seconds()
		}
		if kq, err := quantity.Parse(k); err == nil {
			if v, ok := value.(string); ok && v != "" {
				vq, err := quantity.Parse(v)
				return err != nil || !kq.Equal(vq)
			}
		}
		v, ok := value.(string)
		return !ok || !lang.MatchWildcard(v, k)
	case map[string]any:
		v, ok := value.(map[string]any)
		return !ok || !reflect.DeepEqual(k, v)
	case []any:
		v, ok := value.([]any)
		return !ok || !reflect.DeepEqual(k, v)
	}
	return false
}

// durations parses key and value as Go durations, as Kyverno: at least one
// must be a duration string ("0" is not); the other may be a number of
// seconds.
func durations(key, value any) (time.Duration, time.Duration, bool) {
	kd, kok := durationString(key)
	vd, vok := durationString(value)
	if !kok && !vok {
		return 0, 0, false
	}
	if !kok {
		if kd, kok = seconds(key); !kok {
			return 0, 0, false
		}
	}
	if !vok {
		if vd, vok = seconds(value); !vok {
			return 0, 0, false
		}
	}
	return kd, vd, true
}

func durationString(v any) (time.Duration, bool) {
	s, ok := v.(string)
	if !ok || s == "0" {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

func seconds(v any) (time.Duration, bool) {
	f, ok := v.(float64)
	if !ok {
		return 0, false
	}
	return time.Duration(f) * time.Second, true
}

// scalarText is the text Kyverno's In operators compare a scalar key by.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64, bool:
		return fmt.Sprint(x), true
	}
	return "", false
}

// texts is a list key as the In operators see it.
func texts(list []any) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = fmt.Sprint(e)
	}
	return out
}

// matchEither matches a and b with wildcards either way.
func matchEither(a, b string) bool { return lang.MatchWildcard(a, b) || lang.MatchWildcard(b, a) }

// inWith is what every In operator shares: a list key is compared as a
// set with the values (setIn), a scalar one looked up in them (keyIn); an
// invalid value fails the condition, either way.
func inWith(not bool, key, value any, setIn func(not bool, keys []string, value any) (invalid, res bool), keyIn func(key string, value any) (invalid, found bool)) bool {
	if list, ok := key.([]any); ok {
		invalid, res := setIn(not, texts(list), value)
		return !invalid && res
	}
	k, ok := scalarText(key)
	if !ok {
		return false
	}
	invalid, found := keyIn(k, value)
	if invalid {
		return false
	}
	return found != not
}

// in is the deprecated In and NotIn.
func in(not bool, key, value any) bool { return inWith(not, key, value, setIn, keyIn) }

// keyIn: is key in value (a list, a wildcard, or a JSON list of strings)?
func keyIn(key string, value any) (invalid, found bool) {
	switch v := value.(type) {
	case []any:
		for _, e := range v {
			if matchEither(fmt.Sprint(e), key) {
				return false, true
			}
		}
		return false, false
	case string:
		if lang.MatchWildcard(v, key) {
			return false, true
		}
		var arr []string
		if err := json.Unmarshal([]byte(v), &arr); err != nil {
			return true, false
		}
		for _, e := range arr {
			if e == key {
				return false, true
			}
		}
		return false, false
	}
	return true, false
}

// setIn is In and NotIn of a list key: every element in (or, for NotIn,
// one not in) the values, compared exactly.
func setIn(not bool, keys []string, value any) (invalid, res bool) {
	var vals []string
	switch v := value.(type) {
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return true, false
			}
			vals = append(vals, s)
		}
	case string:
		if len(keys) == 1 && keys[0] == v {
			return false, true // for NotIn too, as Kyverno
		}
		if err := json.Unmarshal([]byte(v), &vals); err != nil {
			return true, false
		}
	default:
		return true, false
	}
	set := make(map[string]bool, len(vals))
	for _, s := range vals {
		set[s] = true
	}
	for _, k := range keys {
		if !set[k] {
			return false, not
		}
	}
	return false, !not
}

// anyIn is AnyIn and AnyNotIn.
func anyIn(not bool, key, value any) bool { return inWith(not, key, value, anySetIn, keyInValues) }

// allIn is AllIn and AllNotIn.
func allIn(not bool, key, value any) bool { return inWith(not, key, value, allSetIn, keyInValues) }

// keyInValues is keyIn of the Any and All operators: a string value may
// also be a range ("1-10") or one plain value.
func keyInValues(key string, value any) (invalid, found bool) {
	switch v := value.(type) {
	case []any:
		for _, e := range v {
			if matchEither(fmt.Sprint(e), key) {
				return false, true
			}
		}
		return false, false
	case string:
		if lang.MatchWildcard(v, key) {
			return false, true
		}
		if pattern.IsRange(v) {
			return false, pattern.MatchString(key, v)
		}
		arr, ok := stringList(v)
		if !ok {
			return true, false
		}
		for _, e := range arr {
			if e == key {
				return false, true
			}
		}
		return false, false
	}
	return true, false
}

// stringList reads a string value as Kyverno's Any/All operators: a JSON
// list of strings, or (not JSON) one value.
func stringList(v string) ([]string, bool) {
	if !json.Valid([]byte(v)) {
		return []string{v}, true
	}
	var arr []string
	if err := json.Unmarshal([]byte(v), &arr); err != nil {
		return nil, false
	}
	return arr, true
}

func anySetIn(not bool, keys []string, value any) (invalid, res bool) {
	var vals []string
	switch v := value.(type) {
	case []any:
		vals = texts(v)
	case float64, bool:
		vals = []string{fmt.Sprint(v)}
	case string:
		if len(keys) == 1 && keys[0] == v {
			return false, !not
		}
		if pattern.IsRange(v) {
			rng := v
			if not {
				rng = strings.Replace(v, "-", "!-", 1)
			}
			for _, k := range keys {
				if pattern.MatchString(k, rng) {
					return false, true
				}
			}
			return false, false
		}
		arr, ok := stringList(v)
		if !ok {
			return true, false
		}
		vals = arr
	default:
		return true, false
	}
	for _, k := range keys {
		found := false
		for _, val := range vals {
			if matchEither(k, val) {
				found = true
				break
			}
		}
		if found != not {
			return false, true
		}
	}
	return false, false
}

func allSetIn(not bool, keys []string, value any) (invalid, res bool) {
	var vals []string
	switch v := value.(type) {
	case []any:
		vals = texts(v)
	case string:
		if len(keys) == 1 && keys[0] == v {
			return false, !not
		}
		if pattern.IsRange(v) {
			n := 0
			for _, k := range keys {
				if pattern.MatchString(k, v) {
					n++
				}
			}
			if not {
				return false, n == 0
			}
			return false, n == len(keys)
		}
		arr, ok := stringList(v)
		if !ok {
			return true, false
		}
		vals = arr
	default:
		return true, false
	}
	n := 0
	for _, k := range keys {
		for _, val := range vals {
			if matchEither(k, val) {
				n++
				break
			}
		}
	}
	if not {
		return false, n == 0
	}
	return false, n == len(keys)
}

// numeric is GreaterThan, GreaterThanOrEquals, LessThan and
// LessThanOrEquals over numbers, durations, quantities and semantic
// versions, as Kyverno decides which.
func numeric(op opKind, key, value any) bool {
	switch k := key.(type) {
	case float64:
		return numericFloat(op, k, value)
	case string:
		if kd, vd, ok := durations(k, value); ok {
			return compare(op, kd.Seconds(), vd.Seconds())
		}
		if v, ok := value.(string); ok {
			if kq, err := quantity.Parse(k); err == nil {
				if vq, err := quantity.Parse(v); err == nil {
					return compare(op, float64(kq.Cmp(vq)), 0)
				}
			}
		}
		if f, err := strconv.ParseFloat(k, 64); err == nil {
			return numericFloat(op, f, value)
		}
		if kv, err := semver.Parse(k); err == nil {
			v, ok := value.(string)
			if !ok {
				return false
			}
			vv, err := semver.Parse(v)
			if err != nil {
				return false
			}
			return compare(op, float64(kv.Compare(vv)), 0)
		}
	}
	return false
}

func numericFloat(op opKind, k float64, value any) bool {
	switch v := value.(type) {
	case float64:
		return compare(op, k, v)
	case string:
		if kd, vd, ok := durations(k, value); ok {
			return compare(op, kd.Seconds(), vd.Seconds())
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return compare(op, k, f)
		}
	}
	return false
}

func compare(op opKind, k, v float64) bool {
	switch op {
	case opGreaterThanOrEquals, opDurationGreaterThanOrEquals:
		return k >= v
	case opGreaterThan, opDurationGreaterThan:
		return k > v
	case opLessThanOrEquals, opDurationLessThanOrEquals:
		return k <= v
	case opLessThan, opDurationLessThan:
		return k < v
	}
	return false
}

// durationOp is the deprecated Duration* operators: numbers are seconds,
// strings Go durations.
func durationOp(op opKind, key, value any) bool {
	var kd time.Duration
	switch k := key.(type) {
	case float64:
		kd = time.Duration(k) * time.Second
	case string:
		d, err := time.ParseDuration(k)
		if err != nil {
			return false
		}
		kd = d
	default:
		return false
	}
	var vd time.Duration
	switch v := value.(type) {
	case float64:
		// A number is seconds; a fraction is dropped (as Kyverno's
		// conversion to a Duration).
		vd = time.Duration(v) * time.Second
	case string:
		d, err := time.ParseDuration(v)
		if err != nil {
			return false
		}
		vd = d
	default:
		return false
	}
	return compare(op, float64(kd), float64(vd))
}
