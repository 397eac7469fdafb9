package patch

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/modwright/modwright/internal/value"
)

// mustDecode decodes JSON text or fails the test.
func mustDecode(t testing.TB, s string) any {
	t.Helper()
	v, err := value.Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

// mustPointer parses a pointer or fails the test.
func mustPointer(t testing.TB, s string) Pointer {
	t.Helper()
	p, err := ParsePointer(s)
	if err != nil {
		t.Fatalf("ParsePointer(%q): %v", s, err)
	}
	return p
}

func encode(v any) string {
	b, err := value.Encode(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

var sentinels = []error{ErrInvalidPointer, ErrPathNotFound, ErrInvalidIndex, ErrNotContainer, ErrUnsupportedOp}

// sentinel returns the sentinel error err wraps, or nil.
func sentinel(err error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

// opsFromJSON converts a decoded JSON array of operations leniently: any op
// name is kept (so that unsupported ones reach Apply), invalid pointers and
// non-object entries are skipped.
func opsFromJSON(v any) []Operation {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	var ops []Operation
	for _, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		opName, _ := m["op"].(string)
		ps, _ := m["path"].(string)
		p, err := ParsePointer(ps)
		if err != nil {
			continue
		}
		ops = append(ops, Operation{Op: OpType(opName), Path: p, Value: m["value"]})
	}
	return ops
}

// ---- random trees ----

var randKeys = []string{"a", "b", "c", "d", "e", "metadata", "x~y", "p/q", "", "0", "-", "-1"}

func randScalar(r *rand.Rand) any {
	switch r.IntN(9) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return json.Number(strconv.Itoa(r.IntN(5)))
	case 3:
		return json.Number([]string{"1.0", "1e0", "-0", "2.50", "-3"}[r.IntN(5)])
	case 4, 5:
		return []string{"", "x", "y", "blue", "a/b", "~"}[r.IntN(6)]
	default:
		return strconv.Itoa(r.IntN(4))
	}
}

// randValue returns a random tree of at most about size nodes.
func randValue(r *rand.Rand, depth int) any {
	if depth <= 0 {
		return randScalar(r)
	}
	switch r.IntN(5) {
	case 0, 1:
		m := map[string]any{}
		for n := r.IntN(5); n > 0; n-- {
			m[randKeys[r.IntN(len(randKeys))]] = randValue(r, depth-1)
		}
		return m
	case 2:
		s := make([]any, r.IntN(6))
		for i := range s {
			if r.IntN(3) == 0 {
				s[i] = randScalar(r)
			} else {
				s[i] = randValue(r, depth-1)
			}
		}
		return s
	default:
		return randScalar(r)
	}
}

// randDoc returns a random tree whose root is an object (mostly) or an
// array.
func randDoc(r *rand.Rand, depth int) any {
	for {
		v := randValue(r, depth)
		switch v.(type) {
		case map[string]any, []any:
			return v
		}
	}
}

// randObjectText is a random object (randDoc's, false when that is an
// array) and its text as AppendJSON writes it.
func randObjectText(t *testing.T, r *rand.Rand) (map[string]any, []byte, bool) {
	t.Helper()
	doc, ok := randDoc(r, 4).(map[string]any)
	if !ok {
		return nil, nil, false
	}
	text, err := value.AppendJSON(nil, doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, text, true
}

// mutate returns a randomly modified copy of v; v is not changed.
func mutate(r *rand.Rand, v any, depth int) any {
	if r.IntN(12) == 0 {
		return randValue(r, depth)
	}
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			switch r.IntN(8) {
			case 0: // drop
			case 1, 2:
				m[k] = mutate(r, e, depth-1)
			default:
				m[k] = value.DeepCopy(e)
			}
		}
		for n := r.IntN(3); n > 0; n-- {
			if r.IntN(2) == 0 {
				m[randKeys[r.IntN(len(randKeys))]] = randValue(r, depth-1)
			}
		}
		return m
	case []any:
		var s []any
		for _, e := range t {
			switch r.IntN(10) {
			case 0: // drop
			case 1:
				s = append(s, randValue(r, depth-1), value.DeepCopy(e))
			case 2, 3:
				s = append(s, mutate(r, e, depth-1))
			case 4:
				s = append(s, value.DeepCopy(e), value.DeepCopy(e))
			default:
				s = append(s, value.DeepCopy(e))
			}
		}
		if r.IntN(3) == 0 {
			s = append(s, randValue(r, depth-1))
		}
		if s == nil {
			s = []any{}
		}
		return s
	}
	if r.IntN(2) == 0 {
		return randScalar(r)
	}
	return v
}

// paths lists the pointers of every node of v (the root included).
func paths(v any, prefix Pointer, out []Pointer) []Pointer {
	out = append(out, prefix)
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			out = paths(t[k], append(prefix[:len(prefix):len(prefix)], k), out)
		}
	case []any:
		for i, e := range t {
			out = paths(e, append(prefix[:len(prefix):len(prefix)], strconv.Itoa(i)), out)
		}
	}
	return out
}

var oddTokens = []string{"-", "-1", "-2", "0", "1", "3", "7", "01", "+1", "-0", "1.0", "x", "new", "", "~"}

// randOp returns a random operation on doc: usually on or just below an
// existing path, sometimes with odd tokens.
func randOp(r *rand.Rand, doc any) Operation {
	ps := paths(doc, nil, nil)
	p := append(Pointer(nil), ps[r.IntN(len(ps))]...)
	switch r.IntN(6) {
	case 0:
		p = append(p, oddTokens[r.IntN(len(oddTokens))])
	case 1:
		if len(p) > 0 {
			p[len(p)-1] = oddTokens[r.IntN(len(oddTokens))]
		}
	case 2:
		p = append(p, randKeys[r.IntN(len(randKeys))], oddTokens[r.IntN(len(oddTokens))])
	}
	op := Operation{Op: []OpType{Add, Add, Replace, Remove, Remove}[r.IntN(5)], Path: p}
	if op.Op != Remove {
		op.Value = randValue(r, 2)
	}
	if r.IntN(40) == 0 {
		op.Op = "move"
	}
	return op
}

// ---- reference implementation of the KubeMod semantics ----
//
// refApply is a deliberately naive, independent restatement of Doc.Apply's
// rules: it deep copies the document, edits the copy recursively and returns
// it (or the error class).

var canonicalInt = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

func refIndex(tok string) (int, bool) {
	if !canonicalInt.MatchString(tok) {
		return 0, false
	}
	n, err := strconv.Atoi(tok)
	if err != nil { // out of int range: beyond any array
		if tok[0] == '-' {
			return math.MinInt32, true
		}
		return math.MaxInt32, true
	}
	return n, true
}

func refApply(doc any, op Operation) (any, error) {
	doc = value.DeepCopy(doc)
	v := value.DeepCopy(op.Value)
	switch op.Op {
	case Add:
		return refAdd(doc, op.Path, v)
	case Replace:
		if len(op.Path) == 0 {
			return v, nil
		}
		return refReplace(doc, op.Path, v)
	case Remove:
		if len(op.Path) == 0 {
			return nil, ErrInvalidPointer
		}
		out, err := refRemove(doc, op.Path)
		if err == errIgnored {
			return value.DeepCopy(doc), nil
		}
		return out, err
	}
	return nil, ErrUnsupportedOp
}

var errIgnored = errors.New("ignored")

func refCreate(path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	sub, err := refCreate(path[1:], v)
	if err != nil {
		return nil, err
	}
	if path[0] == "-" || path[0] == "-1" || path[0] == "0" {
		return []any{sub}, nil
	}
	if _, ok := refIndex(path[0]); ok {
		return nil, ErrInvalidIndex // an integer other than 0 and -1
	}
	return map[string]any{path[0]: sub}, nil
}

func refAdd(node any, path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	tok, rest := path[0], path[1:]
	switch c := node.(type) {
	case nil:
		return refCreate(path, v)
	case map[string]any:
		if len(rest) == 0 {
			c[tok] = v
			return c, nil
		}
		child, ok := c[tok]
		var sub any
		var err error
		if ok {
			sub, err = refAdd(child, rest, v)
		} else {
			sub, err = refCreate(rest, v)
		}
		if err != nil {
			return nil, err
		}
		c[tok] = sub
		return c, nil
	case []any:
		n, ok := refIndex(tok)
		if !ok && tok != "-" {
			return nil, ErrInvalidIndex
		}
		if len(rest) == 0 {
			var pos int
			switch {
			case tok == "-" || n == -1:
				pos = len(c)
			case n < -1:
				pos = len(c) + 1 + n
			default:
				pos = n
			}
			if pos < 0 || pos > len(c) {
				return nil, ErrInvalidIndex
			}
			out := append([]any{}, c[:pos]...)
			out = append(out, v)
			return append(out, c[pos:]...), nil
		}
		if tok == "-" || n == len(c) {
			sub, err := refCreate(rest, v)
			if err != nil {
				return nil, err
			}
			return append(append([]any{}, c...), sub), nil
		}
		if n < 0 {
			n += len(c)
		}
		if n < 0 || n >= len(c) {
			return nil, ErrInvalidIndex
		}
		sub, err := refAdd(c[n], rest, v)
		if err != nil {
			return nil, err
		}
		c[n] = sub
		return c, nil
	}
	return nil, ErrNotContainer
}

func refReplace(node any, path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	tok, rest := path[0], path[1:]
	switch c := node.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return nil, ErrPathNotFound
		}
		sub, err := refReplace(child, rest, v)
		if err != nil {
			return nil, err
		}
		c[tok] = sub
		return c, nil
	case []any:
		if tok == "-" {
			return nil, ErrPathNotFound
		}
		n, ok := refIndex(tok)
		if !ok {
			return nil, ErrInvalidIndex
		}
		if n < 0 {
			n += len(c)
		}
		if n < 0 || n >= len(c) {
			return nil, ErrPathNotFound
		}
		sub, err := refReplace(c[n], rest, v)
		if err != nil {
			return nil, err
		}
		c[n] = sub
		return c, nil
	}
	return nil, ErrNotContainer
}

func refRemove(node any, path []string) (any, error) {
	tok, rest := path[0], path[1:]
	switch c := node.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return nil, errIgnored
		}
		if len(rest) == 0 {
			delete(c, tok)
			return c, nil
		}
		sub, err := refRemove(child, rest)
		if err != nil {
			return nil, err
		}
		c[tok] = sub
		return c, nil
	case []any:
		if tok == "-" {
			return nil, errIgnored
		}
		n, ok := refIndex(tok)
		if !ok {
			return nil, ErrInvalidIndex
		}
		if n < 0 {
			n += len(c)
		}
		if n < 0 || n >= len(c) {
			return nil, errIgnored
		}
		if len(rest) == 0 {
			return append(append([]any{}, c[:n]...), c[n+1:]...), nil
		}
		sub, err := refRemove(c[n], rest)
		if err != nil {
			return nil, err
		}
		c[n] = sub
		return c, nil
	}
	return nil, errIgnored
}

// renderSorted is ops as JSON, one string each, sorted: a patch whose
// operations share no path, compared as a set.
func renderSorted(ops []Operation) []string {
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		b, _ := json.Marshal(op)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// fuzzInput decodes a fuzz target's document and operations (at most 50),
// false when either is not JSON.
func fuzzInput(docText, opsText string) (any, []Operation, bool) {
	doc, err := value.Decode([]byte(docText))
	if err != nil {
		return nil, nil, false
	}
	opsTree, err := value.Decode([]byte(opsText))
	if err != nil {
		return nil, nil, false
	}
	ops := opsFromJSON(opsTree)
	if len(ops) > 50 {
		ops = ops[:50]
	}
	return doc, ops, true
}
