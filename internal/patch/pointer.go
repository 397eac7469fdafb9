package patch

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
	"unsafe"

	"github.com/modwright/modwright/internal/value"
)

// Pointer is a parsed RFC 6901 JSON pointer: its unescaped reference tokens.
// The empty pointer (no tokens) is the whole document.
type Pointer []string

// ParsePointer parses the string form of a JSON pointer: either "" (the whole
// document) or a sequence of "/"-prefixed reference tokens in which "~0"
// stands for "~" and "~1" for "/". Any other use of "~" is an error wrapping
// ErrInvalidPointer.
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return nil, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf("%w: %q does not start with \"/\"", ErrInvalidPointer, s)
	}
	p := make(Pointer, 0, strings.Count(s, "/"))
	for start := 1; ; {
		end := len(s)
		if k := strings.IndexByte(s[start:], '/'); k >= 0 {
			end = start + k
		}
		tok, err := unescapeToken(s, start, end)
		if err != nil {
			return nil, err
		}
		p = append(p, tok)
		if end == len(s) {
			return p, nil
		}
		start = end + 1
	}
}

// unescapeToken unescapes s[start:end], reporting errors with their offset in
// s.
func unescapeToken(s string, start, end int) (string, error) {
	tok := s[start:end]
	k := strings.IndexByte(tok, '~')
	if k < 0 {
		return tok, nil
	}
	var b strings.Builder
	b.Grow(len(tok))
	b.WriteString(tok[:k])
	for i := k; i < len(tok); i++ {
		c := tok[i]
		if c != '~' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(tok) {
			return "", fmt.Errorf("%w: %q: trailing \"~\" at offset %d", ErrInvalidPointer, s, start+i)
		}
		switch tok[i+1] {
		case '0':
			b.WriteByte('~')
		case '1':
			b.WriteByte('/')
		default:
			return "", fmt.Errorf("%w: %q: invalid escape %q at offset %d", ErrInvalidPointer, s, tok[i:i+2], start+i)
		}
		i++
	}
	return b.String(), nil
}

// EscapeToken escapes one reference token: "~" becomes "~0" and "/" becomes
// "~1".
func EscapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	b := appendEscaped(make([]byte, 0, len(s)+2), s)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is the string's alone
}

// appendEscaped appends the reference token s, escaped, to dst.
// Tokens are short (a key, an index): a byte loop finds the two bytes to
// escape faster than strings.IndexAny, which prepares a set on every call.
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			dst = append(append(dst, s[start:i]...), "~0"...)
			start = i + 1
		case '/':
			dst = append(append(dst, s[start:i]...), "~1"...)
			start = i + 1
		}
	}
	return append(dst, s[start:]...)
}

// String returns the escaped string form of p; "" for the whole document.
func (p Pointer) String() string {
	switch len(p) {
	case 0:
		return ""
	case 1:
		if !strings.ContainsAny(p[0], "~/") {
			return "/" + p[0]
		}
	}
	n := 0
	for _, t := range p {
		n += 1 + len(t)
	}
	b := p.appendText(make([]byte, 0, n))
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is the string's alone
}

// appendJSON appends p's escaped string form to dst as a JSON string.
// Most tokens need no escape, as a pointer's or as JSON's: their bytes are
// written as they are, '~' and '/' escaped as a pointer's (the escapes
// need none as JSON's), both found in one pass (tokenRun). A pointer with
// a byte JSON escapes is escaped, on the stack when short, and quoted
// from there.
func (p Pointer) appendJSON(dst []byte) []byte {
	mark := len(dst)
	dst = append(dst, '"')
	for _, t := range p {
		dst = append(dst, '/')
		for {
			k := tokenRun(t)
			dst = append(dst, t[:k]...)
			if k == len(t) {
				break
			}
			switch t[k] {
			case '~':
				dst = append(dst, '~', '0')
			case '/':
				dst = append(dst, '~', '1')
			default: // JSON escapes it
				var buf [256]byte
				text := p.appendText(buf[:0])
				return value.AppendString(dst[:mark], unsafe.String(unsafe.SliceData(text), len(text)))
			}
			t = t[k+1:]
		}
	}
	return append(dst, '"')
}

// tokenRun returns the offset of the first byte of t that appendJSON must
// look at: '~' or '/', or a byte JSON escapes or may (a quote, a
// backslash, a control character, any byte from 0x80 up); len(t) when
// there is none. Eight bytes a step: a byte's high bit is set in m when
// the byte is one of them or a lower byte is (a borrow), so the lowest bit
// set is exact.
func tokenRun(t string) int {
	b := unsafe.Slice(unsafe.StringData(t), len(t))
	i := 0
	for ; i+8 <= len(b) && i >= 0; i += 8 {
		x := binary.LittleEndian.Uint64(b[i : i+8])
		if m := ((x - ones*' ') | (x ^ ones*'"' - ones) | (x ^ ones*'\\' - ones) | (x ^ ones*'~' - ones) | (x ^ ones*'/' - ones)) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < ' ' || c >= 0x80 || c == '"' || c == '\\' || c == '~' || c == '/' {
			return i
		}
	}
	return i
}

// Constants for examining eight bytes at a time.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// appendText appends p's escaped string form to dst.
func (p Pointer) appendText(dst []byte) []byte {
	for _, t := range p {
		dst = appendEscaped(append(dst, '/'), t)
	}
	return dst
}

// display is the form of p used in messages: the escaped pointer, or `""`
// for the whole document so that it is visible.
func (p Pointer) display() string {
	if len(p) == 0 {
		return `""`
	}
	return p.String()
}

// Index kinds returned by parseIndex.
const (
	idxInvalid = iota // not "-" and not a canonical integer
	idxDash           // "-"
	idxNumber         // a canonical integer, possibly negative
)

// maxIndex bounds parsed indices so that index arithmetic never overflows;
// any larger magnitude is out of range for every real array anyway.
const maxIndex = 1 << 40

// parseIndex parses an array reference token: "-", or a canonical decimal
// integer ("0", "12", "-3"; not "01", "+1", "-0", "1.0"). Magnitudes beyond
// maxIndex are clamped to maxIndex.
func parseIndex(tok string) (int, int) {
	if tok == "-" {
		return 0, idxDash
	}
	neg := false
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		neg = true
		digits = digits[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && (len(digits) > 1 || neg)) {
		return 0, idxInvalid
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, idxInvalid
		}
		if n < maxIndex {
			n = n*10 + int(c-'0')
		}
	}
	if n > maxIndex {
		n = maxIndex
	}
	if neg {
		n = -n
	}
	return n, idxNumber
}
