package pattern

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/quantity"
)

// op is the operator a string pattern starts with.
type op uint8

const (
	opEqual op = iota
	opMoreEqual
	opLessEqual
	opNotEqual
	opMore
	opLess
	opInRange
	opNotInRange
)

var (
	reInRange    = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
	reNotInRange = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)!-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
	opPrefix     = [...]string{opMoreEqual: ">=", opLessEqual: "<=", opMore: ">", opLess: "<", opNotEqual: "!"}
)

// operatorOf is the operator a string pattern starts with.
func operatorOf(p string) op {
	switch {
	case len(p) < 2:
		return opEqual
	case strings.HasPrefix(p, ">="):
		return opMoreEqual
	case strings.HasPrefix(p, "<="):
		return opLessEqual
	case strings.HasPrefix(p, ">"):
		return opMore
	case strings.HasPrefix(p, "<"):
		return opLess
	case strings.HasPrefix(p, "!"):
		return opNotEqual
	case reNotInRange.MatchString(p):
		return opNotInRange
	case reInRange.MatchString(p):
		return opInRange
	}
	return opEqual
}

// strPattern is a compiled string pattern: alternatives ("|") of
// conjunctions ("&") of comparisons.
type strPattern struct {
	src  string
	alts [][]*comparison
}

// comparison is one operator and its operand, with the operand parsed as
// a duration and a quantity once. A range is two comparisons joined.
type comparison struct {
	op       op
	operand  string
	dur      time.Duration
	durOK    bool
	qty      resource.Quantity
	qtyOK    bool
	lo, hi   *comparison // ranges: >= lo and <= hi; not in range: < lo or > hi
	malfomed bool        // a range the operator test saw but the split did not
}

func compileString(p string) *strPattern {
	sp := &strPattern{src: p}
	for _, alt := range strings.Split(p, "|") {
		var conj []*comparison
		for _, c := range strings.Split(strings.Trim(alt, " "), "&") {
			conj = append(conj, compileComparison(strings.Trim(c, " ")))
		}
		sp.alts = append(sp.alts, conj)
	}
	return sp
}

func compileComparison(p string) *comparison {
	o := operatorOf(p)
	switch o {
	case opInRange, opNotInRange:
		re, lo, hi := reInRange, opMoreEqual, opLessEqual
		if o == opNotInRange {
			re, lo, hi = reNotInRange, opLess, opMore
		}
		m := re.FindStringSubmatch(p)
		if m == nil {
			return &comparison{op: o, malfomed: true}
		}
		return &comparison{op: o, lo: operand(lo, m[1]), hi: operand(hi, m[2])}
	}
	return operand(o, strings.TrimSpace(p[len(opPrefix[o]):]))
}

func operand(o op, s string) *comparison {
	c := &comparison{op: o, operand: s}
	if d, err := time.ParseDuration(s); err == nil {
		c.dur, c.durOK = d, true
	}
	if q, err := quantity.Parse(s); err == nil {
		c.qty, c.qtyOK = q, true
	}
	return c
}

// IsRange reports whether a string pattern is a range ("1-10").
func IsRange(p string) bool { return operatorOf(p) == opInRange }

// MatchString reports whether the string value matches the string
// pattern p (Kyverno's string patterns: what a condition's Equals and a
// validation pattern's string leaves mean).
func MatchString(value, p string) bool { return compileString(p).match(value) }

// match is Kyverno's string pattern test of a value (a scalar of the
// object).
func (sp *strPattern) match(v any) bool {
	if s, ok := v.(string); ok && s == sp.src {
		return true
	}
	for _, conj := range sp.alts {
		ok := true
		for _, c := range conj {
			if !c.match(v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (c *comparison) match(v any) bool {
	switch c.op {
	case opInRange:
		return !c.malfomed && c.lo.match(v) && c.hi.match(v)
	case opNotInRange:
		return !c.malfomed && (c.lo.match(v) || c.hi.match(v))
	}
	if c.durOK || c.qtyOK {
		if s, ok := numberText(v); ok {
			if c.durOK {
				if d, err := time.ParseDuration(s); err == nil {
					return ordered(c.op, cmpDuration(d, c.dur))
				}
			}
			if c.qtyOK {
				if q, err := quantity.Parse(s); err == nil {
					return ordered(c.op, q.Cmp(c.qty))
				}
			}
		}
	}
	if c.op != opEqual && c.op != opNotEqual {
		return false // ordering is not defined on strings
	}
	s, ok := scalarText(v)
	if !ok {
		return false
	}
	m := lang.MatchWildcard(c.operand, s)
	if c.op == opNotEqual {
		return !m
	}
	return m
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ordered decides an operator from c, the sign of value - operand.
func ordered(o op, c int) bool {
	switch o {
	case opEqual:
		return c == 0
	case opNotEqual:
		return c != 0
	case opMore:
		return c > 0
	case opLess:
		return c < 0
	case opMoreEqual:
		return c >= 0
	case opLessEqual:
		return c <= 0
	}
	return false
}

// numberText is a value as Kyverno reads it for a duration or quantity:
// an absent value is "0", a fraction is printed with six decimals;
// booleans, maps and lists are not numbers.
func numberText(v any) (string, bool) {
	switch t := scalar(v).(type) {
	case nil:
		return "0", true
	case string:
		return t, true
	case int64:
		return strconv.FormatInt(t, 10), true
	case float64:
		return fmt.Sprintf("%f", t), true
	}
	return "", false
}

// scalarText is a value as Kyverno reads it for a wildcard: fractions in
// exponent form (1.5 is "1.5E+00"); an absent value has no text.
func scalarText(v any) (string, bool) {
	switch t := scalar(v).(type) {
	case string:
		return t, true
	case int64:
		return strconv.FormatInt(t, 10), true
	case float64:
		return strconv.FormatFloat(t, 'E', -1, 64), true
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}
