package webhook

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// base64Pairs holds, for each 12-bit value, the two characters of the
// standard base64 alphabet that encode it, the first in the high byte.
type base64Pairs [1 << 12]uint16

// stdPairs is the table of the standard alphabet; it is built once and
// only read.
var stdPairs = func() *base64Pairs {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	t := new(base64Pairs)
	for v := range t {
		t[v] = uint16(alphabet[v>>6])<<8 | uint16(alphabet[v&0x3F])
	}
	return t
}()

// appendBase64 is base64.StdEncoding.AppendEncode(dst, src), in half the
// time on the patches of a review (BenchmarkAppendBase64): it encodes six
// bytes a step, twelve bits per table lookup, where encoding/base64
// encodes three bytes six bits at a time. The patch of every patched
// review is encoded here, and the last-applied configuration it carries
// makes it kilobytes long (BENCHMARKS.md, issue 30). FuzzAppendBase64
// checks it against encoding/base64.
func appendBase64(dst, src []byte) []byte {
	n := base64.StdEncoding.EncodedLen(len(src))
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	si, di := encodeBase64Pairs(out, src, stdPairs)
	base64.StdEncoding.Encode(out[di:], src[si:])
	return dst[:len(dst)+n]
}

// encodeBase64Pairs encodes src into out six bytes a step, with t, while
// eight bytes remain to read: it returns how far it went in each, which
// leaves at most seven bytes for encoding/base64.
func encodeBase64Pairs(out, src []byte, t *base64Pairs) (si, di int) {
	s, o := src, out
	for ; len(s) >= 8 && len(o) >= 8; s, o = s[6:], o[8:] {
		x := binary.BigEndian.Uint64(s)
		w := uint64(t[x>>52])<<48 | uint64(t[x>>40&0xFFF])<<32 | uint64(t[x>>28&0xFFF])<<16 | uint64(t[x>>16&0xFFF])
		binary.BigEndian.PutUint64(o, w)
	}
	return len(src) - len(s), len(out) - len(o)
}
