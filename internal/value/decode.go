package value

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth is the deepest nesting of arrays and objects accepted, the limit
// encoding/json applies: hostile input cannot exhaust the stack.
const maxDepth = 10000

// SyntaxError reports JSON text that is not valid.
type SyntaxError struct {
	// Msg says what is wrong, in encoding/json's words, e.g. "invalid
	// character 'x' after object key" or "unexpected end of JSON input".
	Msg string
	// Offset is the 0-based byte offset of the offending byte in the input,
	// or the input's length when it ends too early.
	Offset int
}

func (e *SyntaxError) Error() string {
	return e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// Decode parses JSON text into a tree. It accepts exactly what encoding/json
// accepts (one JSON value, optionally surrounded by whitespace) and builds
// the tree encoding/json builds with UseNumber: numbers are json.Number
// holding their literal text, strings are unescaped as encoding/json does
// (invalid UTF-8 and unpaired surrogates become U+FFFD), the last of
// duplicate object keys wins, arrays are never nil. Errors are *SyntaxError.
func Decode(data []byte) (any, error) {
	v, _, err := decodeOmitting(nil, data, nil)
	return v, err
}

// DecodeOmitting is Decode, except that the member at path (keys of nested
// objects from the root, as "metadata", "managedFields") is checked but not
// decoded: the tree lacks it, and omitted is its text, a slice of data (nil
// when there is none; of the one the tree would hold when keys repeat).
// What nothing reads need not cost its decoding.
func DecodeOmitting(data []byte, path ...string) (v any, omitted []byte, err error) {
	return decodeOmitting(nil, data, path)
}

// decodeOmitting is DecodeOmitting, its objects lent by st when not nil
// (Decode's too, with no path).
func decodeOmitting(st *Storage, data []byte, path []string) (v any, omitted []byte, err error) {
	d := decoder{data: data, st: st}
	if len(path) > 0 {
		d.omit, d.on = path, 1
	}
	i := skipSpace(data, 0)
	v, i = d.value(i)
	if i < 0 {
		return nil, nil, d.err
	}
	if i = skipSpace(data, i); i < len(data) {
		return nil, nil, d.invalid(i, "after top-level value")
	}
	return v, d.omitted, nil
}

// decoder is the state of one parse. Methods that parse take the offset of
// the first byte of what they parse and return the offset just past it, or
// -1 after recording an error in err.
type decoder struct {
	data  []byte
	depth int
	err   *SyntaxError
	st    *Storage // lends the objects, when not nil
	// omit is DecodeOmitting's path, on 1 + how many of its keys lead to
	// the value being parsed (0: off the path), omitted the text left out.
	omit    []string
	on      int
	omitted []byte
}

// fail records an error and returns -1.
func (d *decoder) fail(off int, msg string) int {
	if d.err == nil {
		d.err = &SyntaxError{Msg: msg, Offset: off}
	}
	return -1
}

// invalid is the error for an unexpected byte at data[off], or the end of
// the input when off is past it.
func (d *decoder) invalid(off int, context string) *SyntaxError {
	if off >= len(d.data) {
		d.fail(len(d.data), "unexpected end of JSON input")
	} else {
		d.fail(off, "invalid character "+quoteChar(d.data[off])+" "+context)
	}
	return d.err
}

// bad records invalid(off, context) and returns -1.
func (d *decoder) bad(off int, context string) int {
	d.invalid(off, context)
	return -1
}

// quoteChar formats c as encoding/json does in its error messages.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// skipSpace returns the offset of the first non-whitespace byte at or after i.
func skipSpace(data []byte, i int) int {
	for ; i < len(data); i++ {
		if c := data[i]; c > ' ' || c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return i
		}
	}
	return i
}

// value parses the value starting at data[i].
func (d *decoder) value(i int) (any, int) {
	data := d.data
	if i >= len(data) {
		return nil, d.bad(i, "")
	}
	c := data[i]
	if c == '"' { // the most common case first
		j := plainRun(data, i+1)
		if j >= len(data) || data[j] != '"' {
			j = d.plainString(i)
		}
		if j >= 0 {
			if v, ok := internString(data[i+1 : j]); ok {
				return v, j + 1
			}
			return string(data[i+1 : j]), j + 1
		}
		s, j := d.strSlow(i)
		if j < 0 {
			return nil, j
		}
		return s, j
	}
	switch c {
	case '{':
		return d.object(i)
	case '[':
		return d.array(i)
	case 't':
		if j := d.literal(i, "true"); j >= 0 {
			return true, j
		}
		return nil, -1
	case 'f':
		if j := d.literal(i, "false"); j >= 0 {
			return false, j
		}
		return nil, -1
	case 'n':
		return nil, d.literal(i, "null")
	}
	if c != '-' && (c < '0' || c > '9') {
		return nil, d.bad(i, "looking for beginning of value")
	}
	j := d.number(i)
	if j < 0 {
		return nil, j
	}
	if v, ok := internNumber(data[i:j]); ok {
		return v, j
	}
	return json.Number(data[i:j]), j
}

// literal checks that data[i:] starts with lit (true, false or null).
func (d *decoder) literal(i int, lit string) int {
	data := d.data
	if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	for k := 1; k < len(lit); k++ {
		if i+k >= len(data) || data[i+k] != lit[k] {
			return d.bad(i+k, "in literal "+lit+" (expecting "+quoteChar(lit[k])+")")
		}
	}
	return -1 // not reached
}

// number checks the number literal starting at data[i] (a '-' or a digit)
// and returns the offset just past it.
func (d *decoder) number(i int) int {
	data := d.data
	if data[i] == '-' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return d.bad(i, "in numeric literal")
		}
	}
	if data[i] == '0' {
		i++
	} else {
		i++
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return d.bad(i, "after decimal point in numeric literal")
		}
		i++
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return d.bad(i, "in exponent of numeric literal")
		}
		i++
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	return i
}

// str parses the string literal whose opening quote is data[i].
func (d *decoder) str(i int) (string, int) {
	j := plainRun(d.data, i+1)
	if j >= len(d.data) || d.data[j] != '"' {
		j = d.plainString(i)
	}
	if j >= 0 {
		return string(d.data[i+1 : j]), j + 1
	}
	return d.strSlow(i)
}

// key parses the object key whose opening quote is data[i].
func (d *decoder) key(i int) (string, int) {
	j := plainRun(d.data, i+1)
	if j >= len(d.data) || d.data[j] != '"' {
		j = d.plainString(i)
	}
	if j >= 0 {
		if s, ok := internKey(d.data[i+1 : j]); ok {
			return s, j + 1
		}
		return string(d.data[i+1 : j]), j + 1
	}
	return d.strSlow(i)
}

// plainString returns the offset of the closing quote of the string
// literal whose opening quote is data[i] when its text needs no unescaping:
// no escape, no control character, only valid UTF-8. Else it returns -1.
// Its callers first try plainRun, enough for text all ASCII.
func (d *decoder) plainString(i int) int {
	data := d.data
	j := i + 1
	for {
		if j = plainRun(data, j); j >= len(data) {
			return -1
		}
		c := data[j]
		if c == '"' {
			return j
		}
		if c < utf8.RuneSelf {
			return -1 // a backslash or a control character
		}
		r, size := utf8.DecodeRune(data[j:])
		if r == utf8.RuneError && size == 1 {
			return -1
		}
		j += size
	}
}

// Constants for examining 8 bytes at a time.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainRun returns the offset of the first byte at or after data[j] that
// is a quote, a backslash, a control character or not ASCII, or len(data).
func plainRun(data []byte, j int) int {
	for ; j+8 <= len(data) && j >= 0; j += 8 { // j >= 0 spares a bounds check
		if m := plainMask(binary.LittleEndian.Uint64(data[j : j+8])); m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for ; j < len(data); j++ {
		if c := data[j]; c < ' ' || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return j
		}
	}
	return j
}

// plainMask is plainRun's test of the eight bytes of x: a byte's high bit
// is set in the mask when the byte is one of those sought, or when a lower
// byte is (a borrow): the lowest one set is exact. Bytes from 0x80 up set
// it in both x^'"'-1 and x^'\\'-1 but for 0xA2 and 0xDC respectively.
func plainMask(x uint64) uint64 {
	return ((x - ones*' ') | (x ^ ones*'"' - ones) | (x ^ ones*'\\' - ones)) & highs
}

// strSlow parses the string literal whose opening quote is data[i] and
// whose text needs unescaping, as encoding/json's unquote does it. The text
// is made in a buffer of the literal's length, which it is at most (but
// for invalid UTF-8, each byte of which becomes three), and the string is
// that buffer: one allocation of the string's size.
func (d *decoder) strSlow(i int) (string, int) {
	data := d.data
	buf := make([]byte, 0, literalLen(data, i)+16)
	for j := i + 1; ; {
		var k int
		if buf, k = copyWords(buf, data, j, false); k >= len(data) {
			return "", d.bad(k, "")
		}
		switch c := data[k]; {
		case c == '"':
			if len(buf) == 0 {
				return "", k + 1
			}
			return unsafe.String(unsafe.SliceData(buf), len(buf)), k + 1 // buf is the string's alone
		case c == '\\':
			if k+1 >= len(data) {
				return "", d.bad(k+1, "")
			}
			j = k + 2
			switch e := data[k+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				if !d.checkHex4(k + 2) {
					return "", -1
				}
				r := hex4(data, k)
				j = k + 6
				if utf16.IsSurrogate(r) {
					// A pair only when the next escape completes it; else
					// U+FFFD, and the next escape is decoded on its own.
					if dec := utf16.DecodeRune(r, hex4(data, j)); dec != utf8.RuneError {
						r = dec
						j += 6
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", d.bad(k+1, "in string escape code")
			}
		case c < ' ':
			return "", d.bad(k, "in string literal")
		default:
			r, size := utf8.DecodeRune(data[k:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\uFFFD"...)
			} else {
				buf = append(buf, data[k:k+size]...)
			}
			j = k + size
		}
	}
}

// literalLen returns the length of the text of the string literal whose
// opening quote is data[i] (its bytes between the quotes), or what follows
// data[i] when it does not end.
func literalLen(data []byte, i int) int {
	if j := endString(data, i+1); j >= 0 {
		return j - i - 2 // endString passed the closing quote
	}
	return len(data) - i - 1
}

// checkHex4 checks the four hex digits of a \u escape at data[i:i+4].
func (d *decoder) checkHex4(i int) bool {
	for k := i; k < i+4; k++ {
		if k >= len(d.data) {
			d.bad(k, "")
			return false
		}
		if unhex(d.data[k]) < 0 {
			d.bad(k, `in \u hexadecimal character escape`)
			return false
		}
	}
	return true
}

// hex4 decodes a \uXXXX escape at data[i:], or returns -1.
func hex4(data []byte, i int) rune {
	if len(data)-i < 6 || data[i] != '\\' || data[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range data[i+2 : i+6] {
		v := unhex(c)
		if v < 0 {
			return -1
		}
		r = r<<4 | v
	}
	return r
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// object parses the object whose '{' is data[i].
func (d *decoder) object(i int) (any, int) {
	if d.depth++; d.depth > maxDepth {
		return nil, d.fail(i, "exceeded max depth")
	}
	data := d.data
	i = skipSpace(data, i+1)
	var m map[string]any
	if d.st != nil {
		m = d.st.newMap()
	} else {
		m = make(map[string]any)
	}
	if i < len(data) && data[i] == '}' {
		d.depth--
		return m, i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, d.bad(i, "looking for beginning of object key string")
		}
		key, j := d.key(i)
		if j < 0 {
			return nil, j
		}
		if j < len(data) && data[j] == ':' {
			j++
		} else if j = skipSpace(data, j); j < len(data) && data[j] == ':' {
			j++
		} else {
			return nil, d.bad(j, "after object key")
		}
		on, omitted := d.on, false
		if on > 0 {
			if j, omitted = d.omitMember(key, skipSpace(data, j)); j < 0 {
				return nil, j
			}
		}
		if !omitted {
			var v any
			if v, j = d.value(skipSpace(data, j)); j < 0 {
				return nil, j
			}
			m[key] = v
		}
		d.on = on
		if j < len(data) && data[j] == ',' {
			i = skipSpace(data, j+1)
			continue
		}
		if j = skipSpace(data, j); j < len(data) {
			if data[j] == ',' {
				i = skipSpace(data, j+1)
				continue
			}
			if data[j] == '}' {
				i = j + 1
				break
			}
		}
		return nil, d.bad(j, "after object key:value pair")
	}
	d.depth--
	return m, i
}

// array parses the array whose '[' is data[i].
func (d *decoder) array(i int) (any, int) {
	if d.depth++; d.depth > maxDepth {
		return nil, d.fail(i, "exceeded max depth")
	}
	data := d.data
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		d.depth--
		return []any{}, i + 1
	}
	// Most arrays are short: their elements are gathered on the stack, so
	// that the slice is made once with its final length.
	var buf [8]any
	elems := buf[:0]
	on := d.on
	d.on = 0 // no path of DecodeOmitting goes through an array
	for {
		v, j := d.value(i)
		if j < 0 {
			return nil, j
		}
		elems = append(elems, v)
		if j < len(data) && data[j] == ',' {
			i = skipSpace(data, j+1)
			continue
		}
		if j = skipSpace(data, j); j < len(data) {
			if data[j] == ',' {
				i = skipSpace(data, j+1)
				continue
			}
			if data[j] == ']' {
				i = j + 1
				break
			}
		}
		return nil, d.bad(j, "after array element")
	}
	d.depth--
	d.on = on
	s := make([]any, len(elems))
	copy(s, elems)
	return s, i
}

// omitMember is DecodeOmitting's step at the member key of an object on its
// path, whose value starts at data[j]: off the path (d.on 0), one key further
// along it, or, at its last key, the value checked and set aside (omitted,
// and the offset past it returned). A member of one of the path's keys
// replaces an earlier one, and what was set aside under that one with it.
func (d *decoder) omitMember(key string, j int) (int, bool) {
	k := d.on - 1
	switch {
	case key != d.omit[k]:
		d.on = 0
	case k+1 < len(d.omit):
		d.omitted = nil
		d.on++
	default:
		end := d.skip(j)
		if end < 0 {
			return end, false
		}
		d.omitted = d.data[j:end]
		return end, true
	}
	return j, false
}
