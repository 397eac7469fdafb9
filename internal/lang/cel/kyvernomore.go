package cel

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// More of Kyverno's CEL libraries that read nothing but their arguments
// (declared with the data libraries, Language.KyvernoData):
//
//   - gzip.decompress(bytes) is the text a gzip stream holds (at most
//     MaxGunzip bytes; each byte it gives costs as a string's traversal
//     does, so that the cost budget bounds how much an expression
//     inflates), gzip.compress(s) the gzip stream of s (no time in its
//     header, as Kyverno's: the same text, the same bytes);
//   - random(pattern) is a random string the regular expression matches
//     (an unbounded repetition at most maxRandomRepeat times, the result at
//     most maxRandomLen bytes), random() one of [0-9a-z]{8}, as Kyverno's;
//     also random.random;
//   - listObjToMap(keys, values, keyName, valueName) maps keys[i][keyName]
//     to values[i][valueName] (lists of equal length; also
//     transform.listObjToMap).

// MaxGunzip bounds what gzip.decompress gives.
const MaxGunzip = 1 << 20

// The bounds of random: how often *, + and {n,} repeat at most (as the
// generator Kyverno uses), and the length of a result.
const (
	maxRandomRepeat = 10
	maxRandomLen    = 4096
	maxRandomRegex  = 1024
)

const gunzipOverload = "kyverno_gzip_decompress_bytes"

func gzipDecompress(arg ref.Val) ref.Val {
	b, ok := arg.(types.Bytes)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return types.WrapErr(fmt.Errorf("gzip.decompress: %w", err))
	}
	defer r.Close() //nolint:errcheck
	out, err := io.ReadAll(io.LimitReader(r, MaxGunzip+1))
	if err != nil {
		return types.WrapErr(fmt.Errorf("gzip.decompress: %w", err))
	}
	if len(out) > MaxGunzip {
		return types.NewErr("gzip.decompress: the stream holds more than %d bytes", MaxGunzip)
	}
	return types.String(out)
}

func gzipCompress(arg ref.Val) ref.Val {
	s, e := textArg("gzip.compress", arg)
	if e != nil {
		return e
	}
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.ModTime = time.Unix(0, 0)
	if _, err := w.Write([]byte(s)); err != nil {
		return types.WrapErr(err)
	}
	if err := w.Close(); err != nil {
		return types.WrapErr(err)
	}
	return types.Bytes(buf.Bytes())
}

// gunzipCost is the runtime cost of gzip.decompress: its result's
// traversal, as a string of that size costs.
func gunzipCost(_ []ref.Val, result ref.Val) *uint64 {
	c := uint64(1)
	if s, ok := result.(types.String); ok {
		c += uint64(len(s)) / 10 // common.StringTraversalCostFactor
	}
	return &c
}

// randomString is random(pattern).
func randomString(pattern string) (string, error) {
	if len(pattern) > maxRandomRegex {
		return "", fmt.Errorf("random: a pattern of %d bytes (at most %d)", len(pattern), maxRandomRegex)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	if n := randomMaxLen(re); n > maxRandomLen {
		return "", fmt.Errorf("random: %q may give %d bytes or more (at most %d)", pattern, n, maxRandomLen)
	}
	var b strings.Builder
	randomGen(&b, re)
	return b.String(), nil
}

// randomMaxLen is the most bytes randomGen writes for re (saturating).
func randomMaxLen(re *syntax.Regexp) int {
	const inf = 1 << 30
	sat := func(n int) int { return min(n, inf) }
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture:
		return randomMaxLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n = sat(n + randomMaxLen(s))
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			n = max(n, randomMaxLen(s))
		}
		return n
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := repeats(re)
		_ = lo
		return sat(hi * randomMaxLen(re.Sub[0]))
	}
	return 0 // empty-width assertions, no match
}

// repeats is how many times a repetition may repeat.
func repeats(re *syntax.Regexp) (lo, hi int) {
	switch re.Op {
	case syntax.OpStar:
		return 0, maxRandomRepeat
	case syntax.OpPlus:
		return 1, maxRandomRepeat + 1
	case syntax.OpQuest:
		return 0, 1
	}
	if re.Max < 0 {
		return re.Min, re.Min + maxRandomRepeat
	}
	return re.Min, re.Max
}

// randomGen writes a random string re matches.
func randomGen(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		total := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			total += int(re.Rune[i+1]-re.Rune[i]) + 1
		}
		if total == 0 {
			return
		}
		k := rand.IntN(total)
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n := int(re.Rune[i+1]-re.Rune[i]) + 1
			if k < n {
				b.WriteRune(re.Rune[i] + rune(k))
				return
			}
			k -= n
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte(byte(' ' + rand.IntN('~'-' '+1)))
	case syntax.OpCapture:
		randomGen(b, re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			randomGen(b, s)
		}
	case syntax.OpAlternate:
		randomGen(b, re.Sub[rand.IntN(len(re.Sub))])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := repeats(re)
		for range lo + rand.IntN(hi-lo+1) {
			randomGen(b, re.Sub[0])
		}
	}
}

func randomOf(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	out, err := randomString(string(s))
	if err != nil {
		return types.WrapErr(err)
	}
	return types.String(out)
}

// listObjToMap is Kyverno's transform library's one function.
func listObjToMap(args ...ref.Val) ref.Val {
	if len(args) != 4 {
		return types.NewErr("listObjToMap must take 4 arguments, %d were passed", len(args))
	}
	keys, ok1 := args[0].(traits.Lister)
	vals, ok2 := args[1].(traits.Lister)
	keyName, ok3 := args[2].(types.String)
	valName, ok4 := args[3].(types.String)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return types.MaybeNoSuchOverloadErr(args[0])
	}
	n, m := keys.Size().(types.Int), vals.Size().(types.Int)
	if n != m {
		return types.NewErr("listObjToMap must take lists of equal length. list1: %d, list2: %d", n, m)
	}
	out := make(map[ref.Val]ref.Val, int(n))
	for i := types.Int(0); i < n; i++ {
		km, ok := keys.Get(i).(traits.Mapper)
		if !ok {
			return types.NewErr("listObjToMap: the key object list holds something else than objects")
		}
		k, found := km.Find(keyName)
		if _, isString := k.(types.String); !found || !isString {
			return types.NewErr("the passed key name cannot be handled as a string in the key object list")
		}
		vm, ok := vals.Get(i).(traits.Mapper)
		if !ok {
			return types.NewErr("object cannot be handled as a map string to any in the value object list")
		}
		v, found := vm.Find(valName)
		if !found {
			v = types.NullValue
		}
		out[k] = v
	}
	return types.NewRefValMap(jsonAdapter, out)
}

// kyvernoMoreLibs declares the libraries above, and the cost tracker of
// gzip.decompress (a ProgramOption).
func kyvernoMoreLibs() []cel.EnvOption {
	str, dyn := cel.StringType, cel.DynType
	randomOverloads := func(suffix string) []cel.FunctionOpt {
		return []cel.FunctionOpt{
			cel.Overload("kyverno_random_string_"+suffix, []*cel.Type{str}, str, cel.UnaryBinding(randomOf)),
			cel.Overload("kyverno_random_"+suffix, nil, str, cel.FunctionBinding(func(...ref.Val) ref.Val {
				return randomOf(types.String("[0-9a-z]{8}"))
			})),
		}
	}
	transform := func(suffix string) cel.FunctionOpt {
		return cel.Overload("kyverno_list_obj_to_map_"+suffix, []*cel.Type{cel.ListType(dyn), cel.ListType(dyn), str, str}, cel.MapType(str, dyn),
			cel.FunctionBinding(listObjToMap))
	}
	return []cel.EnvOption{
		cel.Function("gzip.decompress", cel.Overload(gunzipOverload, []*cel.Type{cel.BytesType}, str, cel.UnaryBinding(gzipDecompress))),
		cel.Function("gzip.compress", cel.Overload("kyverno_gzip_compress_any", []*cel.Type{dyn}, cel.BytesType, cel.UnaryBinding(gzipCompress))),
		cel.Function("random", randomOverloads("non_prefixed")...),
		cel.Function("random.random", randomOverloads("prefixed")...),
		cel.Function("listObjToMap", transform("non_prefixed")),
		cel.Function("transform.listObjToMap", transform("prefixed")),
	}
}

// costTrackers are the runtime costs of the functions whose result's size
// their arguments' do not bound.
func costTrackers() cel.ProgramOption {
	return cel.CostTrackerOptions(interpreter.OverloadCostTracker(gunzipOverload, gunzipCost))
}
