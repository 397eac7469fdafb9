package jmespath

import (
	"errors"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

const (
	// maxRepeat is the most repetitions random generates for an unbounded
	// repeat (*, +, {n,}) beyond its minimum.
	maxRepeat = 10
	// maxRandomLen bounds the text random generates.
	maxRandomLen = 64 << 10
)

var errRandomTooLong = errors.New("generated text exceeds the length bound")

// jpRandom returns a random text matching a regular expression (Go
// syntax), as Kyverno: unbounded repeats go up to maxRepeat beyond their
// minimum, '.' is a printable ASCII character, anchors and boundaries
// produce nothing.
func jpRandom(a []any) (any, error) {
	pattern := a[0].(string)
	if pattern == "" {
		return nil, funcError("random", "no pattern provided")
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, funcError("random", "%v", err)
	}
	var b strings.Builder
	if err := generate(re, &b); err != nil {
		return nil, funcError("random", "%v", err)
	}
	return b.String(), nil
}

func generate(re *syntax.Regexp, b *strings.Builder) error {
	if b.Len() > maxRandomLen {
		return errRandomTooLong
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		r, ok := pickRune(re.Rune)
		if !ok {
			return errors.New("empty character class")
		}
		b.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte(byte(' ' + rand.IntN('~'-' '+1)))
	case syntax.OpCapture:
		return generate(re.Sub[0], b)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if err := generate(s, b); err != nil {
				return err
			}
		}
	case syntax.OpAlternate:
		return generate(re.Sub[rand.IntN(len(re.Sub))], b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := repeatBounds(re)
		for n := lo + rand.IntN(hi-lo+1); n > 0; n-- {
			if err := generate(re.Sub[0], b); err != nil {
				return err
			}
		}
	case syntax.OpNoMatch:
		return errors.New("the pattern matches nothing")
	}
	return nil
}

// repeatBounds returns the repetitions a repeat operator may generate.
func repeatBounds(re *syntax.Regexp) (lo, hi int) {
	switch re.Op {
	case syntax.OpStar:
		return 0, maxRepeat
	case syntax.OpPlus:
		return 1, 1 + maxRepeat
	case syntax.OpQuest:
		return 0, 1
	}
	if re.Max < 0 {
		return re.Min, re.Min + maxRepeat
	}
	return re.Min, re.Max
}

// pickRune picks a rune uniformly among a class's ranges (pairs lo, hi),
// keeping to valid runes.
func pickRune(ranges []rune) (rune, bool) {
	total := 0
	for i := 0; i+1 < len(ranges); i += 2 {
		total += int(ranges[i+1]-ranges[i]) + 1
	}
	if total == 0 {
		return 0, false
	}
	n := rand.IntN(total)
	for i := 0; i+1 < len(ranges); i += 2 {
		size := int(ranges[i+1]-ranges[i]) + 1
		if n < size {
			r := ranges[i] + rune(n)
			if !utf8.ValidRune(r) {
				r = ranges[i]
			}
			return r, true
		}
		n -= size
	}
	return ranges[0], true
}
