package jsonpath

import (
	"encoding/json"
	"strconv"
	"strings"
)

// format renders an expression tree in canonical form. It is called by
// Parse (through newExpr), whose recover turns its panic into the error.
//
// The canonical form can be longer than the source: operators are spaced
// out, filters parenthesised, and control characters in strings written as
// 6-byte \u00XX escapes (never raw, so that printing an expression cannot
// put control characters in a log or a terminal). So that String stays
// re-parsable, as it promises, for every expression Parse accepts, an
// expression whose canonical form exceeds MaxSourceLen is a syntax error;
// this also bounds the canonical text every Expr keeps.
func format(n exprNode) string {
	var b strings.Builder
	writeExpr(&b, n)
	if b.Len() > MaxSourceLen {
		panic(syntaxErr(0, "expression too long in canonical form (%d bytes, at most %d allowed; each control character in a string counts 6 bytes, as a \\u escape)", b.Len(), MaxSourceLen))
	}
	return b.String()
}

// nodePrec is the binding strength of a node when printed.
func nodePrec(n exprNode) int {
	switch n := n.(type) {
	case *binaryNode:
		return precedence(n.op)
	case *unaryNode:
		return 7
	}
	return 8
}

func writeOperand(b *strings.Builder, n exprNode, min int) {
	if nodePrec(n) < min {
		b.WriteByte('(')
		writeExpr(b, n)
		b.WriteByte(')')
		return
	}
	writeExpr(b, n)
}

func writeExpr(b *strings.Builder, n exprNode) {
	switch n := n.(type) {
	case *litNode:
		switch v := n.val.(type) {
		case nil:
			b.WriteString("null")
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case string:
			writeQuoted(b, v)
		case json.Number:
			b.WriteString(string(v))
		}
	case *pathNode:
		writePath(b, n)
	case *existsNode:
		writePath(b, n.path)
	case *unaryNode:
		b.WriteString(opText[n.op])
		writeOperand(b, n.x, 7)
	case *binaryNode:
		p := precedence(n.op)
		writeOperand(b, n.l, p)
		b.WriteByte(' ')
		b.WriteString(opText[n.op])
		b.WriteByte(' ')
		writeOperand(b, n.r, p+1)
	case *callNode:
		b.WriteString(funcNames[n.fn])
		b.WriteByte('(')
		writeExpr(b, n.arg)
		b.WriteByte(')')
	}
}

func writePath(b *strings.Builder, pn *pathNode) {
	if pn.current {
		b.WriteByte('@')
	} else {
		b.WriteByte('$')
	}
	afterDescent := false
	for i := range pn.steps {
		st := &pn.steps[i]
		switch st.kind {
		case sDescent:
			b.WriteString("..")
		case sName:
			if isIdent(st.name) {
				if !afterDescent {
					b.WriteByte('.')
				}
				b.WriteString(st.name)
			} else {
				b.WriteByte('[')
				writeQuoted(b, st.name)
				b.WriteByte(']')
			}
		case sIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(st.index))
			b.WriteByte(']')
		case sWildcard:
			b.WriteString("[*]")
		case sUnion:
			b.WriteByte('[')
			for j, sel := range st.union {
				if j > 0 {
					b.WriteByte(',')
				}
				if sel.isIndex {
					b.WriteString(strconv.Itoa(sel.index))
				} else {
					writeQuoted(b, sel.name)
				}
			}
			b.WriteByte(']')
		case sSlice:
			s := &st.slice
			b.WriteByte('[')
			if s.hasStart {
				b.WriteString(strconv.Itoa(s.start))
			}
			b.WriteByte(':')
			if s.hasEnd {
				b.WriteString(strconv.Itoa(s.end))
			}
			if s.hasStep {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(s.step))
			}
			b.WriteByte(']')
		case sFilter:
			b.WriteString("[?(")
			writeExpr(b, st.filter)
			b.WriteString(")]")
		}
		afterDescent = st.kind == sDescent
	}
}

// isIdent reports whether name matches ^[A-Za-z_][A-Za-z0-9_]*$.
func isIdent(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func quote(s string) string {
	var b strings.Builder
	writeQuoted(&b, s)
	return b.String()
}

// writeQuoted writes s as a double-quoted string with JSON escapes. Bytes that
// are not valid UTF-8 are written as they are, so that the result parses back
// to exactly s.
func writeQuoted(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		i++
		start = i
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
