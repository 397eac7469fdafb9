package value

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// expandAll decodes every Raw of a tree DecodeLazy made.
func expandAll(v any) any {
	switch t := v.(type) {
	case Raw:
		return expandAll(Expand(t))
	case map[string]any:
		for k, e := range t {
			t[k] = expandAll(e)
		}
	case []any:
		for i, e := range t {
			t[i] = expandAll(e)
		}
	}
	return v
}

// checkLazy checks DecodeLazy on s against Decode and AppendJSON: when it
// accepts s, the tree written back is s, and decoded in full it is
// Decode's; when it refuses a valid object, s is not what AppendJSON writes
// for it, or has a key with an escape or beyond ASCII (not ordered here).
func checkLazy(t *testing.T, s string) {
	t.Helper()
	lazy, ok := DecodeLazy(s)
	full, err := Decode([]byte(s))
	if !ok {
		if _, isObject := full.(map[string]any); err != nil || !isObject {
			return
		}
		again, _ := AppendJSON(nil, full)
		if string(again) == strings.Trim(s, " \t\r\n") && !strings.ContainsAny(s, "\\") && !hasNonASCII(s) && !deep(s) {
			t.Fatalf("DecodeLazy refused the canonical %q", s)
		}
		return
	}
	if err != nil {
		t.Fatalf("DecodeLazy accepted %q, which Decode refuses: %v", s, err)
	}
	s = strings.Trim(s, " \t\r\n") // around the object, as AppendJSON drops it
	got, err := AppendJSON(nil, lazy)
	if err != nil || string(got) != s {
		t.Fatalf("DecodeLazy(%q) written back as %q (%v)", s, got, err)
	}
	if want, _ := AppendJSON(nil, full); string(want) != s {
		t.Fatalf("DecodeLazy accepted %q, which AppendJSON writes %q", s, want)
	}
	if all := expandAll(lazy); !Equal(all, full) {
		t.Fatalf("DecodeLazy(%q) expanded is %#v, Decode gives %#v", s, all, full)
	}
}

func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}

// deep reports whether s nests beyond Decode's limit (refused either way).
func deep(s string) bool { return strings.Count(s, "[")+strings.Count(s, "{") > maxDepth }

func TestDecodeLazy(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{`{"a":1}`, true},
		{`{"a":[],"b":{},"c":[{}],"d":"","e":null,"f":true,"g":false}`, true},
		{`{"a":-0.5e+2,"b":1e400,"c":-0,"d":123456789012345678901234567890}`, true},
		{`{"a":{"b":[1,"x",{"c":"]}\"[{"}],"d":"\\"}}`, true},
		{`{"a":"tab\there","b":"nl\n","c":"\u0001","d":"\"q\"","e":"\\"}`, true},
		{"{\"a\":\"é ∑ 😀\"}", true},
		{`{"a":"\u2028"}`, true},                          // escaped as AppendJSON does
		{"{\"a\":\"\u2028\"}", false},                     // AppendJSON escapes it
		{`{"a":"\u0041"}`, false},                         // AppendJSON writes A
		{`{"a":"\/"}`, false},                             // and /
		{`{"a":"\u003c"}`, false},                         // and < (encoding/json's HTML escape)
		{`{"a":"\t"}`, true},                              // \t is AppendJSON's
		{`{"a":"\u0009"}`, false},                         // \u0009 is not
		{"{\"a\":\"\xff\"}", false},                       // invalid UTF-8 becomes U+FFFD
		{`{"b":1,"a":2}`, false},                          // order
		{`{"a":1,"a":2}`, false},                          // twice
		{`{"a":1, "b":2}`, false},                         // space
		{"{\"a\":1}\n", true},                             // around the object: dropped, as AppendJSON drops it
		{" \t{\"a\":1}\r\n", true},                        //
		{"{\"a\":[1]\n}", false},                          // within
		{`{"a":[1,2 ]}`, false},                           //
		{`{"a\u0062":1}`, false},                          // a key with an escape
		{"{\"é\":1}", false},                              // a key beyond ASCII
		{`[1]`, false},                                    // not an object
		{`"x"`, false},                                    //
		{`{"a":1`, false},                                 // invalid
		{`{"a":01}`, false},                               //
		{`{"a":[1,]}`, false},                             //
		{`{"a":tru}`, false},                              //
		{`{"a":"x}`, false},                               //
		{`{"a":"\x"}`, false},                             //
		{`{"a":` + nest("[", "]", maxDepth) + `}`, false}, // too deep
		{`{"a":` + nest("[", "]", maxDepth-1) + `}`, true},
	} {
		_, ok := DecodeLazy(tc.in)
		if ok != tc.ok {
			in := tc.in
			if len(in) > 80 {
				in = in[:80] + "..."
			}
			t.Errorf("DecodeLazy(%q) ok = %v, want %v", in, ok, tc.ok)
		}
		checkLazy(t, tc.in)
	}
}

// TestDecodeLazyCorpus: the package's corpus, as it is and as AppendJSON
// writes it (always accepted when an object).
func TestDecodeLazyCorpus(t *testing.T) {
	for _, in := range seedInputs(t) {
		checkLazy(t, string(in))
		v, err := Decode(in)
		if err != nil {
			continue
		}
		canonical, err := AppendJSON(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		checkLazy(t, string(canonical))
		if _, isObject := v.(map[string]any); isObject && !bytes.ContainsAny(canonical, "\\") && !hasNonASCII(string(canonical)) {
			if _, ok := DecodeLazy(string(canonical)); !ok {
				t.Errorf("DecodeLazy refused %q", canonical)
			}
		}
	}
}

// TestExpandOneLevel: Expand decodes one level, its objects and arrays
// stay Raw, and strings share the text.
func TestExpandOneLevel(t *testing.T) {
	m, ok := DecodeLazy(`{"a":{"b":[1,{"c":2}]},"s":"x","t":"a\nb"}`)
	if !ok {
		t.Fatal("refused")
	}
	r, isRaw := m["a"].(Raw)
	if !isRaw || r.text != `{"b":[1,{"c":2}]}` || m["s"] != "x" || m["t"] != "a\nb" {
		t.Fatalf("top level: %#v", m)
	}
	a := Expand(r).(map[string]any)
	b := Expand(a["b"].(Raw)).([]any)
	if len(b) != 2 || b[0] != any(json.Number("1")) || b[1] != (Raw{`{"c":2}`}) {
		t.Fatalf("b: %#v", b)
	}
	if v, text := Expand(Raw{}), appendRaw(t, Raw{}); v != nil || text != "null" {
		t.Errorf("the zero Raw: %#v, %s; want null", v, text)
	}
}

func appendRaw(t *testing.T, r Raw) string {
	b, err := AppendJSON(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzDecodeLazy checks DecodeLazy against Decode and AppendJSON
// (checkLazy), on the corpus and on its canonical forms.
func FuzzDecodeLazy(f *testing.F) {
	for _, in := range seedInputs(f) {
		f.Add(in)
		if v, err := Decode(in); err == nil {
			if c, err := AppendJSON(nil, v); err == nil {
				f.Add(c)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLazy(t, string(data))
	})
}
