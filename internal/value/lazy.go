package value

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Raw is an object or array of a tree DecodeLazy made, not decoded yet: its
// JSON text, canonical (exactly what AppendJSON writes for the value it
// holds), which AppendJSON copies as it is and Expand decodes one level of.
// Such a tree is for editing a few paths and writing the text back (see
// patch.Doc.Expand); nothing else reads one.
type Raw struct{ text string }

// DecodeLazy decodes the JSON object s one level, as Decode would: its
// members that are objects or arrays stay Raw, to be decoded when needed
// (Expand); strings share s's memory. It does so only when s is canonical,
// that is AppendJSON writes the tree back as s exactly but for whitespace
// around the object (kubectl ends its last-applied configuration with a
// line break): no whitespace within, object keys in order and unique (and
// with no escape), strings escaped as AppendJSON escapes them, nesting
// within Decode's limit. Otherwise, and
// when s is not valid JSON or not an object, it returns false: the caller
// decodes s with Decode (which says what is wrong with it).
//
// The check is one pass over s without allocating; decoding the paths
// later edited and copying the rest back costs a fraction of decoding and
// encoding the whole tree.
func DecodeLazy(s string) (map[string]any, bool) {
	s = strings.Trim(s, " \t\r\n")
	if len(s) == 0 || s[0] != '{' {
		return nil, false
	}
	c := canon{decoder: decoder{data: unsafe.Slice(unsafe.StringData(s), len(s))}}
	if end := c.value(0); end != len(s) {
		return nil, false
	}
	m, _ := Expand(Raw{s}).(map[string]any)
	return m, true
}

// Canonical reports whether s is the canonical JSON text of an object:
// DecodeLazy's condition (but for whitespace around it, which s must not
// have). Such text can be edited as text (SkipCanonical, PlainKey) and stay
// canonical.
func Canonical(s string) bool {
	if len(s) == 0 || s[0] != '{' {
		return false
	}
	c := canon{decoder: decoder{data: unsafe.Slice(unsafe.StringData(s), len(s))}}
	return c.value(0) == len(s)
}

// SkipCanonical returns the offset just past the value that starts at
// text[i], canonical JSON text (Canonical): valid JSON, read 8 bytes at a
// time (skipValidated).
func SkipCanonical(text []byte, i int) int { return skipValidated(text, i) }

// PlainKey reports whether canonical text may hold k as an object's key:
// AppendJSON writes it between quotes as it is (ASCII, no escape), and keys
// are ordered by their bytes.
func PlainKey(k string) bool {
	return plainRun(unsafe.Slice(unsafe.StringData(k), len(k)), 0) == len(k)
}

// canon checks that JSON text is canonical (DecodeLazy). Its methods take
// the offset of what they check and return the offset just past it, or -1.
type canon struct {
	decoder
}

func (c *canon) value(i int) int {
	data := c.data
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return c.str(i)
	case '{':
		return c.object(i)
	case '[':
		return c.array(i)
	case 't':
		return c.lit(i, "true")
	case 'f':
		return c.lit(i, "false")
	case 'n':
		return c.lit(i, "null")
	}
	if b := data[i]; b != '-' && (b < '0' || b > '9') {
		return -1
	}
	return c.number(i) // kept as its text: canonical as it is
}

func (c *canon) lit(i int, lit string) int {
	if len(c.data)-i >= len(lit) && string(c.data[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// str checks the string literal at data[i]: canonical when appendString
// writes its value back as it is.
func (c *canon) str(i int) int {
	data := c.data
	for j := i + 1; ; {
		if j = plainRun(data, j); j >= len(data) {
			return -1
		}
		switch b := data[j]; {
		case b == '"':
			return j + 1
		case b == '\\' || b < ' ':
			// An escape: canonical when it is the one appendString
			// writes (rare enough to decode and encode again).
			s, end := c.strSlow(i)
			if end < 0 {
				return -1
			}
			if string(appendString(nil, s)) != string(data[i:end]) {
				return -1
			}
			return end
		default:
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return -1 // appendString writes these otherwise
			}
			j += size
		}
	}
}

func (c *canon) object(i int) int {
	if c.depth++; c.depth > maxDepth {
		return -1
	}
	data := c.data
	i++
	if i < len(data) && data[i] == '}' {
		c.depth--
		return i + 1
	}
	prev := -1 // the previous key's text, data[prev:prevEnd]
	prevEnd := 0
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		end := plainRun(data, i+1)
		if end >= len(data) || data[end] != '"' {
			return -1 // a key with an escape or beyond ASCII: not ours to order
		}
		if prev >= 0 && string(data[prev:prevEnd]) >= string(data[i+1:end]) {
			return -1 // out of order, or twice
		}
		prev, prevEnd = i+1, end
		if i = end + 1; i >= len(data) || data[i] != ':' {
			return -1
		}
		if i = c.value(i + 1); i < 0 || i >= len(data) {
			return -1
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			c.depth--
			return i + 1
		default:
			return -1
		}
	}
}

func (c *canon) array(i int) int {
	if c.depth++; c.depth > maxDepth {
		return -1
	}
	data := c.data
	i++
	if i < len(data) && data[i] == ']' {
		c.depth--
		return i + 1
	}
	for {
		if i = c.value(i); i < 0 || i >= len(data) {
			return -1
		}
		switch data[i] {
		case ',':
			i++
		case ']':
			c.depth--
			return i + 1
		default:
			return -1
		}
	}
}

// Expand returns the value r holds decoded one level: an object or an
// array whose objects and arrays are Raw (a zero Raw holds null).
func Expand(r Raw) any {
	s := r.text
	if s == "" {
		return nil
	}
	data := unsafe.Slice(unsafe.StringData(s), len(s))
	if s[0] == '[' {
		var buf [8]any
		elems := buf[:0]
		for i := 1; s[i] != ']'; {
			var v any
			v, i = lazyMember(s, data, i)
			elems = append(elems, v)
			if s[i] == ',' {
				i++
			}
		}
		return append(make([]any, 0, len(elems)), elems...)
	}
	m := make(map[string]any)
	for i := 1; s[i] != '}'; {
		end := i + 1
		for s[end] != '"' { // keys have no escape (DecodeLazy)
			end++
		}
		key := s[i+1 : end]
		var v any
		v, i = lazyMember(s, data, end+2)
		m[key] = v
		if s[i] == ',' {
			i++
		}
	}
	return m
}

// ExpandAll returns the value r holds decoded in full (no Raw left).
func ExpandAll(r Raw) any {
	if r.text == "" {
		return nil
	}
	v, _ := Decode(unsafe.Slice(unsafe.StringData(r.text), len(r.text))) // valid: DecodeLazy checked it
	return v
}

// lazyMember decodes the canonical value at s[i] (data is s as bytes): a
// string, a number, true, false, null or a Raw; and returns the offset past
// it.
func lazyMember(s string, data []byte, i int) (any, int) {
	switch s[i] {
	case '"':
		if j := plainRun(data, i+1); s[j] == '"' {
			return s[i+1 : j], j + 1
		}
		d := decoder{data: data}
		return d.strSlow(i)
	case '{', '[':
		end := skip(s, data, i)
		return Raw{s[i:end]}, end
	case 't':
		return true, i + 4
	case 'f':
		return false, i + 5
	case 'n':
		return nil, i + 4
	}
	j := i + 1
	for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ']' {
		j++
	}
	return json.Number(s[i:j]), j
}

// skip returns the offset past the valid object or array at s[i].
func skip(s string, data []byte, i int) int {
	depth := 0
	for {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			for i = plainRun(data, i+1); s[i] != '"'; i = plainRun(data, i+1) {
				if s[i] == '\\' {
					i++ // the escaped byte is no quote to stop at
				}
			}
		}
		i++
	}
}
