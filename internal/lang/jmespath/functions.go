package jmespath

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/interpreter"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/lang"
)

// The argument types of the function table.
var (
	tString = functions.ArgSpec{Types: []functions.JpType{functions.JpString}}
	tNumber = functions.ArgSpec{Types: []functions.JpType{functions.JpNumber}}
	tObject = functions.ArgSpec{Types: []functions.JpType{functions.JpObject}}
	tArray  = functions.ArgSpec{Types: []functions.JpType{functions.JpArray}}
	tAny    = functions.ArgSpec{Types: []functions.JpType{functions.JpAny}}
	tStrNum = functions.ArgSpec{Types: []functions.JpType{functions.JpString, functions.JpNumber}}
	tObjArr = functions.ArgSpec{Types: []functions.JpType{functions.JpObject, functions.JpArray}}
)

func args(specs ...functions.ArgSpec) []functions.ArgSpec { return specs }

// kyvernoFunctions returns Kyverno's custom functions implemented so far.
func kyvernoFunctions() []functions.FunctionEntry {
	return []functions.FunctionEntry{
		{Name: "compare", Arguments: args(tString, tString), Handler: jpCompare},
		{Name: "equal_fold", Arguments: args(tString, tString), Handler: jpEqualFold},
		{Name: "replace", Arguments: args(tString, tString, tString, tNumber), Handler: jpReplace},
		{Name: "replace_all", Arguments: args(tString, tString, tString), Handler: jpReplaceAll},
		{Name: "to_upper", Arguments: args(tString), Handler: jpToUpper},
		{Name: "to_lower", Arguments: args(tString), Handler: jpToLower},
		{Name: "trim", Arguments: args(tString, tString), Handler: jpTrim},
		{Name: "trim_prefix", Arguments: args(tString, tString), Handler: jpTrimPrefix},
		{Name: "split", Arguments: args(tString, tString), Handler: jpSplit},
		{Name: "regex_replace_all", Arguments: args(tString, tStrNum, tStrNum), Handler: jpRegexReplaceAll},
		{Name: "regex_replace_all_literal", Arguments: args(tString, tStrNum, tStrNum), Handler: jpRegexReplaceAllLiteral},
		{Name: "regex_match", Arguments: args(tString, tStrNum), Handler: jpRegexMatch},
		{Name: "pattern_match", Arguments: args(tString, tStrNum), Handler: jpPatternMatch},
		{Name: "label_match", Arguments: args(tObject, tObject), Handler: jpLabelMatch},
		{Name: "to_boolean", Arguments: args(tString), Handler: jpToBoolean},
		{Name: "base64_decode", Arguments: args(tString), Handler: jpBase64Decode},
		{Name: "base64_encode", Arguments: args(tString), Handler: jpBase64Encode},
		{Name: "sha256", Arguments: args(tString), Handler: jpSHA256},
		{Name: "sha1", Arguments: args(tString), Handler: jpSHA1},
		{Name: "md5", Arguments: args(tString), Handler: jpMD5},
		{Name: "truncate", Arguments: args(tString, tNumber), Handler: jpTruncate},
		{Name: "path_canonicalize", Arguments: args(tString), Handler: jpPathCanonicalize},
		{Name: "parse_json", Arguments: args(tString), Handler: jpParseJSON},
		{Name: "parse_yaml", Arguments: args(tString), Handler: jpParseYAML},
		{Name: "items", Arguments: args(tObjArr, tString, tString), Handler: jpItems},
		{Name: "object_from_lists", Arguments: args(tArray, tArray), Handler: jpObjectFromLists},
		{Name: "lookup", Arguments: args(tObjArr, tStrNum), Handler: jpLookup},
		{Name: "semver_compare", Arguments: args(tString, tString), Handler: jpSemverCompare},
		{Name: "image_normalize", Arguments: args(tString), Handler: jpImageNormalize},
		{Name: "add", Arguments: args(tStrNum, tStrNum), Handler: jpAdd},
		{Name: "subtract", Arguments: args(tStrNum, tStrNum), Handler: jpSubtract},
		{Name: "multiply", Arguments: args(tStrNum, tStrNum), Handler: jpMultiply},
		{Name: "divide", Arguments: args(tStrNum, tStrNum), Handler: jpDivide},
		{Name: "modulo", Arguments: args(tStrNum, tStrNum), Handler: jpModulo},
		{Name: "sum", Arguments: args(tArray), Handler: jpSum},
		{Name: "round", Arguments: args(tNumber, tNumber), Handler: jpRound},
		{Name: "time_since", Arguments: args(tString, tString, tString), Handler: jpTimeSince},
		{Name: "time_now", Handler: jpTimeNow},
		{Name: "time_now_utc", Handler: jpTimeNowUTC},
		{Name: "time_add", Arguments: args(tString, tString), Handler: jpTimeAdd},
		{Name: "time_parse", Arguments: args(tString, tString), Handler: jpTimeParse},
		{Name: "time_to_cron", Arguments: args(tString), Handler: jpTimeToCron},
		{Name: "time_utc", Arguments: args(tString), Handler: jpTimeUTC},
		{Name: "time_diff", Arguments: args(tString, tString), Handler: jpTimeDiff},
		{Name: "time_before", Arguments: args(tString, tString), Handler: jpTimeBefore},
		{Name: "time_after", Arguments: args(tString, tString), Handler: jpTimeAfter},
		{Name: "time_between", Arguments: args(tString, tString, tString), Handler: jpTimeBetween},
		{Name: "time_truncate", Arguments: args(tString, tString), Handler: jpTimeTruncate},
		{Name: "is_external_url", Arguments: args(tString), Handler: jpIsExternalURL},
		{Name: "x509_decode", Arguments: args(tString), Handler: jpX509Decode},
		{Name: "random", Arguments: args(tString), Handler: jpRandom},
	}
}

// FunctionError is the error of a function call: its arguments' types
// (the library's check) or the function's own. Its text starts with
// "JMESPath function '<name>': ", as Kyverno's own errors do.
type FunctionError struct {
	Function string
	Err      error
}

func (e *FunctionError) Error() string {
	return "JMESPath function '" + e.Function + "': " + e.Err.Error()
}

func (e *FunctionError) Unwrap() error { return e.Err }

// funcError is an error of function name, worded as Kyverno's.
func funcError(name, format string, a ...any) error {
	return &FunctionError{Function: name, Err: fmt.Errorf(format, a...)}
}

// caller is the function table; it names the function in the library's
// errors (argument count and types), which do not.
type caller struct{ table interpreter.FunctionCaller }

func (c caller) CallFunction(name string, args []any) (any, error) {
	v, err := c.table.CallFunction(name, args)
	if err != nil {
		var fe *FunctionError
		if !errors.As(err, &fe) {
			err = &FunctionError{Function: name, Err: err}
		}
	}
	return v, err
}

// argError is Kyverno's error for argument #i (0-based) of function name
// that is not of type typ.
func argError(name string, i int, typ string) error {
	return funcError(name, "argument #%d is not of type %s", i+1, typ)
}

// str returns argument i as a string: a string, or a number's text (the
// functions that take either). As Kyverno, a number is formatted at
// float32 precision: 123456789 is "123456790" there, and so here.
func str(a []any, i int) string {
	switch x := a[i].(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 32)
	}
	return fmt.Sprint(a[i])
}

func jpCompare(a []any) (any, error) {
	return float64(strings.Compare(a[0].(string), a[1].(string))), nil
}

func jpEqualFold(a []any) (any, error) {
	return strings.EqualFold(a[0].(string), a[1].(string)), nil
}

func jpReplace(a []any) (any, error) {
	return strings.Replace(a[0].(string), a[1].(string), a[2].(string), int(a[3].(float64))), nil
}

func jpReplaceAll(a []any) (any, error) {
	return strings.ReplaceAll(a[0].(string), a[1].(string), a[2].(string)), nil
}

func jpToUpper(a []any) (any, error) { return strings.ToUpper(a[0].(string)), nil }

func jpToLower(a []any) (any, error) { return strings.ToLower(a[0].(string)), nil }

func jpTrim(a []any) (any, error) { return strings.Trim(a[0].(string), a[1].(string)), nil }

func jpTrimPrefix(a []any) (any, error) {
	return strings.TrimPrefix(a[0].(string), a[1].(string)), nil
}

func jpSplit(a []any) (any, error) {
	parts := strings.Split(a[0].(string), a[1].(string))
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

func regexReplace(name string, a []any, literal bool) (any, error) {
	re, err := regexp.Compile(a[0].(string))
	if err != nil {
		return nil, funcError(name, "%v", err)
	}
	if literal {
		return re.ReplaceAllLiteralString(str(a, 1), str(a, 2)), nil
	}
	return re.ReplaceAllString(str(a, 1), str(a, 2)), nil
}

func jpRegexReplaceAll(a []any) (any, error) {
	return regexReplace("regex_replace_all", a, false)
}

func jpRegexReplaceAllLiteral(a []any) (any, error) {
	return regexReplace("regex_replace_all_literal", a, true)
}

func jpRegexMatch(a []any) (any, error) {
	re, err := regexp.Compile(a[0].(string))
	if err != nil {
		return nil, funcError("regex_match", "%v", err)
	}
	return re.MatchString(str(a, 1)), nil
}

func jpPatternMatch(a []any) (any, error) {
	return lang.MatchWildcard(a[0].(string), str(a, 1)), nil
}

// jpLabelMatch reports whether every label of the selector (argument 1) is
// among the labels (argument 2) with an equal value (of the same JSON
// type: "1" is not 1, as Kyverno).
func jpLabelMatch(a []any) (any, error) {
	sel, labels := a[0].(map[string]any), a[1].(map[string]any)
	for k, v := range sel {
		lv, ok := labels[k]
		if !ok || !reflect.DeepEqual(lv, v) {
			return false, nil
		}
	}
	return true, nil
}

func jpToBoolean(a []any) (any, error) {
	switch strings.ToLower(a[0].(string)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return nil, funcError("to_boolean", "lowercase argument must be 'true' or 'false' (provided: '%s')", a[0])
}

func jpBase64Decode(a []any) (any, error) {
	b, err := base64.StdEncoding.DecodeString(a[0].(string))
	if err != nil {
		return nil, funcError("base64_decode", "%v", err)
	}
	return string(b), nil
}

func jpBase64Encode(a []any) (any, error) {
	return base64.StdEncoding.EncodeToString([]byte(a[0].(string))), nil
}

func jpSHA256(a []any) (any, error) {
	h := sha256.Sum256([]byte(a[0].(string)))
	return hex.EncodeToString(h[:]), nil
}

func jpSHA1(a []any) (any, error) {
	h := sha1.Sum([]byte(a[0].(string)))
	return hex.EncodeToString(h[:]), nil
}

func jpMD5(a []any) (any, error) {
	h := md5.Sum([]byte(a[0].(string)))
	return hex.EncodeToString(h[:]), nil
}

// jpTruncate keeps the first n characters (runes; n truncated to an
// integer; a negative n keeps none).
func jpTruncate(a []any) (any, error) {
	s, n := a[0].(string), int(a[1].(float64))
	if n <= 0 {
		return "", nil
	}
	for i := range s {
		if n == 0 {
			return s[:i], nil
		}
		n--
	}
	return s, nil
}

func jpPathCanonicalize(a []any) (any, error) {
	return filepath.Join(a[0].(string)), nil
}

func jpParseJSON(a []any) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(a[0].(string)), &v); err != nil {
		return nil, funcError("parse_json", "%v", err)
	}
	return v, nil
}

func jpParseYAML(a []any) (any, error) {
	j, err := yaml.YAMLToJSON([]byte(a[0].(string)))
	if err != nil {
		return nil, funcError("parse_yaml", "%v", err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, funcError("parse_yaml", "%v", err)
	}
	return v, nil
}

// jpItems lists an object's members (in key order) or an array's elements
// as objects {keyName: key or index, valName: value}.
func jpItems(a []any) (any, error) {
	kn, vn := a[1].(string), a[2].(string)
	switch x := a[0].(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = map[string]any{kn: k, vn: x[k]}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = map[string]any{kn: float64(i), vn: e}
		}
		return out, nil
	}
	return nil, argError("items", 0, "object or array")
}

// jpObjectFromLists builds an object from a list of keys and a list of
// values; keys past the values' end get null.
func jpObjectFromLists(a []any) (any, error) {
	keys, vals := a[0].([]any), a[1].([]any)
	out := make(map[string]any, len(keys))
	for i, k := range keys {
		ks, ok := k.(string)
		if !ok {
			return nil, funcError("object_from_lists", "key #%d is not a string", i+1)
		}
		if i < len(vals) {
			out[ks] = vals[i]
		} else {
			out[ks] = nil
		}
	}
	return out, nil
}
