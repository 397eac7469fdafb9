package value

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// membersCases are inputs with the calls ObjectMembers must make, or ok
// false when it must fail. They also seed the fuzz targets.
var membersCases = []struct {
	in   string
	want []member
	ok   bool
}{
	{`{}`, nil, true},
	{" \t\n{ }\r\n", nil, true},
	{`{"a":1}`, []member{{"a", "1"}}, true},
	{` { "a" : [ 1 , 2 ] , "b" : { "c" : "d" } , "e" : "f\"g" , "h" : null , "i" : -1.5e3 } `,
		[]member{{"a", "[ 1 , 2 ]"}, {"b", `{ "c" : "d" }`}, {"e", `"f\"g"`}, {"h", "null"}, {"i", "-1.5e3"}}, true},
	{`{"a":1,"b":2,"a":3}`, []member{{"a", "1"}, {"b", "2"}, {"a", "3"}}, true},
	{`{"\u0061\n":true,"\ud800":false}`, []member{{"a\n", "true"}, {"\uFFFD", "false"}}, true},
	{"{\"k\xff\":\"v\xff\"}", []member{{"k\uFFFD", "\"v\xff\""}}, true},
	{`{"a":"\u12"}`, nil, false},
	{`{"a":[1,2}`, nil, false},
	{`{"a":1,"b":[1,2,]}`, nil, false},
	{`{"a":1,"b":tru}`, nil, false},
	{`{"a":1,"b":"x`, nil, false},
	{`{"a":1,"b":01}`, nil, false},
	{`{"a":1,"b":"` + "\t" + `"}`, nil, false},
	{`{"a":1,}`, nil, false},
	{`{"a":1} {}`, nil, false},
	{`{"a":1}]`, nil, false},
	{`{"a":1`, nil, false},
	{`{"a" 1}`, nil, false},
	{`{"a":}`, nil, false},
	{`{a:1}`, nil, false},
	{`{`, nil, false},
	{``, nil, false},
	{`   `, nil, false},
	{`null`, nil, false},
	{`[]`, nil, false},
	{`"a"`, nil, false},
	{`1`, nil, false},
	{"\ufeff{}", nil, false},
	// Empty containers inside skipped values (skip once lost count of them).
	{`{"a":[[],{},[{}]],"b":{"c":[],"d":{}}}`, []member{{"a", `[[],{},[{}]]`}, {"b", `{"c":[],"d":{}}`}}, true},
	// Alternating objects and arrays deeper than the 64 levels of skip's
	// first word of container bits.
	{`{"a":` + mixed(100) + `,"b":1}`, []member{{"a", mixed(100)}, {"b", "1"}}, true},
	{`{"a":` + mixed(100)[1:] + `}`, nil, false},
	{`{"a":` + nest("[", "]", maxDepth-1) + `}`, []member{{"a", nest("[", "]", maxDepth-1)}}, true},
	{`{"a":` + nest("[", "]", maxDepth) + `}`, nil, false},
}

// mixed returns n levels of alternating arrays and objects, with empty
// containers and scalars on the way.
func mixed(n int) string {
	var b strings.Builder
	for i := range n {
		if i%2 == 0 {
			b.WriteString(`[[],{},1,`)
		} else {
			b.WriteString(`{"x":{},"y":[],"z":`)
		}
	}
	b.WriteString("null")
	for i := n - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`,"s"]`)
		} else {
			b.WriteString(`,"w":true}`)
		}
	}
	return b.String()
}

func TestObjectMembers(t *testing.T) {
	for _, tt := range membersCases {
		name := tt.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		i := skipSpace([]byte(tt.in), 0)
		if isObject := json.Valid([]byte(tt.in)) && tt.in[i] == '{'; isObject != tt.ok {
			t.Errorf("%q: bad test case: encoding/json disagrees", name)
		}
		var got []member
		err := ObjectMembers([]byte(tt.in), func(key string, raw []byte) error {
			got = append(got, member{key, string(raw)})
			return nil
		})
		if !tt.ok {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("ObjectMembers(%q) = %v, want a *SyntaxError", name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ObjectMembers(%q): %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ObjectMembers(%q) = %q, want %q", name, got, tt.want)
		}
	}
}

func TestObjectMembersErrors(t *testing.T) {
	stop := errors.New("stop")
	var keys []string
	fn := func(key string, raw []byte) error {
		keys = append(keys, key)
		if key == "b" {
			return stop
		}
		return nil
	}
	if err := ObjectMembers([]byte(`{"a":1,"b":2,"c":3}`), fn); err != stop {
		t.Errorf("error = %v, want fn's", err)
	}
	if strings.Join(keys, ",") != "a,b" {
		t.Errorf("fn called for %q after its error", keys)
	}
	// The rest of the input is checked after fn's error, and its syntax
	// error wins.
	keys = nil
	err := ObjectMembers([]byte(`{"a":1,"b":2,"c":[3,}`), fn)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 20 {
		t.Errorf("error = %v, want a syntax error at offset 20", err)
	}
	for _, tt := range []struct{ in, want string }{
		{`[]`, "invalid character '[' looking for beginning of object at offset 0"},
		{` `, "unexpected end of JSON input at offset 1"},
		{`{"a":1}x`, "invalid character 'x' after top-level value at offset 7"},
		{`{"a":1 "b":2}`, `invalid character '"' after object key:value pair at offset 7`},
		{`{"a":"b\x"}`, "invalid character 'x' in string escape code at offset 8"},
	} {
		err := ObjectMembers([]byte(tt.in), func(string, []byte) error { return nil })
		if err == nil || err.Error() != tt.want {
			t.Errorf("ObjectMembers(%q) error = %v, want %s", tt.in, err, tt.want)
		}
	}
}

// TestObjectMembersRaw checks that fn cannot write over data by appending
// to raw.
func TestObjectMembersRaw(t *testing.T) {
	data := []byte(`{"a":"x","b":"y"}`)
	err := ObjectMembers(data, func(key string, raw []byte) error {
		if cap(raw) != len(raw) {
			t.Errorf("%s: raw has room to grow into data", key)
		}
		_ = append(raw, '!')
		return nil
	})
	if err != nil || string(data) != `{"a":"x","b":"y"}` {
		t.Fatalf("data = %s, %v", data, err)
	}
}

// TestObjectMembersAllocs checks that skipping values allocates nothing:
// only the keys (not interned here) cost an allocation each.
func TestObjectMembersAllocs(t *testing.T) {
	data := readDeployment(t)
	review := []byte(`{"zkind":"AdmissionReview","zrequest":` + string(data) + `,"zobject":` + string(data) + `}`)
	allocs := testing.AllocsPerRun(100, func() {
		err := ObjectMembers(review, func(key string, raw []byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Errorf("ObjectMembers made %v allocations, want at most 3 (one per key)", allocs)
	}
}

func TestDecodeString(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`"abc"`, "abc", true},
		{` "a\"b" `, `a"b`, true},
		{`"\ud83d\ude00\ud83d"`, "😀\uFFFD", true},
		{"\"\xff\"", "\uFFFD", true},
		{`""`, "", true},
		{`"a" "b"`, "", false},
		{`"a`, "", false},
		{`1`, "", false},
		{`null`, "", false},
		{``, "", false},
		{`["a"]`, "", false},
	}
	for _, tt := range tests {
		got, err := DecodeString([]byte(tt.in))
		if tt.ok && (err != nil || got != tt.want) {
			t.Errorf("DecodeString(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if !tt.ok && err == nil {
			t.Errorf("DecodeString(%q) = %q, want an error", tt.in, got)
		}
	}
}

// BenchmarkObjectMembers reads an AdmissionReview envelope the way the
// webhook does: the request's members, without decoding the object.
func BenchmarkObjectMembers(b *testing.B) {
	data := readDeployment(b)
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"0e5d3c1a-4b8e-4f6e-9f0e-6f1c2a7b9d10","kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},"namespace":"shop","operation":"UPDATE","userInfo":{"username":"admin","groups":["system:masters","system:authenticated"]},"object":` + string(data) + `,"oldObject":` + string(data) + `,"dryRun":false}}`)
	b.SetBytes(int64(len(review)))
	b.ReportAllocs()
	for b.Loop() {
		var uid, op string
		var object []byte
		err := ObjectMembers(review, func(key string, raw []byte) error {
			if key != "request" {
				return nil
			}
			return ObjectMembers(raw, func(key string, raw []byte) error {
				var err error
				switch key {
				case "uid":
					uid, err = DecodeString(raw)
				case "operation":
					op, err = DecodeString(raw)
				case "object":
					object = raw
				}
				return err
			})
		})
		if err != nil || uid == "" || op != "UPDATE" || object == nil {
			b.Fatal(err)
		}
	}
}
