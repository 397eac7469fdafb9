package value

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// AppendJSON appends the compact JSON form of a tree to dst: object keys
// sorted, no HTML escaping, the same bytes encoding/json produces with
// SetEscapeHTML(false), without reflection.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case string:
		return appendString(dst, t), nil
	case Raw:
		if t.text == "" {
			return append(dst, "null"...), nil // the zero Raw
		}
		return append(dst, t.text...), nil // canonical (DecodeLazy)
	case json.Number:
		if !json.Valid([]byte(t)) {
			return nil, fmt.Errorf("invalid number literal %q", string(t))
		}
		return append(dst, t...), nil
	case float64, int64, int:
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		return append(dst, b...), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendJSON(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		var buf [32]string
		keys := buf[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendJSON(dst, t[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return nil, fmt.Errorf("json: unsupported type %T", v)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, as AppendJSON writes one.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// appendString quotes s as encoding/json does without HTML escaping:
// invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are escaped. The bytes
// written as they are go eight a step (copyWords): the strings escaped
// most are JSON texts held in strings (kubectl's last-applied
// configuration, on every patched review), a quote every few bytes.
func appendString(dst []byte, s string) []byte {
	text := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	// Room for the quotes, copyWords' word stores and an escape every
	// four bytes: a JSON text needs no other growth.
	dst = slices.Grow(dst, len(s)+len(s)/4+18)
	dst = append(dst, '"')
	for i := 0; ; {
		if dst, i = copyWords(dst, text, i, true); i >= len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// copyWords appends src[i:k] to dst, k the offset of the first byte at or
// after i that its caller must look at (plainRun's), and returns k; on the
// way it escapes quotes and backslashes itself (escape: appendString's) or
// unescapes \" and \\ (strSlow's). While dst has room it goes eight bytes
// a step, a word stored whole before the byte sought is found in it, the
// escape then written over the rest: a JSON text held in a string (the
// last-applied configuration, read from every review and written into
// every patch), an escape every few bytes, costs no call and no copy of
// the bytes before each.
func copyWords(dst, src []byte, i int, escape bool) ([]byte, int) {
	j := len(dst)
	out := dst[:cap(dst)]
	for i+8 <= len(src) && j+16 <= len(out) && i >= 0 && j >= 0 {
		x := binary.LittleEndian.Uint64(src[i : i+8])
		binary.LittleEndian.PutUint64(out[j:j+8], x)
		m := plainMask(x)
		if m == 0 {
			i, j = i+8, j+8
			continue
		}
		k := bits.TrailingZeros64(m) / 8
		c := byte(x >> (8 * k))
		if escape {
			if c != '"' && c != '\\' {
				return out[:j+k], i + k
			}
			out[j+k], out[j+k+1] = '\\', c
			i, j = i+k+1, j+k+2
			continue
		}
		if c != '\\' || i+k+1 >= len(src) {
			return out[:j+k], i + k
		}
		if c = src[i+k+1]; c != '"' && c != '\\' {
			return out[:j+k], i + k
		}
		out[j+k] = c
		i, j = i+k+2, j+k+1
	}
	k := plainRun(src, i)
	return append(out[:j], src[i:k]...), k
}
