package value

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{json.Number("1000000"), "1000000"},
		{json.Number("1e6"), "1000000"},
		{json.Number("1.50"), "1.5"},
		{json.Number("-0.25"), "-0.25"},
		{float64(1000000), "1000000"},
		{int64(7), "7"},
		{"abc", "abc"},
		{true, "true"},
		{false, "false"},
		{nil, "null"},
		{map[string]any{"b": json.Number("1"), "a": "<x>"}, `{"a":"<x>","b":1}`},
		{[]any{"a", json.Number("2")}, `["a",2]`},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{json.Number("1"), json.Number("1.0"), true},
		{json.Number("1"), float64(1), true},
		{json.Number("9007199254740993"), json.Number("9007199254740992"), false},
		{json.Number("1"), "1", false},
		{json.Number("1e400"), json.Number("1e400"), true},
		{nil, nil, true},
		{nil, false, false},
		{map[string]any{"a": []any{json.Number("1")}}, map[string]any{"a": []any{json.Number("1e0")}}, true},
		{map[string]any{"a": nil}, map[string]any{}, false},
		{[]any{"a"}, []any{"a", "b"}, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDecodeDeepCopy(t *testing.T) {
	v, err := Decode([]byte(`{"a":[1,{"b":2.5}],"c":null}`))
	if err != nil {
		t.Fatal(err)
	}
	c := DeepCopy(v)
	if !Equal(v, c) {
		t.Fatal("copy differs")
	}
	c.(map[string]any)["a"].([]any)[1].(map[string]any)["b"] = "x"
	if Equal(v, c) {
		t.Fatal("copy shares state with the original")
	}
	if _, err := Decode([]byte(`{} {}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
	b, err := Encode(v)
	if err != nil || string(b) != `{"a":[1,{"b":2.5}],"c":null}` {
		t.Fatalf("Encode = %s, %v", b, err)
	}
}

// FuzzAppendJSON checks that AppendJSON writes what encoding/json writes.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5e3,null,true],"a":"x<>&\u2028\u0001\"\\é"}`, `"\ud800"`, `[{"z":{},"y":[]}]`, `-0`, `"\t\n\r\b\f"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		got, err := AppendJSON(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if want := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON = %s\nencoding/json = %s", got, want)
		}
	})
}

// FuzzAppendString checks AppendString against encoding/json on any
// string: invalid UTF-8, control characters, quotes and backslashes at
// every offset of the eight-byte steps (copyWords, plainRun), into a
// buffer with no room, little room and much room.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", `{"apiVersion":"v1","kind":"Pod"}`, "0123456\"89abcdef\\", "abcdefg\x80hij", "\u2028\u2029 ab\x01cdefgh\x1f", "é\xff\xfeabcdefgh", "abcdefgh\x7f\x20", `{"a":"b","cd":["e\\"f"],"g":{"h":1}}`, "ab\u00e9cdefghij\"klmnopq\u2028rstuvwx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		// Into no room, little room and much room (copyWords' stores).
		for _, room := range []int{0, len(s)/2 + 1, 3*len(s) + 20} {
			if got := AppendString(append(make([]byte, 0, 1+room), 'x'), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
				t.Fatalf("AppendString(%q) with room for %d = %s, encoding/json = %s", s, room, got, want)
			}
		}
	})
}
