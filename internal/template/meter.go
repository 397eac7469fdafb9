package template

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"reflect"
	"regexp"
	"strings"
)

// A meter is the budget of one execution: the rendered output, the range
// iterations and template invocations (steps), and the work units charged by
// functions. Each pooled instance of a Template has its own meter, bound into
// its functions; it is reset before every execution.
//
// Functions report an exceeded bound by panicking with the limit error:
// text/template recovers panics in called functions and returns them,
// wrapped with %w, as the execution's error.
type meter struct {
	work  int64
	steps int
	out   []byte
}

func (m *meter) reset() {
	m.work, m.steps = 0, 0
	if cap(m.out) > 64<<10 {
		m.out = nil // do not keep a large buffer in the pool
	}
	m.out = m.out[:0]
}

// Write collects the rendered output up to MaxOutput.
func (m *meter) Write(p []byte) (int, error) {
	if len(p) > MaxOutput-len(m.out) {
		return 0, exceeded("rendered output", "MaxOutput", MaxOutput)
	}
	m.out = append(m.out, p...)
	return len(p), nil
}

// charge adds n work units, panicking with a limit error past MaxWork.
func (m *meter) charge(what string, n int64) {
	if err := m.tryCharge(what, n); err != nil {
		panic(err)
	}
}

func (m *meter) tryCharge(what string, n int64) error {
	if n < 0 || n > MaxWork-m.work {
		m.work = MaxWork + 1
		return exceeded(what, "MaxWork", MaxWork)
	}
	m.work += n
	return nil
}

// step counts one range iteration or template invocation whose body has
// the given number of nodes.
func (m *meter) step(nodes int) error {
	if m.steps++; m.steps > MaxSteps {
		return exceeded("range iterations and template calls", "MaxSteps", MaxSteps)
	}
	return m.tryCharge("loop body", int64(nodes)*nodeCost)
}

// rangeOver is appended to every range pipeline: it charges for what the
// range walks before the first iteration (text/template sorts a map's keys
// first) and passes the value through unchanged.
func (m *meter) rangeOver(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		n := int64(rv.Len())
		m.charge("range", nodeCost+sat(n*elemCost, int64(1+bits.Len64(uint64(n)))))
	case reflect.Slice, reflect.Array:
		m.charge("range", nodeCost+int64(rv.Len())*elemCost)
	default:
		m.charge("range", nodeCost)
	}
	return v
}

// list checks the length of a list (or of the text of a list) a function
// is about to build.
func (m *meter) list(what string, n uint64) {
	if n > MaxList {
		panic(exceeded(what, "MaxList", MaxList))
	}
	m.charge(what, int64(n)*elemCost)
}

// build checks the length of a string a function is about to build.
func (m *meter) build(what string, n uint64) {
	if n > MaxOutput {
		panic(exceeded(what, "MaxOutput", MaxOutput))
	}
	m.charge(what, int64(n))
}

// hook checks a call's arguments before it runs, and may cap them.
type hook func(m *meter, name string, args []reflect.Value)

// wrap returns f metered: the call costs nodeCost, plus strCost per byte
// of its string arguments and elemCost per element of its list and map
// arguments; its hook runs first; a string, list or map it returns must
// stay within MaxOutput or MaxList, and costs its length.
func (m *meter) wrap(name string, f any, h hook) any {
	fv := reflect.ValueOf(f)
	ft := fv.Type()
	variadic := ft.IsVariadic()
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		cost := int64(nodeCost)
		for _, a := range args {
			cost += shallow(a)
		}
		if variadic {
			// The variadic arguments are each an argument of their own.
			rest := args[len(args)-1]
			for i := 0; i < rest.Len(); i++ {
				cost += shallow(rest.Index(i))
			}
		}
		m.charge(name, cost)
		if h != nil {
			h(m, name, args)
		}
		var out []reflect.Value
		if variadic {
			out = fv.CallSlice(args)
		} else {
			out = fv.Call(args)
		}
		for _, r := range out {
			m.result(name, r)
		}
		return out
	}).Interface()
}

func (m *meter) result(name string, r reflect.Value) {
	for r.Kind() == reflect.Interface {
		if r.IsNil() {
			return
		}
		r = r.Elem()
	}
	switch r.Kind() {
	case reflect.String:
		if r.Len() > MaxOutput {
			panic(exceeded(name+" result", "MaxOutput", MaxOutput))
		}
		m.charge(name, int64(r.Len()))
	case reflect.Slice, reflect.Map:
		if r.Len() > MaxList {
			panic(exceeded(name+" result", "MaxList", MaxList))
		}
		m.charge(name, int64(r.Len())*elemCost)
	}
}

// shallow is the cost of handling a value: strCost per byte of a string,
// elemCost per element of a list or map.
func shallow(v reflect.Value) int64 {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return int64(v.Len()) * strCost
	case reflect.Map, reflect.Slice, reflect.Array:
		return int64(v.Len()) * elemCost
	}
	return 0
}

// deep charges for handling whole trees: perNode for each value, perLevel
// more for each level it is nested at (pretty printing indents, deepCopy
// is quadratic in depth), perByte for each byte of text. The walk stops
// once the budget is spent.
func (m *meter) deep(name string, c treeCost, vs ...reflect.Value) {
	m.charge(name, m.size(c, vs...))
}

// size is what handling the trees costs, or a little more than the budget
// left (the walk stops there).
func (m *meter) size(c treeCost, vs ...reflect.Value) int64 {
	s := sizer{treeCost: c, max: MaxWork - m.work}
	for _, v := range vs {
		if v.IsValid() && v.CanInterface() {
			s.walk(v.Interface(), 1)
		}
	}
	return s.n
}

// treeCost is what handling a tree costs per node, level and byte.
type treeCost struct{ perNode, perLevel, perByte int64 }

var (
	printCost  = treeCost{perNode: 2048, perByte: 8}              // fmt: reflection, map keys sorted
	jsonCost   = treeCost{perNode: 512, perByte: 8}               // encoding/json, map keys sorted
	prettyCost = treeCost{perNode: 512, perLevel: 16, perByte: 8} // and two spaces per level
	copyCost   = treeCost{perNode: 512, perLevel: elemCost}       // copystructure: quadratic in depth
	equalCost  = treeCost{perNode: elemCost, perByte: 1}          // reflect.DeepEqual
)

type sizer struct {
	treeCost
	n, max int64
}

func (s *sizer) bytes(n int) { s.n += int64(n) * s.perByte }

func (s *sizer) walk(v any, depth int64) {
	if s.n > s.max {
		return
	}
	s.n += s.perNode + s.perLevel*depth
	switch t := v.(type) {
	case nil, bool, int, int64, float64:
	case string:
		s.bytes(len(t))
	case json.Number:
		s.bytes(len(t))
	case map[string]any:
		for k, e := range t {
			s.bytes(len(k))
			if s.walk(e, depth+1); s.n > s.max {
				return
			}
		}
	case []any:
		for _, e := range t {
			if s.walk(e, depth+1); s.n > s.max {
				return
			}
		}
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.String:
			s.bytes(rv.Len())
		case reflect.Pointer, reflect.Interface:
			if !rv.IsNil() && rv.Elem().CanInterface() {
				s.walk(rv.Elem().Interface(), depth)
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < rv.Len() && s.n <= s.max; i++ {
				s.walk(rv.Index(i).Interface(), depth+1)
			}
		case reflect.Map:
			it := rv.MapRange()
			for it.Next() && s.n <= s.max {
				s.walk(it.Key().Interface(), depth+1)
				s.walk(it.Value().Interface(), depth+1)
			}
		case reflect.Struct:
			s.n += 64 * s.perNode
		}
	}
}

func argInt(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int64(min(v.Uint(), math.MaxInt64))
	}
	return 0
}

func abs(n int64) uint64 {
	if n < 0 {
		return uint64(-(n + 1)) + 1
	}
	return uint64(n)
}

// stepCount is how many elements sprig's untilStep(start, stop, step)
// produces; ok is false when its loop counter would overflow (and the loop
// never end).
func stepCount(start, stop, step int64) (n uint64, ok bool) {
	if step == 0 || (stop < start) != (step < 0) || stop == start {
		return 0, true
	}
	span := new(big.Int).Sub(big.NewInt(stop), big.NewInt(start))
	st := big.NewInt(step)
	q, r := new(big.Int).QuoRem(span, st, new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	// The counter ends at start + n*step, which must still be an int.
	end := new(big.Int).Add(big.NewInt(start), new(big.Int).Mul(q, st))
	if !end.IsInt64() || !q.IsUint64() {
		return 0, false
	}
	return q.Uint64(), true
}

func (m *meter) steps64(name string, start, stop, step int64) {
	n, ok := stepCount(start, stop, step)
	if !ok {
		panic(exceeded(name+" (its counter overflows)", "MaxList", MaxList))
	}
	m.list(name, n)
}

// seqArgs mirrors sprig's seq: the untilStep arguments it uses.
func seqArgs(p []int64) (start, stop, step int64) {
	inc := int64(1)
	switch len(p) {
	case 1:
		if p[0] < 1 {
			inc = -1
		}
		return 1, p[0] + inc, inc
	case 2:
		if p[1] < p[0] {
			inc = -1
		}
		return p[0], p[1] + inc, inc
	case 3:
		if p[2] < p[0] {
			inc = -1
			if p[1] > 0 {
				return 0, 0, 0
			}
		}
		return p[0], p[2] + inc, p[1]
	}
	return 0, 0, 0
}

// matchCost is what running regex over s costs: RE2 matching is linear in
// the text times the size of the program.
func matchCost(regex, s string) int64 {
	return int64(len(s)) * int64(1+len(regex))
}

// hooks check the arguments of the functions whose result or work is not
// bounded by the size of their arguments. The map is only read.
var hooks = func() map[string]hook {
	h := map[string]hook{
		"until": func(m *meter, name string, a []reflect.Value) { m.list(name, abs(argInt(a[0]))) },
		"untilStep": func(m *meter, name string, a []reflect.Value) {
			m.steps64(name, argInt(a[0]), argInt(a[1]), argInt(a[2]))
		},
		"seq": func(m *meter, name string, a []reflect.Value) {
			p := make([]int64, a[0].Len())
			for i := range p {
				p[i] = argInt(a[0].Index(i))
			}
			start, stop, step := seqArgs(p)
			m.steps64(name, start, stop, step)
		},
		"repeat": func(m *meter, name string, a []reflect.Value) {
			count, s := argInt(a[0]), a[1].Len()
			if count > 0 && s > 0 && uint64(count) > MaxOutput/uint64(s) {
				panic(exceeded(name, "MaxOutput", MaxOutput))
			}
			if count > 0 {
				m.build(name, uint64(count)*uint64(s))
			}
		},
		"randAlphaNum": randHook, "randAlpha": randHook, "randAscii": randHook, "randNumeric": randHook, "randBytes": randHook,
		"indent": indentHook, "nindent": indentHook,
		"wrap": func(m *meter, name string, a []reflect.Value) { m.build(name, 2*uint64(a[1].Len())) },
		"wrapWith": func(m *meter, name string, a []reflect.Value) {
			l, sep, s := argInt(a[0]), uint64(a[1].Len()), uint64(a[2].Len())
			if sep == 0 {
				sep = 1
			}
			lines := s + 1
			if l > 1 {
				lines = s/uint64(l) + 1
			}
			if sep > MaxOutput || lines > MaxOutput {
				panic(exceeded(name, "MaxOutput", MaxOutput))
			}
			m.build(name, s+lines*sep)
		},
		"replace": func(m *meter, name string, a []reflect.Value) {
			old, repl, src := a[0].String(), a[1].String(), a[2].String()
			m.charge(name, int64(len(src)))
			if len(repl) > len(old) {
				n := uint64(strings.Count(src, old))
				grow := uint64(len(repl) - len(old))
				if n > 0 && grow > MaxOutput/n {
					panic(exceeded(name, "MaxOutput", MaxOutput))
				}
				m.build(name, uint64(len(src))+n*grow)
			}
		},
		"regexReplaceAll": replaceHook(false), "mustRegexReplaceAll": replaceHook(false),
		"regexReplaceAllLiteral": replaceHook(true), "mustRegexReplaceAllLiteral": replaceHook(true),
		"regexMatch": matchHook, "mustRegexMatch": matchHook, "regexFind": matchHook, "mustRegexFind": matchHook,
		"regexFindAll": matchAllHook, "mustRegexFindAll": matchAllHook, "regexSplit": matchAllHook, "mustRegexSplit": matchAllHook,
		"splitList": splitHook, "split": splitHook,
		"splitn": func(m *meter, name string, a []reflect.Value) {
			n, sep, s := argInt(a[1]), a[0].String(), a[2].String()
			parts := uint64(strings.Count(s, sep)) + 1
			if n >= 0 && uint64(n) < parts {
				parts = uint64(n)
			}
			m.list(name, parts)
		},
		"chunk": chunkHook, "mustChunk": chunkHook,
		"uniq": uniqHook, "mustUniq": uniqHook,
		"without": withoutHook, "mustWithout": withoutHook,
		"has": hasHook, "mustHas": hasHook,
		"sortAlpha": func(m *meter, name string, a []reflect.Value) {
			m.deep(name, printCost, a...)
			n := shallow(a[0])
			m.charge(name, sat(n, int64(bits.Len64(uint64(n)))))
		},
		"printf": func(m *meter, name string, a []reflect.Value) {
			if err := checkFormat(a[0].String(), a[1]); err != nil {
				panic(err)
			}
			m.deep(name, printCost, a...)
		},
		"join": func(m *meter, name string, a []reflect.Value) {
			sep := uint64(a[0].Len())
			n := uint64(shallow(a[1]))
			if n > 0 && sep > 0 && sep > MaxOutput/n {
				panic(exceeded(name, "MaxOutput", MaxOutput))
			}
			m.deep(name, printCost, a...)
		},
		"fromJson": textHook(64), "mustFromJson": textHook(64), // encoding/json into interface{}
		"dateInZone": zoneHook, "date_in_zone": zoneHook, "htmlDateInZone": zoneHook,
	}
	for costs, names := range map[treeCost][]string{
		printCost:  {"toString", "cat", "quote", "squote", "toStrings", "print", "println", "html", "js", "urlquery"},
		jsonCost:   {"toJson", "toRawJson", "mustToJson", "mustToRawJson"},
		prettyCost: {"toPrettyJson", "mustToPrettyJson"},
		copyCost:   {"deepCopy", "mustDeepCopy"},
		equalCost:  {"deepEqual"},
	} {
		for _, name := range names {
			h[name] = func(m *meter, name string, a []reflect.Value) { m.deep(name, costs, a...) }
		}
	}
	// Text functions that take tens of nanoseconds per byte (per-rune
	// case mapping, shuffling, parsing).
	for _, name := range []string{"snakecase", "camelcase", "kebabcase", "shuffle", "swapcase", "untitle", "title", "nospace",
		"initials", "urlParse", "semver", "semverCompare", "toDate", "mustToDate", "date", "htmlDate", "dateModify", "mustDateModify",
		"date_modify", "must_date_modify", "duration", "toDecimal", "decryptAES", "encryptAES", "buildCustomCert"} {
		h[name] = textHook(64)
	}
	return h
}()

// textHook charges perByte for each byte of the string arguments (on top
// of the strCost the wrapper charges).
func textHook(perByte int64) hook {
	return func(m *meter, name string, a []reflect.Value) {
		n := int64(0)
		for _, v := range a {
			if v.Kind() == reflect.String {
				n += int64(v.Len())
			}
		}
		m.charge(name, sat(n, perByte))
	}
}

// zoneHook charges for reading a time zone from the zoneinfo database.
func zoneHook(m *meter, name string, a []reflect.Value) { m.charge(name, zoneCost) }

// sat multiplies, saturating at MaxInt64.
func sat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// The list functions below compare elements with reflect.DeepEqual, which
// costs at most the size of the smaller value compared.

// uniqHook charges uniq, which compares every element with those kept
// before it: at most the list's size for each element.
func uniqHook(m *meter, name string, a []reflect.Value) {
	n := int64(length(a[0]))
	m.charge(name, sat(n, m.size(equalCost, a[0])))
}

// withoutHook charges without(list, omit...): each element against each
// value to omit.
func withoutHook(m *meter, name string, a []reflect.Value) {
	k := int64(a[1].Len())
	m.charge(name, sat(k, m.size(equalCost, a[0])))
}

// hasHook charges has(needle, list): the needle against each element.
func hasHook(m *meter, name string, a []reflect.Value) {
	n := int64(length(a[1]))
	m.charge(name, sat(n, m.size(equalCost, a[0])))
}

// length is the length of a list, or 0.
func length(v reflect.Value) int {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return v.Len()
	}
	return 0
}

func randHook(m *meter, name string, a []reflect.Value) {
	n := argInt(a[0])
	if n <= 0 {
		return
	}
	m.build(name, uint64(n))
	m.charge(name, sat(n, randCost))
}

func indentHook(m *meter, name string, a []reflect.Value) {
	spaces, s := argInt(a[0]), a[1].String()
	if spaces <= 0 {
		return
	}
	lines := uint64(strings.Count(s, "\n")) + 1
	if uint64(spaces) > MaxOutput || lines*uint64(spaces) > MaxOutput {
		panic(exceeded(name, "MaxOutput", MaxOutput))
	}
	m.build(name, uint64(len(s))+1+lines*uint64(spaces))
}

func matchHook(m *meter, name string, a []reflect.Value) {
	m.charge(name, matchCost(a[0].String(), a[1].String()))
}

// matchAllHook caps the count argument of regexFindAll and regexSplit so
// that the result list never grows past MaxList+1 (the result check then
// reports it).
func matchAllHook(m *meter, name string, a []reflect.Value) {
	matchHook(m, name, a)
	if n := argInt(a[2]); n < 0 || n > MaxList+1 {
		a[2] = reflect.ValueOf(MaxList + 1).Convert(a[2].Type())
	}
}

func splitHook(m *meter, name string, a []reflect.Value) {
	m.list(name, uint64(strings.Count(a[1].String(), a[0].String()))+1)
}

func chunkHook(m *meter, name string, a []reflect.Value) {
	if argInt(a[0]) < 1 {
		panic(fmt.Errorf("%s: chunk size %d is not positive", name, argInt(a[0])))
	}
}

// replaceHook bounds regexReplaceAll before it runs: each match adds at
// most the replacement (and, expanded, the match once per $ in it).
func replaceHook(literal bool) hook {
	return func(m *meter, name string, a []reflect.Value) {
		regex, s, repl := a[0].String(), a[1].String(), a[2].String()
		m.charge(name, 2*matchCost(regex, s))
		re, err := regexp.Compile(regex)
		if err != nil {
			return // the function reports it
		}
		refs := uint64(0)
		if !literal {
			refs = uint64(strings.Count(repl, "$"))
		}
		size, over := uint64(len(s)), false
		re.ReplaceAllStringFunc(s, func(match string) string {
			if !over {
				size += uint64(len(repl)) + refs*uint64(len(match))
				over = size > MaxOutput
			}
			return ""
		})
		if over {
			panic(exceeded(name, "MaxOutput", MaxOutput))
		}
		m.build(name, size)
	}
}

// checkFormat rejects printf widths and precisions above MaxFormatWidth,
// written in the format or passed with '*'.
func checkFormat(format string, args reflect.Value) error {
	argNum := 0
	width := func(i int) (int, error) { // at a digit or '*'
		if i < len(format) && format[i] == '*' {
			if argNum < args.Len() {
				if n := argInt(reflect.ValueOf(args.Index(argNum).Interface())); abs(n) > MaxFormatWidth {
					return i, exceeded("printf width", "MaxFormatWidth", MaxFormatWidth)
				}
			}
			argNum++
			return i + 1, nil
		}
		n := 0
		for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
			if n = n*10 + int(format[i]-'0'); n > MaxFormatWidth {
				return i, exceeded("printf width or precision", "MaxFormatWidth", MaxFormatWidth)
			}
		}
		return i, nil
	}
	index := func(i int) int { // at '[': an explicit argument index
		if i < len(format) && format[i] == '[' {
			j := strings.IndexByte(format[i:], ']')
			if j < 0 {
				return i
			}
			n := 0
			for _, c := range format[i+1 : i+j] {
				if c < '0' || c > '9' || n > MaxFormatWidth {
					return i + j + 1
				}
				n = n*10 + int(c-'0')
			}
			argNum = n - 1
			return i + j + 1
		}
		return i
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			continue
		}
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		var err error
		i = index(i)
		if i, err = width(i); err != nil {
			return err
		}
		if i < len(format) && format[i] == '.' {
			i = index(i + 1)
			if i, err = width(i); err != nil {
				return err
			}
		}
		i = index(i)
		argNum++ // the verb's operand
	}
	return nil
}
