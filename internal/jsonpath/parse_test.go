package jsonpath

import (
	"errors"
	"strings"
	"testing"
)

// validExprs maps sources to their canonical form.
var validExprs = []struct {
	src, want string
}{
	// roots and name steps
	{`$`, `$`},
	{`@`, `@`},
	{`$.kind`, `$.kind`},
	{`$['kind']`, `$.kind`},
	{`$["kind"]`, `$.kind`},
	{`@.metadata.name`, `@.metadata.name`},
	{`$.metadata.labels["app.kubernetes.io/name"]`, `$.metadata.labels["app.kubernetes.io/name"]`},
	{`$['a-b']`, `$["a-b"]`},
	{`$['']`, `$[""]`},
	{`$["a\"b"]`, `$["a\"b"]`},
	{`$['it\'s']`, `$["it's"]`},
	{`$._x1`, `$._x1`},
	{`$.0abc`, `$["0abc"]`},
	{`$.héllo`, `$["héllo"]`},
	{`$.true`, `$.true`},
	{`$.length`, `$.length`},
	{` $ .a .b `, `$.a.b`},
	{`$.a [ 0 ]`, `$.a[0]`},
	// index steps
	{`$[0]`, `$[0]`},
	{`$.a[-1]`, `$.a[-1]`},
	{`$.a[- 2]`, `$.a[-2]`},
	{`$.a[0][1]`, `$.a[0][1]`},
	// wildcards
	{`$.*`, `$[*]`},
	{`$[*]`, `$[*]`},
	{`$.*.x`, `$[*].x`},
	{`$.a[ * ]`, `$.a[*]`},
	// recursive descent
	{`$..name`, `$..name`},
	{`$..*`, `$..[*]`},
	{`$..[*]`, `$..[*]`},
	{`$..[0]`, `$..[0]`},
	{`$..["x"]`, `$..x`},
	{`$..['a b']`, `$..["a b"]`},
	{`$.. [1,2]`, `$..[1,2]`},
	{`$..[?(@.x)]`, `$..[?(@.x)]`},
	{`$..a..b`, `$..a..b`},
	{`$.spec.containers..ports[?@.containerPort >= 80]`, `$.spec.containers..ports[?(@.containerPort >= 80)]`},
	// unions
	{`$[0,1]`, `$[0,1]`},
	{`$['a','b']`, `$["a","b"]`},
	{`$[ 0 , -1 ]`, `$[0,-1]`},
	{`$["a",0]`, `$["a",0]`},
	{`$["a b", "c"]`, `$["a b","c"]`},
	// slices
	{`$[1:3]`, `$[1:3]`},
	{`$[::2]`, `$[::2]`},
	{`$[:]`, `$[:]`},
	{`$[::]`, `$[:]`},
	{`$[1:]`, `$[1:]`},
	{`$[:-1]`, `$[:-1]`},
	{`$[::-1]`, `$[::-1]`},
	{`$[1:2:3]`, `$[1:2:3]`},
	{`$[ -3 : ]`, `$[-3:]`},
	{`$[::1]`, `$[::1]`},
	// filters
	{`$.a[? @.x == 1]`, `$.a[?(@.x == 1)]`},
	{`$.a[?@.x == 1]`, `$.a[?(@.x == 1)]`},
	{`$.a[?(@.x == 1)]`, `$.a[?(@.x == 1)]`},
	{`$.a[?((@.x == 1))]`, `$.a[?(@.x == 1)]`},
	{`$.a[?(@.x)]`, `$.a[?(@.x)]`},
	{`$.a[?(!@.x)]`, `$.a[?(!@.x)]`},
	{`$.a[?(@.x) && (@.y)]`, `$.a[?(@.x && @.y)]`},
	{`$.a[?(@.b[?(@.c == $.d)])]`, `$.a[?(@.b[?(@.c == $.d)])]`},
	{`$.spec.containers[? @.image =~ "nginx:1\\.14\\..*"]`, `$.spec.containers[?(@.image =~ "nginx:1\\.14\\..*")]`},
	{`$.spec.externalIPs[?@ !~ "123\\.12\\.34\\..*"]`, `$.spec.externalIPs[?(@ !~ "123\\.12\\.34\\..*")]`},
	{`$.spec.template.spec.containers[? isUndefined(@.securityContext) || isNotEmpty(@.securityContext)]`,
		`$.spec.template.spec.containers[?(isUndefined(@.securityContext) || isNotEmpty(@.securityContext))]`},
	// literals
	{`1`, `1`},
	{`0`, `0`},
	{`1.50`, `1.50`},
	{`1e5`, `1e5`},
	{`0.5E-3`, `0.5E-3`},
	{`-1`, `-1`},
	{`- 1`, `-1`},
	{`-(1)`, `-1`},
	{`--1`, `--1`},
	{`-(-1)`, `--1`},
	{`true`, `true`},
	{`false`, `false`},
	{`null`, `null`},
	{`'x'`, `"x"`},
	{`"\u00e9\t\n\r\b\f\/"`, `"é\t\n\r\b\f/"`},
	{`"\ud83d\ude00"`, `"😀"`},
	{`"\u0001"`, `"\u0001"`},
	{`"a\\b"`, `"a\\b"`},
	{"\"raw\ttab\"", `"raw\ttab"`},
	// operators and precedence
	{`1 + 2 * 3`, `1 + 2 * 3`},
	{`(1 + 2) * 3`, `(1 + 2) * 3`},
	{`1 - (2 - 3)`, `1 - (2 - 3)`},
	{`(1 - 2) - 3`, `1 - 2 - 3`},
	{`1-2`, `1 - 2`},
	{`$.a-1`, `$.a - 1`},
	{`$.a*2`, `$.a * 2`},
	{`$.a - -1`, `$.a - -1`},
	{`-$.a`, `-$.a`},
	{`-(1 + 2)`, `-(1 + 2)`},
	{`6 / 3 % 2`, `6 / 3 % 2`},
	{`6 / (3 % 2)`, `6 / (3 % 2)`},
	{`!($.a == 1)`, `!($.a == 1)`},
	{`!!$.a`, `!!$.a`},
	{`!-1`, `!-1`},
	{`'x' + "y"`, `"x" + "y"`},
	{`true && false || null == null`, `true && false || null == null`},
	{`$.a || $.b && $.c`, `$.a || $.b && $.c`},
	{`($.a || $.b) && $.c`, `($.a || $.b) && $.c`},
	{`$.a == 1 == true`, `$.a == 1 == true`},
	{`$.a == (1 == true)`, `$.a == (1 == true)`},
	{`$.a<1`, `$.a < 1`},
	{`$.a<=1`, `$.a <= 1`},
	{`$.a>1`, `$.a > 1`},
	{`$.a>=1`, `$.a >= 1`},
	{`$.a!=1`, `$.a != 1`},
	{`1 < 2 == 2 > 1`, `1 < 2 == 2 > 1`},
	{`(1 < 2) + 1`, `(1 < 2) + 1`},
	{`$.a =~ 'x\\.y'`, `$.a =~ "x\\.y"`},
	{`$.a!~"x"`, `$.a !~ "x"`},
	{`$.a =~ "x" == true`, `$.a =~ "x" == true`},
	// functions
	{`length($.a)`, `length($.a)`},
	{`isDefined ( $.a )`, `isDefined($.a)`},
	{`isUndefined($.a[*])`, `isUndefined($.a[*])`},
	{`isEmpty(@)`, `isEmpty(@)`},
	{`isNotEmpty($.a) && length($.a) > 1`, `isNotEmpty($.a) && length($.a) > 1`},
	{`length($.spec.containers) > 1`, `length($.spec.containers) > 1`},
	{`isDefined($.metadata.labels["color"])`, `isDefined($.metadata.labels.color)`},
	{`length($.spec.containers[? isUndefined(@.securityContext.runAsNonRoot)])`, `length($.spec.containers[?(isUndefined(@.securityContext.runAsNonRoot))])`},
	{`length(1 + 2)`, `length(1 + 2)`},
}

var invalidExprs = []struct {
	src  string
	pos  int
	frag string
}{
	{``, 0, "empty expression"},
	{`   `, 0, "empty expression"},
	{`$.`, 2, "expected a name or '*' right after '.'"},
	{`$. a`, 2, "right after '.'"},
	{`$.a. b`, 4, "right after '.'"},
	{`$.-a`, 2, "right after '.'"},
	{`$.[0]`, 2, "right after '.'"},
	{`$[`, 2, "unexpected end of expression"},
	{`$[]`, 2, "empty brackets"},
	{`$[0`, 3, "expected ',' or ']'"},
	{`$['a'`, 5, "expected ',' or ']'"},
	{`$['a',]`, 6, "expected a quoted name or an integer"},
	{`$[1.5]`, 2, "index 1.5 is not an integer"},
	{`$[1e2]`, 2, "not an integer"},
	{`$[a]`, 2, "expected a quoted name or an integer"},
	{`$[::0]`, 4, "slice step cannot be zero"},
	{`$[1:2,3]`, 5, "expected ']'"},
	{`$[1:2:3:4]`, 7, "expected ']'"},
	{`$[99999999999999999999]`, 2, "out of range"},
	{`$[-99999999999999999999]`, 2, "out of range"},
	{`$[*`, 3, "expected ']'"},
	{`$["a",*]`, 6, "expected a quoted name or an integer"},
	{`$[?]`, 3, "expected an expression"},
	{`$[?(@.a]`, 7, "expected ')'"},
	{`$[?(@.a)`, 8, "expected ']'"},
	{`$..`, 3, "after '..'"},
	{`$...a`, 3, "after '..'"},
	{`$..(`, 3, "after '..'"},
	{`$ $`, 2, "unexpected '$'"},
	{`$.a $.b`, 4, "unexpected '$'"},
	{`$.a ==`, 6, "expected an expression"},
	{`$.a = 1`, 4, "did you mean '=='"},
	{`$.a & $.b`, 4, "did you mean '&&'"},
	{`$.a | $.b`, 4, "did you mean '||'"},
	{`"abc`, 0, "unterminated string"},
	{`'abc"`, 0, "unterminated string"},
	{`"abc\`, 0, "unterminated string"},
	{`"a\.b"`, 2, `unknown escape \. in string (write \\. for a backslash)`},
	{`"a\d"`, 2, `unknown escape \d in string (write \\d for a backslash)`},
	{`"\u12"`, 1, "4 hex digits"},
	{`"\u12zz"`, 1, "4 hex digits"},
	{`"\ud800"`, 1, "surrogate"},
	{`"\ud800\u0041"`, 1, "surrogate"},
	{`"\udc00"`, 1, "surrogate"},
	{`foo($.a)`, 0, "unknown function foo"},
	{`1 + Length($.a)`, 4, "unknown function Length"},
	{`length($.a, $.b)`, 0, "function length takes 1 argument, got 2"},
	{`isEmpty()`, 0, "function isEmpty takes 1 argument, got 0"},
	{`length($.a`, 10, "expected ')'"},
	{`bar`, 0, "unexpected identifier bar, expected an expression"},
	{`$.a == True`, 7, "unexpected identifier True"},
	{`$.a =~ $.b`, 7, "right operand of =~ must be a string literal"},
	{`$.a !~ 1`, 7, "right operand of !~ must be a string literal"},
	{`$.a =~ "x" + "y"`, 11, "right operand of =~ must be a string literal"},
	{`$.a =~ "("`, 7, "invalid regular expression"},
	{`$.labels.app-name == "x"`, 13, `a name containing '-' must be quoted`},
	{`01`, 0, "leading zero"},
	{`1.`, 2, "expected a digit after the decimal point"},
	{`1.e5`, 2, "expected a digit after the decimal point"},
	{`1e`, 2, "expected a digit in the exponent"},
	{`1e+`, 3, "expected a digit in the exponent"},
	{`1e999`, 0, "number 1e999 out of range"},
	{`.5`, 0, "unexpected '.'"},
	{`(1`, 2, "expected ')'"},
	{`1)`, 1, "unexpected ')'"},
	{`()`, 1, "unexpected ')'"},
	{`#`, 0, "unexpected character '#'"},
	{`$.a ~ 1`, 4, "unexpected character '~'"},
	{"$.a == \xff", 7, "invalid UTF-8"},
	{`1 2`, 2, "unexpected number 2"},
	{`"a" "b"`, 4, `unexpected string "b"`},
	{`!`, 1, "expected an expression"},
}

func TestParseValid(t *testing.T) {
	for _, tt := range validExprs {
		e, err := Parse(tt.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.src, err)
			continue
		}
		if got := e.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.src, got, tt.want)
		}
		if got := e.Source(); got != tt.src {
			t.Errorf("Parse(%q).Source() = %q", tt.src, got)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, tt := range invalidExprs {
		e, err := Parse(tt.src)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want error", tt.src, e)
			continue
		}
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q): error %v does not wrap ErrSyntax", tt.src, err)
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q): error %T is not a *SyntaxError", tt.src, err)
			continue
		}
		if se.Pos != tt.pos || !strings.Contains(se.Msg, tt.frag) {
			t.Errorf("Parse(%q): got pos %d %q, want pos %d containing %q", tt.src, se.Pos, se.Msg, tt.pos, tt.frag)
		}
	}
}

// TestRoundTrip checks that String is re-parsable and a fixed point.
func TestRoundTrip(t *testing.T) {
	for _, tt := range validExprs {
		e := MustParse(tt.src)
		e2, err := Parse(e.String())
		if err != nil {
			t.Errorf("Parse(%q) (canonical form of %q): %v", e.String(), tt.src, err)
			continue
		}
		if e2.String() != e.String() {
			t.Errorf("canonical form not stable: %q -> %q -> %q", tt.src, e.String(), e2.String())
		}
		if e2.IsQuery() != e.IsQuery() || e2.Definite() != e.Definite() || e2.Captures() != e.Captures() {
			t.Errorf("%q and its canonical form %q differ in IsQuery/Definite/Captures", tt.src, e.String())
		}
	}
}

func TestSyntaxErrorText(t *testing.T) {
	_, err := Parse(`$.a[0`)
	want := "jsonpath: syntax error at column 6: unexpected end of expression, expected ',' or ']'"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestLimits(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("(", n) + "1" + strings.Repeat(")", n) }
	if _, err := Parse(nest(MaxDepth)); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	var se *SyntaxError
	if _, err := Parse(nest(MaxDepth + 1)); !errors.As(err, &se) || se.Pos != MaxDepth || !strings.Contains(se.Msg, "nested too deeply") {
		t.Errorf("depth %d: got %v", MaxDepth+1, err)
	}
	filters := func(n int) string { return "$" + strings.Repeat("[?(@", n) + strings.Repeat(")]", n) }
	if _, err := Parse(filters(MaxDepth / 2)); err != nil {
		t.Errorf("%d nested filters: %v", MaxDepth/2, err)
	}
	if _, err := Parse(filters(MaxDepth/2 + 1)); !errors.As(err, &se) || se.Pos != 1+4*MaxDepth/2+1 {
		t.Errorf("%d nested filters: got %v", MaxDepth/2+1, err)
	}
	if _, err := Parse(strings.Repeat("!", MaxDepth+1) + "true"); !errors.Is(err, ErrSyntax) {
		t.Errorf("deep unary: got %v", err)
	}
	long := "1" + strings.Repeat(" + 1", (MaxSourceLen-1)/4)
	if len(long) > MaxSourceLen {
		t.Fatal("bad test")
	}
	if _, err := Parse(long); err != nil {
		t.Errorf("source of %d bytes: %v", len(long), err)
	}
	if _, err := Parse(long + " + 1"); !errors.As(err, &se) || !strings.Contains(se.Msg, "too long") {
		t.Errorf("source of %d bytes: got %v", len(long)+4, err)
	}
}

// TestCanonicalFormLimit checks that every expression Parse accepts has a
// canonical form within MaxSourceLen, so that String parses back. Issue 13:
// FuzzParse found a 3,009-byte expression of raw control characters whose
// canonical form, a 6-byte \u escape for each, was 18,009 bytes and did not
// parse back. An expression whose canonical form would exceed the limit is
// a syntax error.
func TestCanonicalFormLimit(t *testing.T) {
	ctl := func(n int) string { return `$.a[?(@ == "` + strings.Repeat("\x01", n) + `")]` }
	ops := func(n int) string { return "1" + strings.Repeat("+1", n) } // canonical "1 + 1 + ..."
	tests := []struct {
		name string
		src  string
		ok   bool
	}{
		{"3,000 control characters", ctl(3000), false},
		{"control characters within the limit", ctl((MaxSourceLen - 20) / 6), true},
		{"control characters just over the limit", ctl((MaxSourceLen-20)/6 + 2), false},
		{"operators spaced out over the limit", ops(MaxSourceLen / 4), false},
		{"operators spaced out within the limit", ops((MaxSourceLen - 1) / 4), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.src) > MaxSourceLen {
				t.Fatalf("bad test: source of %d bytes", len(tt.src))
			}
			e, err := Parse(tt.src)
			if !tt.ok {
				var se *SyntaxError
				if !errors.As(err, &se) || !strings.Contains(se.Msg, "canonical form") || se.Pos != 0 {
					t.Fatalf("Parse(%d bytes) = %v, want a syntax error at 0 about the canonical form", len(tt.src), err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%d bytes): %v", len(tt.src), err)
			}
			canon := e.String()
			if len(canon) > MaxSourceLen {
				t.Fatalf("canonical form of %d bytes, over MaxSourceLen", len(canon))
			}
			e2, err := Parse(canon)
			if err != nil {
				t.Fatalf("the canonical form (%d bytes) does not parse back: %v", len(canon), err)
			}
			if e2.String() != canon {
				t.Fatal("canonical form not stable")
			}
		})
	}
}

func TestQueryProperties(t *testing.T) {
	tests := []struct {
		src             string
		query, definite bool
		captures        int
	}{
		{`$`, true, true, 0},
		{`@`, true, true, 0},
		{`$.a.b[0]["c d"][-1]`, true, true, 0},
		{`($.a)`, true, true, 0},
		{`$.a[*]`, true, false, 1},
		{`$.*`, true, false, 1},
		{`$.a[0,1]`, true, false, 1},
		{`$.a[1:]`, true, false, 1},
		{`$.a[?(@.x)]`, true, false, 1},
		{`$..a`, true, false, 1},
		{`$..*`, true, false, 2},
		{`$..[0]`, true, false, 1},
		{`$..[?(@.x)]`, true, false, 2},
		{`$.a[*].b[?(@)]..c`, true, false, 3},
		{`$.a == 1`, false, false, 0},
		{`1`, false, false, 0},
		{`length($.a[*])`, false, false, 0},
	}
	for _, tt := range tests {
		e := MustParse(tt.src)
		if e.IsQuery() != tt.query || e.Definite() != tt.definite || e.Captures() != tt.captures {
			t.Errorf("%q: IsQuery=%v Definite=%v Captures=%d, want %v %v %d",
				tt.src, e.IsQuery(), e.Definite(), e.Captures(), tt.query, tt.definite, tt.captures)
		}
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Error("MustParse did not panic")
		}
	}()
	MustParse(`$[`)
}
