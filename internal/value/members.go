package value

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// ObjectMembers reads a JSON object without decoding its members' values.
// data must be exactly one JSON object, optionally surrounded by whitespace.
// fn is called for each member in document order with the unescaped key and
// the member's value as raw JSON text: a subslice of data without the
// surrounding whitespace, validated but not decoded (see Decode and
// DecodeString); fn must not modify it. Duplicate keys are passed as they
// come.
//
// ObjectMembers returns a *SyntaxError if data is not a valid JSON object,
// else the first error fn returns; after that error fn is not called again,
// but the rest of data is still checked, and a syntax error there wins. fn
// may have been called for members before a syntax error that follows them.
// Skipped values cost no allocation.
func ObjectMembers(data []byte, fn func(key string, raw []byte) error) error {
	return ObjectMembersNested(data, fn, nil, nil)
}

// ObjectMembersNested is ObjectMembers that also reads, in the same pass,
// the members of objects among data's members: for each member whose value
// is an object, nest is called with its key when its value begins; if nest
// returns true, inner gets the value's members (unescaped keys, raw values
// validated, as ObjectMembers passes them) before fn gets the member
// itself. A member's text is thus checked once, where reading it with
// ObjectMembers in fn would go over it twice. nest may be nil.
//
// Errors are as ObjectMembers': the first error of fn or of inner stops
// every call (nest's too), and a syntax error anywhere in data wins.
func ObjectMembersNested(data []byte, fn func(key string, raw []byte) error, nest func(key string) bool, inner func(key string, raw []byte) error) error {
	return objectMembersNested(data, fn, nest, inner, nil)
}

// ObjectMembersNestedDeferring is ObjectMembersNested but for the members
// of the nested objects (those inner gets) for which deferred reports
// true: when such a member's value is an object or an array, its end is
// found by counting the brackets outside strings, as ObjectMembersValidated
// finds it, and inner gets its text unchecked. The caller checks that text
// (Valid, or decoding it) before trusting anything of it. Every other byte
// of data is checked as ObjectMembersNested checks it, so data is valid
// JSON exactly when no syntax error comes back and every deferred text is
// valid: on valid JSON the brackets end a value where it ends, and an
// invalid value either ends the same way, as invalid text, or is refused
// with what follows it. The depth of a deferred text's containers is
// bounded as data's (ObjectMembersNested refuses data nested deeper than
// Decode accepts): a deferred text is at most as deep as data allows
// there, so checking it alone bounds nothing less.
func ObjectMembersNestedDeferring(data []byte, fn func(key string, raw []byte) error, nest func(key string) bool, inner func(key string, raw []byte) error, deferred func(key string) bool) error {
	return objectMembersNested(data, fn, nest, inner, deferred)
}

func objectMembersNested(data []byte, fn func(key string, raw []byte) error, nest func(key string) bool, inner func(key string, raw []byte) error, deferred func(key string) bool) error {
	d := decoder{data: data}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return d.invalid(i, "looking for beginning of object")
	}
	var fnErr error
	if i = d.members(i, fn, nest, inner, nil, deferred, &fnErr); i < 0 {
		return d.err
	}
	if i = skipSpace(data, i); i < len(data) {
		return d.invalid(i, "after top-level value")
	}
	return fnErr
}

// members reads the object whose opening brace is data[i] for
// ObjectMembersNested, recording fn's first error (or inner's) in *fnErr,
// and returns the offset just past it, or -1. Its members for which
// deferred reports true are delimited, not checked, when their value is
// an object or an array; innerDeferred is deferred for the objects nest
// descends into.
func (d *decoder) members(i int, fn func(key string, raw []byte) error, nest func(key string) bool, inner func(key string, raw []byte) error, deferred, innerDeferred func(key string) bool, fnErr *error) int {
	data := d.data
	if d.depth++; d.depth > maxDepth {
		return d.fail(i, "exceeded max depth")
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		d.depth--
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return d.bad(i, "looking for beginning of object key string")
		}
		var key string
		if *fnErr == nil {
			key, i = d.key(i)
		} else {
			i = d.skipString(i)
		}
		if i < 0 {
			return i
		}
		if i = skipSpace(data, i); i >= len(data) || data[i] != ':' {
			return d.bad(i, "after object key")
		}
		start := skipSpace(data, i+1)
		switch {
		case nest != nil && *fnErr == nil && start < len(data) && data[start] == '{' && nest(key):
			i = d.members(start, inner, nil, nil, innerDeferred, nil, fnErr)
		case deferred != nil && *fnErr == nil && start < len(data) && (data[start] == '{' || data[start] == '[') && deferred(key):
			// Its containers are as deep as the body allows, or it is
			// refused as a checked member would be.
			switch i = skipContainerValidated(data, start, maxDepth-d.depth); i {
			case skipTooDeep:
				return d.fail(start, "exceeded max depth")
			case -1:
				return d.bad(len(data), "")
			}
		default:
			i = d.skip(start)
		}
		if i < 0 {
			return i
		}
		if *fnErr == nil {
			*fnErr = fn(key, data[start:i:i])
		}
		if i = skipSpace(data, i); i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			d.depth--
			return i + 1
		}
		return d.bad(i, "after object key:value pair")
	}
}

// ObjectMembersValidated is ObjectMembers for text already validated: data
// MUST be a raw value handed out by ObjectMembers (or by
// ObjectMembersValidated on such text) that starts with '{'. It calls fn
// with the same keys, decoded the same way, and the same raw values, but
// finds the end of each value without checking it again: strings by their
// closing quote, containers by counting brackets outside strings, numbers
// and literals by the next delimiter. It returns the first error fn
// returns, at once.
//
// On any other input its result is undefined (members may be missed or
// misread, an error may or may not come back, as a *SyntaxError), but it
// never panics, never reads outside data and always ends.
func ObjectMembersValidated(data []byte, fn func(key string, raw []byte) error) error {
	d := decoder{data: data, depth: 1}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return d.invalid(i, "looking for beginning of object")
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return d.invalid(i, "looking for beginning of object key string")
		}
		key, j := d.key(i)
		if j < 0 {
			return d.err
		}
		if i = skipSpace(data, j); i >= len(data) || data[i] != ':' {
			return d.invalid(i, "after object key")
		}
		start := skipSpace(data, i+1)
		end := skipValidated(data, start)
		if end <= start {
			return d.invalid(start, "looking for beginning of value")
		}
		if err := fn(key, data[start:end:end]); err != nil {
			return err
		}
		if i = skipSpace(data, end); i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			return nil
		}
		return d.invalid(i, "after object key:value pair")
	}
}

// skipValidated returns the offset just past the valid JSON value starting
// at data[i], trusting it to be valid: it looks only for where the value
// ends. On other input it returns some offset from i to len(data), or -1,
// after at most a few passes over data.
func skipValidated(data []byte, i int) int {
	if i < 0 || i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipStringValidated(data, i)
	case '{', '[':
		return skipContainerValidated(data, i, math.MaxInt)
	}
	// A number or a literal ends at a delimiter.
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// skipStringValidated returns the offset just past the string literal
// whose opening quote is data[i], or -1 if it does not end.
func skipStringValidated(data []byte, i int) int {
	return endString(data, i+1)
}

// endString returns the offset just past the first quote at or after
// data[j] that is not escaped, or -1 if there is none.
func endString(data []byte, j int) int {
	for ; ; j += 2 { // past a backslash and the byte it escapes
		if j = quoteRun(data, j); j >= len(data) {
			return -1
		}
		if data[j] == '"' {
			return j + 1
		}
	}
}

// quoteRun returns the offset of the first quote or backslash at or after
// data[j] (j >= 0), or len(data) or more.
func quoteRun(data []byte, j int) int {
	for ; j+8 <= len(data); j += 8 {
		x := binary.LittleEndian.Uint64(data[j : j+8])
		// As in stringRun, without control characters.
		if m := ((x ^ ones*'"' - ones) | (x ^ ones*'\\' - ones)) &^ x & highs; m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for ; j < len(data); j++ {
		if c := data[j]; c == '"' || c == '\\' {
			return j
		}
	}
	return j
}

// skipContainerValidated returns the offset just past the object or array
// whose opening bracket is data[i], counting the brackets outside strings.
// It reads 8 bytes at a time: where they hold no backslash, the quotes
// among them tell which bytes are in strings (a prefix XOR), and the
// brackets outside are counted at once unless the closing ones could end
// the container there. Else it goes a byte at a time, and a string from
// escape to escape (endString). It returns -1 if the container
// does not end, or skipTooDeep when it nests deeper than limit containers
// (itself the first).
func skipContainerValidated(data []byte, i, limit int) int {
	if limit < 1 {
		return skipTooDeep
	}
	depth, inStr := 1, false
	j := i + 1
	for j < len(data) {
		if j+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[j : j+8])
			if eqBytes(x, '\\') == 0 {
				y := x | ones*0x20 // '[' is now '{' and ']' is '}'
				q, o, c := eqBytes(x, '"'), eqBytes(y, '{'), eqBytes(y, '}')
				if q|o|c == 0 {
					j += 8
					continue
				}
				// Byte k of p: 1 where an odd number of quotes are at or
				// before it in the word; with inStr, 1 where in a string.
				p := q >> 7
				p ^= p << 8
				p ^= p << 16
				p ^= p << 32
				if inStr {
					p ^= ones
				}
				out := ^p << 7 & highs
				if (o|c)&out == 0 {
					inStr = p>>56 != 0
					j += 8
					continue
				}
				opens, closes := bits.OnesCount64(o&out), bits.OnesCount64(c&out)
				if closes < depth && depth+opens <= limit { // else byte by byte
					depth += opens - closes
					inStr = p>>56 != 0
					j += 8
					continue
				}
			}
		}
		if inStr {
			// The rest of a string begun in the words read.
			if j = endString(data, j); j < 0 {
				return -1
			}
			inStr = false
			continue
		}
	bytewise:
		for end := min(j+8, len(data)); j < end; j++ {
			switch data[j] {
			case '"':
				if j = endString(data, j+1); j < 0 {
					return -1
				}
				break bytewise
			case '{', '[':
				if depth++; depth > limit {
					return skipTooDeep
				}
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	}
	return -1
}

// skipTooDeep is skipContainerValidated's result for a container nested
// deeper than its limit.
const skipTooDeep = -2

// eqBytes returns the bytes of x equal to c as 0x80, the others as 0.
func eqBytes(x uint64, c byte) uint64 {
	v := x ^ ones*uint64(c)
	return ^((v&^highs + ones*0x7f) | v) & highs
}

// Valid returns nil when data is one JSON value, optionally surrounded by
// whitespace, that Decode accepts, else the *SyntaxError Decode returns;
// it builds nothing.
func Valid(data []byte) error {
	d := decoder{data: data}
	i := d.skip(skipSpace(data, 0))
	if i < 0 {
		return d.err
	}
	if i = skipSpace(data, i); i < len(data) {
		return d.invalid(i, "after top-level value")
	}
	return nil
}

// DecodeString decodes raw, one JSON string literal optionally surrounded
// by whitespace, unescaping it as Decode does. Anything else is a
// *SyntaxError.
func DecodeString(raw []byte) (string, error) {
	d := decoder{data: raw}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '"' {
		return "", d.invalid(i, "looking for beginning of string")
	}
	s, i := d.str(i)
	if i < 0 {
		return "", d.err
	}
	if i = skipSpace(raw, i); i < len(raw) {
		return "", d.invalid(i, "after top-level value")
	}
	return s, nil
}

// skip checks the value starting at data[i] and returns the offset just
// past it, without building anything. It is iterative: containers is a
// stack of bits, 1 for an object and 0 for an array, innermost lowest,
// spilling into more when deeper than 64.
func (d *decoder) skip(i int) int {
	data := d.data
	var containers uint64
	var more []uint64
	depth := 0
	for {
		// A value starts at data[i].
		if i >= len(data) {
			return d.bad(i, "")
		}
		switch c := data[i]; c {
		case '"':
			if i = d.skipString(i); i < 0 {
				return i
			}
		case '{', '[':
			if d.depth+depth >= maxDepth {
				return d.fail(i, "exceeded max depth")
			}
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // ']' or '}': empty
				i++
				break
			}
			if depth > 0 && depth%64 == 0 {
				more = append(more, containers)
				containers = 0
			}
			depth++
			containers <<= 1
			if c == '[' {
				continue // its first element
			}
			containers |= 1
			if i = d.skipKey(i); i < 0 {
				return i
			}
			continue // its first member's value
		case 't':
			if i = d.literal(i, "true"); i < 0 {
				return i
			}
		case 'f':
			if i = d.literal(i, "false"); i < 0 {
				return i
			}
		case 'n':
			if i = d.literal(i, "null"); i < 0 {
				return i
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return d.bad(i, "looking for beginning of value")
			}
			if i = d.number(i); i < 0 {
				return i
			}
		}
		// A value, or the end of a container, ends at data[i]: what comes
		// next is a ',' or the end of the innermost container.
		for {
			if depth == 0 {
				return i
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return d.bad(i, "")
			}
			c := data[i]
			if containers&1 != 0 {
				if c == ',' {
					if i = d.skipKey(skipSpace(data, i+1)); i < 0 {
						return i
					}
					break
				}
				if c != '}' {
					return d.bad(i, "after object key:value pair")
				}
			} else {
				if c == ',' {
					i = skipSpace(data, i+1)
					break
				}
				if c != ']' {
					return d.bad(i, "after array element")
				}
			}
			i++
			depth--
			containers >>= 1
			if depth > 0 && depth%64 == 0 {
				containers = more[len(more)-1]
				more = more[:len(more)-1]
			}
		}
	}
}

// skipKey checks the object key and colon starting at data[i] and returns
// the offset of the value that follows.
func (d *decoder) skipKey(i int) int {
	data := d.data
	if i >= len(data) || data[i] != '"' {
		return d.bad(i, "looking for beginning of object key string")
	}
	if i = d.skipString(i); i < 0 {
		return i
	}
	if i < len(data) && data[i] == ':' {
		return skipSpace(data, i+1)
	}
	if i = skipSpace(data, i); i >= len(data) || data[i] != ':' {
		return d.bad(i, "after object key")
	}
	return skipSpace(data, i+1)
}

// skipString checks the string literal whose opening quote is data[i]. Like
// encoding/json's scanner it accepts any byte from 0x20 up outside escapes,
// invalid UTF-8 included.
func (d *decoder) skipString(i int) int {
	data := d.data
	j := i + 1
	for {
		if j = stringRun(data, j); j >= len(data) {
			return d.bad(j, "")
		}
		switch data[j] {
		case '"':
			return j + 1
		case '\\':
			if j+1 >= len(data) {
				return d.bad(j+1, "")
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if !d.checkHex4(j + 2) {
					return -1
				}
				j += 6
			default:
				return d.bad(j+1, "in string escape code")
			}
		default:
			return d.bad(j, "in string literal")
		}
	}
}

// stringRun returns the offset of the first byte at or after data[j] that
// is a quote, a backslash or a control character, or len(data).
func stringRun(data []byte, j int) int {
	for ; j+8 <= len(data) && j >= 0; j += 8 {
		x := binary.LittleEndian.Uint64(data[j : j+8])
		// As in plainRun, but bytes from 0x80 up are not sought: their
		// high bit is cleared by the &^ x.
		if m := ((x - ones*' ') | (x ^ ones*'"' - ones) | (x ^ ones*'\\' - ones)) &^ x & highs; m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for ; j < len(data); j++ {
		if c := data[j]; c < ' ' || c == '"' || c == '\\' {
			return j
		}
	}
	return j
}
