package value

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
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

// collectMembers lists the calls members (ObjectMembers or
// ObjectMembersValidated) makes on data.
func collectMembers(members func([]byte, func(string, []byte) error) error, data []byte) ([]member, error) {
	var ms []member
	err := members(data, func(key string, raw []byte) error {
		if cap(raw) != len(raw) {
			return errors.New("raw has room to grow into data")
		}
		ms = append(ms, member{key, string(raw)})
		return nil
	})
	return ms, err
}

// checkValidated checks that ObjectMembersValidated makes the same calls
// as ObjectMembers on data, which ObjectMembers accepts, and on every
// object among the raw values it hands out, at any depth; and that it
// returns fn's first error at once.
func checkValidated(t *testing.T, data []byte) {
	t.Helper()
	want, err := collectMembers(ObjectMembers, data)
	if err != nil {
		t.Fatalf("ObjectMembers(%q): %v", data, err)
	}
	got, err := collectMembers(ObjectMembersValidated, data)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ObjectMembersValidated(%q) = %q, %v; ObjectMembers gives %q", data, got, err, want)
	}
	stop := errors.New("stop")
	calls := 0
	err = ObjectMembersValidated(data, func(string, []byte) error {
		calls++
		return stop
	})
	if len(want) == 0 && (err != nil || calls != 0) || len(want) > 0 && (err != stop || calls != 1) {
		t.Fatalf("ObjectMembersValidated(%q) with a failing fn: %d calls, error %v", data, calls, err)
	}
	for _, m := range want {
		for _, obj := range innerObjects([]byte(m.raw)) {
			checkValidated(t, obj)
		}
	}
}

// innerObjects returns the objects in the valid JSON text raw that are
// raw itself or elements of arrays in it, at any depth (the members of
// objects are reached by checkValidated's recursion).
func innerObjects(raw []byte) [][]byte {
	switch {
	case len(raw) > 0 && raw[0] == '{':
		return [][]byte{raw}
	case len(raw) > 0 && raw[0] == '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil
		}
		var objs [][]byte
		for _, e := range elems {
			objs = append(objs, innerObjects(e)...)
		}
		return objs
	}
	return nil
}

// validatedNoPanic runs ObjectMembersValidated on data, valid or not: it
// must end without panicking, hand out subslices of data and fail, if it
// does, with a *SyntaxError at an offset in data.
func validatedNoPanic(t *testing.T, data []byte) {
	t.Helper()
	err := ObjectMembersValidated(data, func(key string, raw []byte) error {
		if len(raw) == 0 || cap(raw) != len(raw) {
			t.Fatalf("ObjectMembersValidated(%q): raw %q is empty or can grow into data", data, raw)
		}
		return nil
	})
	var se *SyntaxError
	if err != nil && (!errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data)) {
		t.Fatalf("ObjectMembersValidated(%q) error = %#v, want a *SyntaxError with an offset in the input", data, err)
	}
}

// TestObjectMembersValidated is the differential test of
// ObjectMembersValidated against ObjectMembers: over the table cases, the
// fuzz seeds and generated documents, wherever ObjectMembers accepts the
// input, the same (key, raw) calls at every level of objects.
func TestObjectMembersValidated(t *testing.T) {
	var corpus [][]byte
	for _, tt := range membersCases {
		corpus = append(corpus, []byte(tt.in))
	}
	for _, tt := range decodeCases {
		corpus = append(corpus, []byte(tt.in))
	}
	corpus = append(corpus, seedInputs(t)...)
	rng := rand.New(rand.NewPCG(14, 1))
	for range 3000 {
		corpus = append(corpus, genObject(rng, 0))
	}
	accepted := 0
	for _, data := range corpus {
		if err := ObjectMembers(data, func(string, []byte) error { return nil }); err != nil {
			validatedNoPanic(t, data)
			continue
		}
		accepted++
		checkValidated(t, data)
	}
	if accepted < 3000 {
		t.Errorf("only %d inputs of the corpus are objects ObjectMembers accepts", accepted)
	}
}

// TestObjectMembersValidatedInvalid checks that ObjectMembersValidated
// ends without panicking on text that breaks its contract, cut anywhere.
func TestObjectMembersValidatedInvalid(t *testing.T) {
	for _, s := range []string{
		`{"a":"b\"`, `{"a":[1,{"b":"]"`, `{"a":}`, `{"a":,"b":1}`, `{"a"`, `{"a":"\`, `{"a":"\\`,
		`{"a":1 "b"}`, `{"\ud8`, `{"a":]}`, `{"a":}}}}`, `{"a":"x"]`, `{,}`, `{"a":1,`,
		`{"a":[[[[`, `{"a":` + "\x00" + `}`, "{\"a\":\"\\\\\\\\\\\"}",
	} {
		for n := range len(s) + 1 {
			validatedNoPanic(t, []byte(s[:n]))
		}
	}
}

// genObject returns a random valid JSON object: keys and strings with
// escapes (runs of backslashes before quotes among them), brackets and
// delimiters inside strings, numbers of every form, literals, nested
// containers and varied whitespace.
func genObject(rng *rand.Rand, depth int) []byte {
	var b []byte
	b = append(b, genSpace(rng)...)
	b = append(b, '{')
	for i := range rng.IntN(6) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, genSpace(rng)...)
		b = append(b, genString(rng)...)
		b = append(b, genSpace(rng)...)
		b = append(b, ':')
		b = append(b, genSpace(rng)...)
		b = append(b, genValue(rng, depth+1)...)
		b = append(b, genSpace(rng)...)
	}
	b = append(b, '}')
	return append(b, genSpace(rng)...)
}

func genValue(rng *rand.Rand, depth int) []byte {
	n := 8
	if depth > 5 {
		n = 5 // scalars only
	}
	switch rng.IntN(n) {
	case 0, 1:
		return genString(rng)
	case 2:
		return []byte([]string{"0", "-0", "12", "-3.25", "1e9", "2E-3", "-0.5e+10", "123456789012345678901234567890"}[rng.IntN(8)])
	case 3:
		return []byte([]string{"true", "false", "null"}[rng.IntN(3)])
	case 4:
		return []byte(`""`)
	case 5:
		var b []byte
		b = append(b, '[')
		for i := range rng.IntN(5) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, genSpace(rng)...)
			b = append(b, genValue(rng, depth+1)...)
			b = append(b, genSpace(rng)...)
		}
		return append(b, ']')
	default:
		return genObject(rng, depth)
	}
}

func genString(rng *rand.Rand) []byte {
	pieces := []string{
		"a", "kind", " ", "é", "\xff", "😀", `\"`, `\\`, `\\\"`, `\\\\`, `\/`, `\n`, `\t`, `\u0041`,
		`\u00e9`, `\ud83d\ude00`, `\ud800`, `{`, `}`, `[`, `]`, `,`, `:`, `\"}`, `\\"`[:2], "\u2028",
	}
	b := []byte{'"'}
	for range rng.IntN(8) {
		b = append(b, pieces[rng.IntN(len(pieces))]...)
	}
	return append(b, '"')
}

func genSpace(rng *rand.Rand) []byte {
	return []byte([]string{"", "", "", " ", "\n\t", "\r\n  "}[rng.IntN(6)])
}

// BenchmarkObjectMembersValidated compares reading an AdmissionReview's
// request, validated already, with and without checking it again.
func BenchmarkObjectMembersValidated(b *testing.B) {
	data := readDeployment(b)
	request := []byte(`{"uid":"0e5d3c1a-4b8e-4f6e-9f0e-6f1c2a7b9d10","kind":{"group":"apps","version":"v1","kind":"Deployment"},"operation":"UPDATE","object":` + string(data) + `,"oldObject":` + string(data) + `,"dryRun":false}`)
	for _, bm := range []struct {
		name    string
		members func([]byte, func(string, []byte) error) error
	}{{"ObjectMembers", ObjectMembers}, {"ObjectMembersValidated", ObjectMembersValidated}} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(request)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if err := bm.members(request, func(string, []byte) error { n++; return nil }); err != nil || n != 6 {
					b.Fatal(err, n)
				}
			}
		})
	}
}

// A deferred member's containers are bounded as deep as a checked
// member's: at the deepest data may nest, and one deeper, reading with
// ObjectMembersNestedDeferring refuses what ObjectMembersNested refuses,
// for arrays (read eight brackets at a time) and objects alike.
func TestObjectMembersNestedDeferringDepth(t *testing.T) {
	nested := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	none := func(string, []byte) error { return nil }
	request := func(key string) bool { return key == "request" }
	object := func(key string) bool { return key == "object" }
	for _, brackets := range [][2]string{{"[", "]"}, {`{"a":`, "}"}} {
		// data, request and the object's own containers: 2 + n levels.
		for _, n := range []int{maxDepth - 3, maxDepth - 2, maxDepth - 1, maxDepth} {
			text := nested(brackets[0], brackets[1], n)
			data := []byte(`{"request":{"uid":"x","object":` + text + `}}`)
			want := ObjectMembersNested(data, none, request, none)
			if (want == nil) != (2+n <= maxDepth) {
				t.Fatalf("%s, %d levels: ObjectMembersNested %v", brackets[0], n, want)
			}
			var deferred []byte
			got := ObjectMembersNestedDeferring(data, none, request, func(key string, raw []byte) error {
				if key == "object" {
					deferred = raw
				}
				return nil
			}, object)
			if (got == nil) != (want == nil) {
				t.Errorf("%s, %d levels: deferring %v, checking %v", brackets[0], n, got, want)
			}
			if got == nil && string(deferred) != text {
				t.Errorf("%s, %d levels: the deferred text is %.40q..., want the object's", brackets[0], n, deferred)
			}
		}
	}
}
