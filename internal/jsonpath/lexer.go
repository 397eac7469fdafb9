package jsonpath

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tDollar
	tAt
	tDot
	tDotDot
	tLBrack
	tRBrack
	tLParen
	tRParen
	tComma
	tColon
	tQuestion
	tStar // wildcard or multiplication
	tIdent
	tString
	tNumber
	tOr
	tAnd
	tEq
	tNe
	tMatch
	tNotMatch
	tLt
	tLe
	tGt
	tGe
	tPlus
	tMinus
	tSlash
	tPercent
	tNot
)

var tokNames = [...]string{
	tEOF:      "end of expression",
	tDollar:   "'$'",
	tAt:       "'@'",
	tDot:      "'.'",
	tDotDot:   "'..'",
	tLBrack:   "'['",
	tRBrack:   "']'",
	tLParen:   "'('",
	tRParen:   "')'",
	tComma:    "','",
	tColon:    "':'",
	tQuestion: "'?'",
	tStar:     "'*'",
	tIdent:    "identifier",
	tString:   "string",
	tNumber:   "number",
	tOr:       "'||'",
	tAnd:      "'&&'",
	tEq:       "'=='",
	tNe:       "'!='",
	tMatch:    "'=~'",
	tNotMatch: "'!~'",
	tLt:       "'<'",
	tLe:       "'<='",
	tGt:       "'>'",
	tGe:       "'>='",
	tPlus:     "'+'",
	tMinus:    "'-'",
	tSlash:    "'/'",
	tPercent:  "'%'",
	tNot:      "'!'",
}

// opText is the source text of an operator token.
var opText = [...]string{
	tOr:       "||",
	tAnd:      "&&",
	tEq:       "==",
	tNe:       "!=",
	tMatch:    "=~",
	tNotMatch: "!~",
	tLt:       "<",
	tLe:       "<=",
	tGt:       ">",
	tGe:       ">=",
	tPlus:     "+",
	tMinus:    "-",
	tStar:     "*",
	tSlash:    "/",
	tPercent:  "%",
	tNot:      "!",
}

type token struct {
	kind tokKind
	pos  int
	text string // identifier or name, decoded string, number as written
}

func (t token) describe() string {
	switch t.kind {
	case tIdent:
		return "identifier " + t.text
	case tNumber:
		return "number " + t.text
	case tString:
		return "string " + quote(t.text)
	}
	return tokNames[t.kind]
}

// lexer splits a source into tokens on demand. The parser pulls one token at
// a time, which lets it ask for a name right after a '.' (see name).
type lexer struct {
	src string
	pos int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// nameRune reports whether r may appear in a .name: letters, digits, '_'.
func nameRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || isDigit(byte(r)) || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// identStart reports whether r may start an identifier in an expression
// (true, false, null, function names).
func identStart(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
	}
	return unicode.IsLetter(r)
}

func (l *lexer) scanName() string {
	start := l.pos
	for l.pos < len(l.src) {
		r, size := utf8.DecodeRuneInString(l.src[l.pos:])
		if r == utf8.RuneError && size <= 1 || !nameRune(r) {
			break
		}
		l.pos += size
	}
	return l.src[start:l.pos]
}

// name scans what immediately follows a '.' or '..': a name (tIdent) or '*'.
// ok is false, and nothing is consumed, when neither is there.
func (l *lexer) name() (token, bool) {
	if l.pos < len(l.src) && l.src[l.pos] == '*' {
		l.pos++
		return token{kind: tStar, pos: l.pos - 1}, true
	}
	start := l.pos
	if n := l.scanName(); n != "" {
		return token{kind: tIdent, pos: start, text: n}, true
	}
	return token{}, false
}

func (l *lexer) next() token {
	for l.pos < len(l.src) && isSpace(l.src[l.pos]) {
		l.pos++
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tEOF, pos: start}
	}
	c := l.src[l.pos]
	tok := func(k tokKind, n int) token {
		l.pos += n
		return token{kind: k, pos: start}
	}
	peek := func() byte {
		if l.pos+1 < len(l.src) {
			return l.src[l.pos+1]
		}
		return 0
	}
	switch c {
	case '$':
		return tok(tDollar, 1)
	case '@':
		return tok(tAt, 1)
	case '.':
		if peek() == '.' {
			return tok(tDotDot, 2)
		}
		return tok(tDot, 1)
	case '[':
		return tok(tLBrack, 1)
	case ']':
		return tok(tRBrack, 1)
	case '(':
		return tok(tLParen, 1)
	case ')':
		return tok(tRParen, 1)
	case ',':
		return tok(tComma, 1)
	case ':':
		return tok(tColon, 1)
	case '?':
		return tok(tQuestion, 1)
	case '*':
		return tok(tStar, 1)
	case '+':
		return tok(tPlus, 1)
	case '-':
		return tok(tMinus, 1)
	case '/':
		return tok(tSlash, 1)
	case '%':
		return tok(tPercent, 1)
	case '|':
		if peek() == '|' {
			return tok(tOr, 2)
		}
		panic(syntaxErr(start, "unexpected '|' (did you mean '||'?)"))
	case '&':
		if peek() == '&' {
			return tok(tAnd, 2)
		}
		panic(syntaxErr(start, "unexpected '&' (did you mean '&&'?)"))
	case '=':
		switch peek() {
		case '=':
			return tok(tEq, 2)
		case '~':
			return tok(tMatch, 2)
		}
		panic(syntaxErr(start, "unexpected '=' (did you mean '=='?)"))
	case '!':
		switch peek() {
		case '=':
			return tok(tNe, 2)
		case '~':
			return tok(tNotMatch, 2)
		}
		return tok(tNot, 1)
	case '<':
		if peek() == '=' {
			return tok(tLe, 2)
		}
		return tok(tLt, 1)
	case '>':
		if peek() == '=' {
			return tok(tGe, 2)
		}
		return tok(tGt, 1)
	case '"', '\'':
		return l.scanString()
	}
	if isDigit(c) {
		return l.scanNumber()
	}
	r, size := utf8.DecodeRuneInString(l.src[l.pos:])
	if r == utf8.RuneError && size <= 1 {
		panic(syntaxErr(start, "invalid UTF-8 byte 0x%02x", c))
	}
	if identStart(r) {
		return token{kind: tIdent, pos: start, text: l.scanName()}
	}
	panic(syntaxErr(start, "unexpected character %q", r))
}

// scanNumber scans a JSON number without sign: 0 | [1-9][0-9]*, an optional
// fraction and an optional exponent.
func (l *lexer) scanNumber() token {
	start := l.pos
	s := l.src
	digits := func() int {
		n := 0
		for l.pos < len(s) && isDigit(s[l.pos]) {
			l.pos++
			n++
		}
		return n
	}
	if s[l.pos] == '0' {
		l.pos++
	} else {
		digits()
	}
	if l.pos < len(s) && s[l.pos] == '.' && (l.pos+1 >= len(s) || s[l.pos+1] != '.') {
		l.pos++
		if digits() == 0 {
			panic(syntaxErr(l.pos, "expected a digit after the decimal point"))
		}
	}
	if l.pos < len(s) && (s[l.pos] == 'e' || s[l.pos] == 'E') {
		l.pos++
		if l.pos < len(s) && (s[l.pos] == '+' || s[l.pos] == '-') {
			l.pos++
		}
		if digits() == 0 {
			panic(syntaxErr(l.pos, "expected a digit in the exponent"))
		}
	}
	if l.pos < len(s) && isDigit(s[l.pos]) {
		panic(syntaxErr(start, "number with a leading zero"))
	}
	return token{kind: tNumber, pos: start, text: s[start:l.pos]}
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// scanString scans a string in double or single quotes. Escapes: \\ \" \'
// \/ \b \f \n \r \t \uXXXX (UTF-16 surrogate pairs combine).
func (l *lexer) scanString() token {
	s := l.src
	start := l.pos
	q := s[l.pos]
	l.pos++
	// Fast path: no escapes.
	i := l.pos
	for i < len(s) && s[i] != q && s[i] != '\\' {
		i++
	}
	if i < len(s) && s[i] == q {
		text := s[l.pos:i]
		l.pos = i + 1
		return token{kind: tString, pos: start, text: text}
	}
	var b strings.Builder
	b.WriteString(s[l.pos:i])
	l.pos = i
	for {
		if l.pos >= len(s) {
			panic(syntaxErr(start, "unterminated string"))
		}
		c := s[l.pos]
		if c == q {
			l.pos++
			return token{kind: tString, pos: start, text: b.String()}
		}
		if c != '\\' {
			b.WriteByte(c)
			l.pos++
			continue
		}
		esc := l.pos
		if l.pos+1 >= len(s) {
			panic(syntaxErr(start, "unterminated string"))
		}
		e := s[l.pos+1]
		l.pos += 2
		switch e {
		case '\\', '"', '\'', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := l.hex4(esc)
			if r >= 0xD800 && r < 0xDC00 {
				if l.pos+1 < len(s) && s[l.pos] == '\\' && s[l.pos+1] == 'u' {
					l.pos += 2
					lo := l.hex4(l.pos - 2)
					if lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
						b.WriteRune(r)
						continue
					}
				}
				panic(syntaxErr(esc, "unpaired UTF-16 surrogate in \\u escape"))
			}
			if r >= 0xDC00 && r < 0xE000 {
				panic(syntaxErr(esc, "unpaired UTF-16 surrogate in \\u escape"))
			}
			b.WriteRune(r)
		default:
			r, _ := utf8.DecodeRuneInString(s[l.pos-1:])
			shown := string(r)
			if r == utf8.RuneError || !unicode.IsPrint(r) {
				shown = strings.Trim(quote(string(r)), `"`)
			}
			panic(syntaxErr(esc, `unknown escape \%s in string (write \\%s for a backslash)`, shown, shown))
		}
	}
}

// hex4 reads the 4 hex digits of a \u escape starting at l.pos.
func (l *lexer) hex4(esc int) rune {
	if l.pos+4 > len(l.src) {
		panic(syntaxErr(esc, `\u escape needs 4 hex digits`))
	}
	r := 0
	for k := 0; k < 4; k++ {
		h := hexVal(l.src[l.pos+k])
		if h < 0 {
			panic(syntaxErr(esc, `\u escape needs 4 hex digits`))
		}
		r = r<<4 | h
	}
	l.pos += 4
	return rune(r)
}
