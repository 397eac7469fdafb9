package jmespath

import (
	"fmt"
	"unicode/utf8"

	"github.com/modwright/modwright/internal/lang"
)

const (
	// MaxDepth bounds the nesting of an expression: brackets, parentheses
	// and braces, and chains of prefix operators (!, &, unary - and +),
	// each of which the library's parser descends into recursively. It is
	// checked before parsing: the library's parser has no bound, and
	// overflowing a goroutine's stack is fatal.
	MaxDepth = 256
	// MaxSource bounds an expression's length: the parser's recursion is
	// at most linear in it, so this alone keeps the stack small whatever
	// the shape.
	MaxSource = 64 << 10
)

// checkDepth refuses, before the library parses it, a source beyond
// MaxSource or nested beyond MaxDepth. Quoted identifiers, raw strings
// and JSON literals are skipped (their parsers are iterative, or
// encoding/json's, which bounds its own depth). nil when src is within
// the bounds.
func checkDepth(src string) *lang.Diagnostic {
	if len(src) > MaxSource {
		return &lang.Diagnostic{Pos: MaxSource, Msg: fmt.Sprintf("expression longer than %d bytes", MaxSource)}
	}
	if !utf8.ValidString(src) {
		// The library's lexer panics on it.
		return &lang.Diagnostic{Pos: -1, Msg: "expression is not valid UTF-8"}
	}
	depth, prefixes, lets := 0, 0, 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '\'', '"', '`':
			j := i + 1
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			i = j
			prefixes = 0
			continue
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			prefixes = 0
		case '!', '-', '+':
			if c == '!' && i+1 < len(src) && src[i+1] == '=' {
				i++
				prefixes = 0
				continue
			}
			prefixes++
		case '&':
			if i+1 < len(src) && src[i+1] == '&' {
				i++
				continue
			}
			prefixes++
		case ' ', '\t', '\n', '\r':
			continue
		default:
			if c == 'l' && i+3 <= len(src) && src[i:i+3] == "let" && (i == 0 || !isIdent(src[i-1])) && (i+3 == len(src) || !isIdent(src[i+3])) {
				lets++
			}
			prefixes = 0
		}
		if depth+prefixes+lets > MaxDepth {
			return &lang.Diagnostic{Pos: i, Msg: fmt.Sprintf("expression nested deeper than %d", MaxDepth)}
		}
	}
	return nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
