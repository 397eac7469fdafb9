package jsonpath

import (
	"encoding/json"
	"strconv"
	"strings"
)

type parser struct {
	lx     lexer
	tok    token
	depth  int // current nesting depth (parentheses, unary, calls, filters)
	filter int // > 0 inside a filter
}

// Parse parses a KubeMod JSONPath expression.
func Parse(src string) (e *Expr, err error) {
	if len(src) > MaxSourceLen {
		return nil, syntaxErr(MaxSourceLen, "expression too long (%d bytes, at most %d allowed)", len(src), MaxSourceLen)
	}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*SyntaxError)
			if !ok {
				panic(r)
			}
			e, err = nil, se
		}
	}()
	p := &parser{lx: lexer{src: src}}
	p.next()
	if p.tok.kind == tEOF {
		return nil, syntaxErr(0, "empty expression")
	}
	root := p.expr()
	if p.tok.kind != tEOF {
		p.unexpected("an operator or the end of the expression")
	}
	return newExpr(src, root), nil
}

// MustParse is Parse that panics on error; for tests and static expressions.
func MustParse(src string) *Expr {
	e, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return e
}

func (p *parser) next() { p.tok = p.lx.next() }

func (p *parser) unexpected(want string) {
	if p.tok.kind == tIdent && p.tok.pos > 1 && p.lx.src[p.tok.pos-1] == '-' {
		if r := p.lx.src[p.tok.pos-2]; r < 0x80 && nameRune(rune(r)) {
			panic(syntaxErr(p.tok.pos, "unexpected %s, expected %s (a name containing '-' must be quoted: [\"...\"])", p.tok.describe(), want))
		}
	}
	panic(syntaxErr(p.tok.pos, "unexpected %s, expected %s", p.tok.describe(), want))
}

func (p *parser) expect(k tokKind) {
	if p.tok.kind != k {
		p.unexpected(tokNames[k])
	}
	p.next()
}

func (p *parser) enter() {
	p.depth++
	if p.depth > MaxDepth {
		panic(syntaxErr(p.tok.pos, "expression nested too deeply (at most %d levels)", MaxDepth))
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) expr() exprNode { return p.binary(1) }

func precedence(k tokKind) int {
	switch k {
	case tOr:
		return 1
	case tAnd:
		return 2
	case tEq, tNe, tMatch, tNotMatch:
		return 3
	case tLt, tLe, tGt, tGe:
		return 4
	case tPlus, tMinus:
		return 5
	case tStar, tSlash, tPercent:
		return 6
	}
	return 0
}

// binary parses a left-associative chain of operators of at least minPrec.
func (p *parser) binary(minPrec int) exprNode {
	left := p.unary()
	for {
		prec := precedence(p.tok.kind)
		if prec == 0 || prec < minPrec {
			return left
		}
		op := p.tok
		p.next()
		right := p.binary(prec + 1)
		left = p.makeBinary(op, left, right)
	}
}

func (p *parser) makeBinary(op token, l, r exprNode) exprNode {
	n := &binaryNode{pos: op.pos, op: op.kind, l: l, r: r}
	switch op.kind {
	case tMatch, tNotMatch:
		lit, ok := r.(*litNode)
		s, isStr := "", false
		if ok {
			s, isStr = lit.val.(string)
		}
		if !isStr {
			panic(syntaxErr(r.position(), "the right operand of %s must be a string literal", opText[op.kind]))
		}
		re, err := CompileMatcher(s)
		if err != nil {
			panic(syntaxErr(lit.pos, "invalid regular expression: %v", err))
		}
		n.re = re
	case tAnd, tOr:
		n.l, n.r = p.existence(l), p.existence(r)
	}
	return n
}

// existence turns a query into an existence test inside a filter.
func (p *parser) existence(x exprNode) exprNode {
	if pn, ok := x.(*pathNode); ok && p.filter > 0 {
		return &existsNode{path: pn}
	}
	return x
}

func (p *parser) unary() exprNode {
	switch p.tok.kind {
	case tNot, tMinus:
		op := p.tok
		p.enter()
		p.next()
		x := p.unary()
		p.leave()
		if op.kind == tNot {
			return &unaryNode{pos: op.pos, op: tNot, x: p.existence(x)}
		}
		// Fold '-' into a number literal so that -1 stays a json.Number.
		if lit, ok := x.(*litNode); ok {
			if num, ok := lit.val.(json.Number); ok && !strings.HasPrefix(string(num), "-") {
				return &litNode{pos: op.pos, val: "-" + num}
			}
		}
		return &unaryNode{pos: op.pos, op: tMinus, x: x}
	}
	return p.primary()
}

func (p *parser) primary() exprNode {
	t := p.tok
	switch t.kind {
	case tNumber:
		if _, err := strconv.ParseFloat(t.text, 64); err != nil {
			panic(syntaxErr(t.pos, "number %s out of range", t.text))
		}
		p.next()
		return &litNode{pos: t.pos, val: json.Number(t.text)}
	case tString:
		p.next()
		return &litNode{pos: t.pos, val: t.text}
	case tDollar, tAt:
		return p.path()
	case tLParen:
		p.enter()
		p.next()
		x := p.expr()
		p.expect(tRParen)
		p.leave()
		return x
	case tIdent:
		switch t.text {
		case "true":
			p.next()
			return &litNode{pos: t.pos, val: true}
		case "false":
			p.next()
			return &litNode{pos: t.pos, val: false}
		case "null":
			p.next()
			return &litNode{pos: t.pos, val: nil}
		}
		p.next()
		if p.tok.kind != tLParen {
			p.tok = t
			p.unexpected("an expression")
		}
		fn, ok := lookupFunc(t.text)
		if !ok {
			panic(syntaxErr(t.pos, "unknown function %s (known: %s)", t.text, strings.Join(funcNames[:], ", ")))
		}
		p.enter()
		p.next()
		var args []exprNode
		if p.tok.kind != tRParen {
			for {
				args = append(args, p.expr())
				if p.tok.kind != tComma {
					break
				}
				p.next()
			}
		}
		p.expect(tRParen)
		p.leave()
		if len(args) != 1 {
			panic(syntaxErr(t.pos, "function %s takes 1 argument, got %d", t.text, len(args)))
		}
		return &callNode{pos: t.pos, fn: fn, arg: args[0]}
	}
	p.unexpected("an expression")
	return nil
}

func (p *parser) path() *pathNode {
	pn := &pathNode{pos: p.tok.pos, current: p.tok.kind == tAt}
	p.next()
	for {
		switch p.tok.kind {
		case tDot:
			dot := p.tok.pos
			t, ok := p.lx.name()
			if !ok {
				panic(syntaxErr(dot+1, "expected a name or '*' right after '.'"))
			}
			pn.steps = append(pn.steps, nameStep(dot, t))
			p.next()
		case tDotDot:
			pn.steps = append(pn.steps, step{kind: sDescent, pos: p.tok.pos})
			dots := p.tok.pos
			if t, ok := p.lx.name(); ok {
				pn.steps = append(pn.steps, nameStep(dots, t))
				p.next()
				continue
			}
			p.next()
			if p.tok.kind != tLBrack {
				p.unexpected("a name, '*' or '[' after '..'")
			}
			pn.steps = append(pn.steps, p.bracket())
		case tLBrack:
			pn.steps = append(pn.steps, p.bracket())
		default:
			pn.definite = true
			for i := range pn.steps {
				if pn.steps[i].capturing() {
					pn.definite = false
					pn.captures++
				}
			}
			return pn
		}
	}
}

func nameStep(pos int, t token) step {
	if t.kind == tStar {
		return step{kind: sWildcard, pos: pos}
	}
	return step{kind: sName, pos: pos, name: t.text}
}

// bracket parses a bracketed step; p.tok is the '['.
func (p *parser) bracket() step {
	st := step{pos: p.tok.pos}
	p.next()
	switch p.tok.kind {
	case tStar:
		p.next()
		p.expect(tRBrack)
		st.kind = sWildcard
		return st
	case tQuestion:
		p.enter()
		p.filter++
		p.next()
		st.kind = sFilter
		st.filter = p.existence(p.expr())
		p.filter--
		p.expect(tRBrack)
		p.leave()
		return st
	case tRBrack:
		panic(syntaxErr(p.tok.pos, "empty brackets: expected a name, an index, '*', a slice or a filter"))
	case tColon:
		return p.slice(st, false, 0)
	}
	var sels []selector
	for {
		switch p.tok.kind {
		case tString:
			sels = append(sels, selector{name: p.tok.text})
			p.next()
		case tNumber, tMinus:
			n := p.integer()
			if len(sels) == 0 && p.tok.kind == tColon {
				return p.slice(st, true, n)
			}
			sels = append(sels, selector{index: n, isIndex: true})
		default:
			p.unexpected("a quoted name or an integer")
		}
		if p.tok.kind == tRBrack {
			break
		}
		if p.tok.kind != tComma {
			p.unexpected("',' or ']'")
		}
		p.next()
	}
	p.next()
	if len(sels) == 1 {
		if sels[0].isIndex {
			st.kind, st.index = sIndex, sels[0].index
		} else {
			st.kind, st.name = sName, sels[0].name
		}
		return st
	}
	st.kind, st.union = sUnion, sels
	return st
}

// integer parses an optionally negative integer index.
func (p *parser) integer() int {
	start := p.tok.pos
	neg := false
	if p.tok.kind == tMinus {
		neg = true
		p.next()
	}
	if p.tok.kind != tNumber {
		p.unexpected("an integer")
	}
	text := p.tok.text
	if strings.ContainsAny(text, ".eE") {
		panic(syntaxErr(p.tok.pos, "index %s is not an integer", text))
	}
	if neg {
		text = "-" + text
	}
	n, err := strconv.ParseInt(text, 10, strconv.IntSize)
	if err != nil {
		panic(syntaxErr(start, "index %s out of range", text))
	}
	p.next()
	return int(n)
}

// slice parses the rest of [start:end:step]; p.tok is the first ':'.
func (p *parser) slice(st step, hasStart bool, start int) step {
	st.kind = sSlice
	st.slice.hasStart, st.slice.start = hasStart, start
	p.expect(tColon)
	if p.tok.kind != tColon && p.tok.kind != tRBrack {
		st.slice.hasEnd, st.slice.end = true, p.integer()
	}
	if p.tok.kind == tColon {
		p.next()
		if p.tok.kind != tRBrack {
			pos := p.tok.pos
			st.slice.hasStep, st.slice.step = true, p.integer()
			if st.slice.step == 0 {
				panic(syntaxErr(pos, "slice step cannot be zero"))
			}
		}
	}
	if p.tok.kind != tRBrack {
		p.unexpected("']'")
	}
	p.next()
	return st
}
