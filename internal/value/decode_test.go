package value

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// refDecode is what Decode must agree with: encoding/json with UseNumber,
// accepting exactly what json.Unmarshal accepts.
func refDecode(data []byte) (any, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil {
			err = errors.New("json.Valid rejects it")
		}
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func nest(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

func readDeployment(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile("testdata/deployment.json")
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

type jn = json.Number

// decodeCases are inputs with the tree Decode must build, or a nil want and
// ok false when it must fail. They also seed the fuzz targets.
var decodeCases = []struct {
	in   string
	want any
	ok   bool
}{
	// An escape and invalid UTF-8: the text outgrows the literal (each
	// invalid byte becomes U+FFFD's three).
	{"\"\\n\xff\xfe\xfd\"", "\n\uFFFD\uFFFD\uFFFD", true},
	{"\"\\\"\"", "\"", true},
	{"\"\\u0000\"", "\x00", true},
	// Whole input.
	{``, nil, false},
	{" \t\r\n", nil, false},
	{` null `, nil, true},
	{"\t\r\n true\n", true, true},
	{`{} {}`, nil, false},
	{`{}x`, nil, false},
	{`{},`, nil, false},
	{`{}]`, nil, false}, // the former json.Decoder-based Decode accepted this
	{`1}`, nil, false},
	{`"x"]]]garbage`, nil, false},
	{`[1,2]]`, nil, false},
	{`1 2`, nil, false},
	{"\ufeff{}", nil, false}, // BOM
	{"{}\ufeff", nil, false},
	{"\f1", nil, false}, // form feed is not JSON whitespace
	{"\u00a01", nil, false},
	{"1\x00", nil, false},
	// Literals.
	{`true`, true, true},
	{`false`, false, true},
	{`tru`, nil, false},
	{`trUe`, nil, false},
	{`True`, nil, false},
	{`nul`, nil, false},
	{`nulll`, nil, false},
	{`falsey`, nil, false},
	{`[true,false,null]`, []any{true, false, nil}, true},
	// Numbers keep their text.
	{`0`, jn("0"), true},
	{`-0`, jn("-0"), true},
	{`-0.0e-0`, jn("-0.0e-0"), true},
	{`1e400`, jn("1e400"), true},
	{`-1E+400`, jn("-1E+400"), true},
	{`123456789012345678901234567890`, jn("123456789012345678901234567890"), true},
	{`0.000001`, jn("0.000001"), true},
	{`1.50`, jn("1.50"), true},
	{`[1,2.5e3,-7]`, []any{jn("1"), jn("2.5e3"), jn("-7")}, true},
	{`01`, nil, false},
	{`-01`, nil, false},
	{`00`, nil, false},
	{`-`, nil, false},
	{`- 1`, nil, false},
	{`+1`, nil, false},
	{`.5`, nil, false},
	{`1.`, nil, false},
	{`1.e2`, nil, false},
	{`1e`, nil, false},
	{`1e+`, nil, false},
	{`1e+-2`, nil, false},
	{`0x10`, nil, false},
	{`NaN`, nil, false},
	{`Infinity`, nil, false},
	{`-Infinity`, nil, false},
	{`[1 2]`, nil, false},
	// Strings.
	{`""`, "", true},
	{`"abc"`, "abc", true},
	{`"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t", true},
	{`"\u0041\u00e9\u20AC"`, "Aé€", true},
	{`"\u0000"`, "\x00", true},
	{`"\ud83d\ude00"`, "😀", true},
	{`"\uD83D\uDE00x"`, "😀x", true},
	{`"\ud83d"`, "\uFFFD", true},
	{`"\ude00"`, "\uFFFD", true},
	{`"\ude00\ud83d"`, "\uFFFD\uFFFD", true},
	{`"\ud83dx"`, "\uFFFDx", true},
	{`"\ud83d\u0041"`, "\uFFFDA", true},
	{`"\ud83d\ud83d\ude00"`, "\uFFFD😀", true},
	{`"\ud83d\n"`, "\uFFFD\n", true},
	{`"\ud83d\\ude00"`, "\uFFFD\\ude00", true},
	{`"\u2028\u2029"`, "\u2028\u2029", true},
	{"\"\u2028\u2029\"", "\u2028\u2029", true},
	{"\"\xff\"", "\uFFFD", true},
	{"\"a\xc3(\"", "a\uFFFD(", true},
	{"\"\xed\xa0\x80\"", "\uFFFD\uFFFD\uFFFD", true}, // an encoded surrogate
	{"\"\xe2\x82\"", "\uFFFD\uFFFD", true},
	{"\"\xf4\x90\x80\x80\"", "\uFFFD\uFFFD\uFFFD\uFFFD", true}, // above U+10FFFF
	{"\"\xc0\xaf\"", "\uFFFD\uFFFD", true},                     // overlong
	{"\"\xff\\n\xfe\"", "\uFFFD\n\uFFFD", true},
	{"\"é\xffé\"", "é\uFFFDé", true},
	{"\"\uFFFD\"", "\uFFFD", true},
	{"\"\x7f\"", "\x7f", true},
	{"{\"\xff\":1}", map[string]any{"\uFFFD": jn("1")}, true},
	{`"\'"`, nil, false},
	{`"\x41"`, nil, false},
	{`"\U0041"`, nil, false},
	{`"\u004"`, nil, false},
	{`"\u004g"`, nil, false},
	{`"\ud83d\u"`, nil, false},
	{`"\ud83d\ude0"`, nil, false},
	{`"\`, nil, false},
	{`"\u00`, nil, false},
	{`"abc`, nil, false},
	{`"`, nil, false},
	{"\"\t\"", nil, false},
	{"\"\n\"", nil, false},
	{"\"\x00\"", nil, false},
	{"\"\x1f\"", nil, false},
	{"\"\xff\t\"", nil, false},
	{`'a'`, nil, false},
	// Arrays and objects.
	{`[]`, []any{}, true},
	{` [ ] `, []any{}, true},
	{`{}`, map[string]any{}, true},
	{`[[],{}]`, []any{[]any{}, map[string]any{}}, true},
	{` { "a" : [ 1 , { "b" : null } ] , "c" : "" } `, map[string]any{"a": []any{jn("1"), map[string]any{"b": nil}}, "c": ""}, true},
	{`{"a":1,"a":2}`, map[string]any{"a": jn("2")}, true},
	{`{"a":{"x":1},"b":0,"a":[]}`, map[string]any{"a": []any{}, "b": jn("0")}, true},
	{`{"a\u0062":1,"ab":2}`, map[string]any{"ab": jn("2")}, true},
	{`{"":""}`, map[string]any{"": ""}, true},
	{`[1,]`, nil, false},
	{`[,1]`, nil, false},
	{`[`, nil, false},
	{`[1`, nil, false},
	{`[1,`, nil, false},
	{`]`, nil, false},
	{`{"a":1,}`, nil, false},
	{`{,}`, nil, false},
	{`{"a"}`, nil, false},
	{`{"a":}`, nil, false},
	{`{"a" 1}`, nil, false},
	{`{"a"::1}`, nil, false},
	{`{1:2}`, nil, false},
	{`{a:1}`, nil, false},
	{`{'a':1}`, nil, false},
	{`{"a":1 "b":2}`, nil, false},
	{`{"a":1]`, nil, false},
	{`[1}`, nil, false},
	{`{`, nil, false},
	{`{"a`, nil, false},
	{`{"a"`, nil, false},
	{`{"a":`, nil, false},
	{`{"a":1`, nil, false},
	{`}`, nil, false},
	{nest("[", "]", maxDepth), nil, true},
	{nest("[", "]", maxDepth+1), nil, false},
	{strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth), nil, true},
	{strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1), nil, false},
	{strings.Repeat("[", maxDepth+1), nil, false},
	{strings.Repeat("[", 100000), nil, false},
}

func TestDecode(t *testing.T) {
	for _, tt := range decodeCases {
		name := tt.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		got, err := Decode([]byte(tt.in))
		ref, refErr := refDecode([]byte(tt.in))
		if (refErr == nil) != tt.ok {
			t.Errorf("%q: bad test case: encoding/json says %v", name, refErr)
		}
		if tt.ok {
			if err != nil {
				t.Errorf("Decode(%q): %v", name, err)
				continue
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode(%q) = %#v, want %#v", name, got, tt.want)
			}
			if !reflect.DeepEqual(got, ref) {
				t.Errorf("Decode(%q) = %#v, encoding/json gives %#v", name, got, ref)
			}
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Decode(%q) = %#v, %v; want a *SyntaxError", name, got, err)
			continue
		}
		if se.Offset < 0 || se.Offset > len(tt.in) {
			t.Errorf("Decode(%q): offset %d out of range", name, se.Offset)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, "unexpected end of JSON input at offset 0"},
		{`  `, "unexpected end of JSON input at offset 2"},
		{`{"a":x}`, "invalid character 'x' looking for beginning of value at offset 5"},
		{`[1,2`, "unexpected end of JSON input at offset 4"},
		{`{"a" 1}`, "invalid character '1' after object key at offset 5"},
		{`{"a":1 "b":2}`, `invalid character '"' after object key:value pair at offset 7`},
		{`[1 2]`, "invalid character '2' after array element at offset 3"},
		{`{} {}`, "invalid character '{' after top-level value at offset 3"},
		{`{}]`, "invalid character ']' after top-level value at offset 2"},
		{`{1:2}`, "invalid character '1' looking for beginning of object key string at offset 1"},
		{`trux`, "invalid character 'x' in literal true (expecting 'e') at offset 3"},
		{`-x`, "invalid character 'x' in numeric literal at offset 1"},
		{`1.x`, "invalid character 'x' after decimal point in numeric literal at offset 2"},
		{`1ex`, "invalid character 'x' in exponent of numeric literal at offset 2"},
		{`01`, "invalid character '1' after top-level value at offset 1"},
		{"\"a\tb\"", `invalid character '\t' in string literal at offset 2`},
		{`"\x"`, "invalid character 'x' in string escape code at offset 2"},
		{`"\'"`, `invalid character '\'' in string escape code at offset 2`},
		{`"\u12x4"`, `invalid character 'x' in \u hexadecimal character escape at offset 5`},
		{"\ufeff1", "invalid character 'ï' looking for beginning of value at offset 0"},
		{nest("[", "]", maxDepth+1), "exceeded max depth at offset 10000"},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Decode(%.20q) error = %v, want %s", tt.in, err, tt.want)
		}
	}
}

func TestDecodeDeployment(t *testing.T) {
	data := readDeployment(t)
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	want, err := refDecode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("Decode and encoding/json disagree on testdata/deployment.json")
	}
	la := got.(map[string]any)["metadata"].(map[string]any)["annotations"].(map[string]any)["kubectl.kubernetes.io/last-applied-configuration"].(string)
	if _, err := Decode([]byte(la)); err != nil {
		t.Fatalf("last-applied-configuration: %v", err)
	}
}

func TestDecodeDoesNotAliasInput(t *testing.T) {
	data := []byte(`{"k":"v","a":["s",1]}`)
	v, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = 'x'
	}
	want := map[string]any{"k": "v", "a": []any{"s", jn("1")}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("tree changed with its input: %#v", v)
	}
}

// jsonDecode is the encoding/json-based Decode that the hand-written one
// replaced, kept as the benchmark's baseline.
func jsonDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// BenchmarkDecode compares Decode with encoding/json on a Deployment as
// the API server sends it in an AdmissionReview.
func BenchmarkDecode(b *testing.B) {
	data := readDeployment(b)
	b.Run("value", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonDecode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRuns checks plainRun and stringRun, which look at 8 bytes at a time,
// against the byte-by-byte definitions, on every byte value at every
// position of a word and on random mixes.
func TestRuns(t *testing.T) {
	plain := func(c byte) bool { return c >= ' ' && c != '"' && c != '\\' && c < utf8.RuneSelf }
	inString := func(c byte) bool { return c >= ' ' && c != '"' && c != '\\' }
	check := func(data []byte, j int) {
		t.Helper()
		wantPlain, wantString := len(data), len(data)
		for k := len(data) - 1; k >= j; k-- {
			if !plain(data[k]) {
				wantPlain = k
			}
			if !inString(data[k]) {
				wantString = k
			}
		}
		if got := plainRun(data, j); got != wantPlain {
			t.Fatalf("plainRun(%q, %d) = %d, want %d", data, j, got, wantPlain)
		}
		if got := stringRun(data, j); got != wantString {
			t.Fatalf("stringRun(%q, %d) = %d, want %d", data, j, got, wantString)
		}
	}
	for c := 0; c < 256; c++ {
		for p := 0; p < 20; p++ {
			data := bytes.Repeat([]byte{'a'}, 20)
			data[p] = byte(c)
			for j := 0; j <= p; j++ {
				check(data, j)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'a', ' ', '"', '\\', 0x00, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0x9f, 0xa0, 0xa2, 0xdc, 0xff}
	for range 20000 {
		data := make([]byte, r.IntN(40))
		for k := range data {
			if r.IntN(4) == 0 {
				data[k] = alphabet[r.IntN(len(alphabet))]
			} else {
				data[k] = byte(r.IntN(256))
			}
		}
		check(data, r.IntN(len(data)+1))
	}
}

// TestEndString checks endString (a word at a time to each quote or
// backslash, quoteRun) against the byte-by-byte definition: data mostly quotes,
// backslashes and the bytes next to them in value (a borrow's traps:
// '#' and ']' differ from them in the lowest bit), and bytes from 0x80
// up, from every start.
func TestEndString(t *testing.T) {
	want := func(data []byte, j int) int {
		for j < len(data) {
			switch data[j] {
			case '"':
				return j + 1
			case '\\':
				j += 2
			default:
				j++
			}
		}
		return -1
	}
	alphabet := []byte{'"', '\\', '\\', '\\', '#', ']', '!', '[', 'a', 0x80, 0xA2, 0xDC, 0xFF, 0}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 3000 {
		data := make([]byte, 1+n%40)
		for i := range data {
			data[i] = alphabet[r.IntN(len(alphabet))]
			if n%3 == 0 && r.IntN(3) > 0 {
				data[i] = 'x' // long runs too
			}
		}
		for j := range data {
			if got, w := endString(data, j), want(data, j); got != w {
				t.Fatalf("endString(%q, %d) = %d, want %d", data, j, got, w)
			}
		}
	}
}
