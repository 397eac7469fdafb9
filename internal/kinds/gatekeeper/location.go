package gatekeeper

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A location is Gatekeeper's path to a place in an object: fields
// separated by dots, each field optionally followed by a list selector
// naming an element by a key field's value (or * for every element):
//
//	spec.containers[name: nginx].securityContext
//	metadata.annotations."example.com/owner"
//	spec.ports[port: 80].protocol
//
// A field is letters, digits, '_' and '-' (not beginning with a digit),
// or a string quoted with " or ' (a backslash escapes the next
// character); a key value is such a name, a string, an integer or *.
// Spaces between tokens are ignored.

// Bounds of a location, checked before it is parsed.
const (
	maxLocationBytes    = 4096
	maxLocationSegments = 64
)

// errLocation is in the chain of every location's error.
var errLocation = errors.New("invalid location")

// segment is one step of a location: a field, or a list selector.
type segment struct {
	field string // the member of an object (when !list)
	list  bool
	key   string // the list's key field
	glob  bool   // every element
	value any    // the key's value: a string or an int64
}

func (s segment) String() string {
	if !s.list {
		return quoteName(s.field)
	}
	v := "*"
	switch val := s.value.(type) {
	case string:
		v = quoteName(val)
	case int64:
		v = strconv.FormatInt(val, 10)
	}
	return "[" + quoteName(s.key) + ": " + v + "]"
}

// quoteName is s as a location writes it: as is when it is a name, else
// in double quotes with '"' and '\' escaped.
func quoteName(s string) string {
	if isName(s) {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

func isName(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isNameByte(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-'
}

// location is a parsed location.
type location []segment

func (l location) String() string {
	var b strings.Builder
	for i, s := range l {
		if i > 0 && !s.list {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// parseLocation parses a location; an error wraps errLocation and names
// the byte offset at fault.
func parseLocation(src string) (location, error) {
	if len(src) > maxLocationBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", errLocation, maxLocationBytes)
	}
	p := &locParser{src: src}
	var out location
	for {
		p.space()
		name, ok, err := p.name()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, p.errf("expected a field name")
		}
		out = append(out, segment{field: name})
		p.space()
		if p.peek() == '[' {
			p.pos++
			s, err := p.selector()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			p.space()
		}
		if len(out) > maxLocationSegments {
			return nil, fmt.Errorf("%w: more than %d steps", errLocation, maxLocationSegments)
		}
		switch p.peek() {
		case 0:
			if p.pos < len(p.src) {
				return nil, p.errf("unexpected character %q", p.src[p.pos])
			}
			return out, nil
		case '.':
			p.pos++
			p.space()
			if p.pos == len(p.src) {
				return nil, p.errf("a location cannot end with '.'")
			}
		default:
			return nil, p.errf("expected '.' or the end, got %q", p.src[p.pos])
		}
	}
}

type locParser struct {
	src string
	pos int
}

func (p *locParser) errf(format string, args ...any) error {
	return fmt.Errorf("%w at %d: %s", errLocation, p.pos, fmt.Sprintf(format, args...))
}

// peek is the next byte, 0 at the end (or at a NUL, which no token takes).
func (p *locParser) peek() byte {
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *locParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		p.pos++
	}
}

// name reads a field name or a quoted string (ok false when neither is
// next; a name may not begin with a digit).
func (p *locParser) name() (string, bool, error) {
	c := p.peek()
	switch {
	case c == '"' || c == '\'':
		s, err := p.quoted()
		return s, err == nil, err
	case isNameByte(c) && !isDigit(c):
		start := p.pos
		for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
			p.pos++
		}
		return p.src[start:p.pos], true, nil
	}
	return "", false, nil
}

func (p *locParser) quoted() (string, error) {
	quote := p.src[p.pos]
	start := p.pos
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		switch c {
		case quote:
			return b.String(), nil
		case '\\':
			if p.pos < len(p.src) {
				b.WriteByte(p.src[p.pos])
				p.pos++
			}
		default:
			b.WriteByte(c)
		}
	}
	p.pos = start
	return "", p.errf("unterminated string")
}

// selector reads "key: value]" after '['.
func (p *locParser) selector() (segment, error) {
	p.space()
	key, ok, err := p.name()
	if err != nil {
		return segment{}, err
	}
	if !ok {
		return segment{}, p.errf("expected the key field of a list selector")
	}
	s := segment{list: true, key: key}
	p.space()
	if p.peek() != ':' {
		return segment{}, p.errf("expected ':' after key field %s", key)
	}
	p.pos++
	p.space()
	switch c := p.peek(); {
	case c == '*':
		p.pos++
		s.glob = true
	case isDigit(c):
		start := p.pos
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
		n, err := strconv.ParseInt(p.src[start:p.pos], 10, 64)
		if err != nil {
			p.pos = start
			return segment{}, p.errf("key value %s: %v", p.src[start:p.pos], err)
		}
		s.value = n
	default:
		v, ok, err := p.name()
		if err != nil {
			return segment{}, err
		}
		if !ok {
			return segment{}, p.errf("expected a key value or * in a list selector")
		}
		s.value = v
	}
	p.space()
	if p.peek() != ']' {
		return segment{}, p.errf("expected ']' to end the list selector")
	}
	p.pos++
	return s, nil
}
