package value

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzSeeds are inputs every fuzz target of the package starts from.
func fuzzSeeds(f *testing.F) {
	for _, data := range seedInputs(f) {
		f.Add(data)
	}
}

// seedInputs are the fuzz seeds, also the corpus of differential tests. The
// deeply nested table cases are left out: they would slow the fuzzers down
// to a crawl, and the tables cover them.
func seedInputs(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, tt := range decodeCases {
		if len(tt.in) < 1000 {
			seeds = append(seeds, []byte(tt.in))
		}
	}
	for _, tt := range membersCases {
		if len(tt.in) < 4000 {
			seeds = append(seeds, []byte(tt.in))
		}
	}
	for _, s := range []string{
		nest("[", "]", 50),
		nest(`{"a":`, "}", 3),
		`{"a":"\ud83d\ude00","b":[1,-0,1e400,"\u2028"],"c":{"d":null}}`,
		"{\"\xff\\u00e9\":\"a\xc3(\\ud800\"}",
		`{"kind":"AdmissionReview","request":{"uid":"u","object":{"a":[1,2,{"b":"c"}]},"oldObject":null}}`,
		`{"x":1} `,
		` {"x":[1,2]]}`,
		`{"a\\":"\\","b\"":"\\\"]}","c":["\\\\",{"d":"}\\"}],"e":-0.5E+2}`,
		`{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}],"labels":{"managedFields":"x"}},"spec":[{"metadata":{"managedFields":1}}]}`,
		`{"metadata":{"managedFields":[1]},"metadata":{"name":"b"}}`,
		`{"metadata":{"managedFields":[1],"managedFields":{"x":[2,` + "\t" + `3]}},"managedFields":4}`,
		`{"metadata":{"managedFields":[1]},"metadata":5}`,
		`{"metadata":{"managedFields":[1,}}`,
		`{"metadata":[{"managedFields":1},{"x":{"managedFields":2}}]}`,
		`[{"a":1},{"b":{"a":2}}]`,
		// An escaped JSON text, as kubectl's last-applied configuration
		// (copyWords), its escapes at every offset of a word.
		`{"a":"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"x\":\"\\\\\",\"y\":\"a\/b\\n\u00e9\"}\n","b":"abcdefg\"","c":"abcdefgh\\"}`,
		`{"a":"abcdefg\`,
	} {
		seeds = append(seeds, []byte(s))
	}
	data := readDeployment(tb)
	seeds = append(seeds, data)
	seeds = append(seeds, append(append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"0e5d","operation":"CREATE","object":`), data...), `,"oldObject":null,"dryRun":false}}`...))
	return seeds
}

// FuzzDecode checks Decode and DecodeString against encoding/json with
// UseNumber: the same inputs accepted, the same trees built.
//
// It also decodes through one Storage kept from input to input, recycled
// after each: the same trees and errors as Decode's, whatever maps earlier
// inputs left in it.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	var st Storage
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		want, wantErr := refDecode(data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("Decode(%q) error = %v, encoding/json error = %v", data, err, wantErr)
		}
		if vErr := Valid(data); !reflect.DeepEqual(vErr, err) {
			t.Fatalf("Valid(%q) = %v, Decode's error %v", data, vErr, err)
		}
		stored, _, stErr := st.DecodeOmitting(data)
		if !reflect.DeepEqual(stErr, err) || !reflect.DeepEqual(stored, got) {
			t.Fatalf("Storage.DecodeOmitting(%q) = %#v, %v; Decode gives %#v, %v", data, stored, stErr, got, err)
		}
		st.Recycle()
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data) {
				t.Fatalf("Decode(%q) error = %#v, want a *SyntaxError with an offset in the input", data, err)
			}
		} else if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, encoding/json gives %#v", data, got, want)
		}
		checkOmitting(t, data, "metadata", "managedFields")
		checkOmitting(t, data, "a")
		s, err := DecodeString(data)
		want, isString := want.(string)
		if wantErr != nil || !isString {
			if err == nil {
				t.Fatalf("DecodeString(%q) = %q, want an error", data, s)
			}
		} else if err != nil || s != want {
			t.Fatalf("DecodeString(%q) = %q, %v; want %q", data, s, err, want)
		}
	})
}

// checkOmitting holds DecodeOmitting(data, path...) to Decode: the same
// error, the same tree without the member at path, and that member's text
// as omitted.
func checkOmitting(t *testing.T, data []byte, path ...string) {
	t.Helper()
	tree, err := Decode(data)
	got, omitted, gotErr := DecodeOmitting(data, path...)
	if !reflect.DeepEqual(gotErr, err) {
		t.Fatalf("DecodeOmitting(%q, %q) error = %v, Decode's %v", data, path, gotErr, err)
	}
	if err != nil {
		return
	}
	var want any
	if omitted != nil {
		if want, err = Decode(omitted); err != nil {
			t.Fatalf("DecodeOmitting(%q, %q) omitted %q: %v", data, path, omitted, err)
		}
	}
	parent := tree
	for _, k := range path[:len(path)-1] {
		m, _ := parent.(map[string]any)
		parent = m[k]
	}
	m, _ := parent.(map[string]any)
	had, ok := m[path[len(path)-1]]
	if ok != (omitted != nil) || !reflect.DeepEqual(had, want) {
		t.Fatalf("DecodeOmitting(%q, %q) omitted %q, the tree holds %#v there", data, path, omitted, had)
	}
	if ok {
		delete(m, path[len(path)-1])
	}
	if !reflect.DeepEqual(got, tree) {
		t.Fatalf("DecodeOmitting(%q, %q) = %#v, want Decode's without the member: %#v", data, path, got, tree)
	}
}

// member is one call of ObjectMembers' fn.
type member struct {
	key string
	raw string
}

// refMembers lists the members of the object in data with encoding/json:
// keys unescaped, values as raw text, in document order.
func refMembers(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var ms []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		ms = append(ms, member{k.(string), string(raw)})
	}
	return ms, nil
}

// FuzzObjectMembers checks ObjectMembers against encoding/json decoding into
// map[string]json.RawMessage, and that the raw values decode to the members
// of the tree Decode builds.
func FuzzObjectMembers(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []member
		err := ObjectMembers(data, func(key string, raw []byte) error {
			got = append(got, member{key, string(raw)})
			return nil
		})
		var ref map[string]json.RawMessage
		refErr := json.Unmarshal(data, &ref)
		isObject := false
		if i := skipSpace(data, 0); i < len(data) && data[i] == '{' {
			isObject = true
		}
		if (err == nil) != (refErr == nil && isObject) {
			t.Fatalf("ObjectMembers(%q) error = %v, encoding/json error = %v", data, err, refErr)
		}
		if err == nil {
			checkValidated(t, data)
		} else {
			validatedNoPanic(t, data)
		}
		checkNested(t, data, got, err)
		checkDeferring(t, data, err)

		// fn's error comes back, unless data is not a valid object.
		stop := errors.New("stop")
		calls := 0
		err2 := ObjectMembers(data, func(string, []byte) error {
			calls++
			return stop
		})
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data) {
				t.Fatalf("ObjectMembers(%q) error = %#v, want a *SyntaxError with an offset in the input", data, err)
			}
			if !reflect.DeepEqual(err2, err) {
				t.Fatalf("ObjectMembers(%q) with a failing fn: error = %v, want %v", data, err2, err)
			}
			return
		}
		switch {
		case len(got) == 0 && (err2 != nil || calls != 0):
			t.Fatalf("ObjectMembers(%q) with a failing fn and no members: %d calls, error %v", data, calls, err2)
		case len(got) > 0 && (err2 != stop || calls != 1):
			t.Fatalf("ObjectMembers(%q) with a failing fn: %d calls, error %v", data, calls, err2)
		}

		want, err := refMembers(data)
		if err != nil {
			t.Fatalf("encoding/json token stream of %q: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
			t.Fatalf("ObjectMembers(%q) = %q, want %q", data, got, want)
		}
		last := map[string]string{}
		for _, m := range got {
			last[m.key] = m.raw
		}
		if len(last) != len(ref) {
			t.Fatalf("ObjectMembers(%q): %d distinct keys, encoding/json has %d", data, len(last), len(ref))
		}
		tree, err := Decode(data)
		if err != nil {
			t.Fatalf("Decode(%q): %v", data, err)
		}
		obj := tree.(map[string]any)
		for k, raw := range last {
			if string(ref[k]) != raw {
				t.Fatalf("ObjectMembers(%q): %q is %q, encoding/json has %q", data, k, raw, ref[k])
			}
			v, err := Decode([]byte(raw))
			if err != nil || !reflect.DeepEqual(v, obj[k]) {
				t.Fatalf("ObjectMembers(%q): %q is %q, decoding to %#v, %v; want %#v", data, k, raw, v, err, obj[k])
			}
			if s, ok := obj[k].(string); ok {
				if ds, err := DecodeString([]byte(raw)); err != nil || ds != s {
					t.Fatalf("DecodeString(%q) = %q, %v; want %q", raw, ds, err, s)
				}
			}
		}
	})
}

// checkDeferring holds ObjectMembersNestedDeferring, descending into the
// members whose key has an even length and deferring the inner members
// whose key has an odd length, to ObjectMembersNested (err is
// ObjectMembers' result on data): no syntax error and every deferred text
// valid exactly when data is a valid object, and then the same calls.
func checkDeferring(t *testing.T, data []byte, err error) {
	t.Helper()
	descend := func(key string) bool { return len(key)%2 == 0 }
	var calls []member
	var deferredTexts [][]byte
	dErr := ObjectMembersNestedDeferring(data, func(key string, raw []byte) error {
		calls = append(calls, member{key, string(raw)})
		return nil
	}, descend, func(key string, raw []byte) error {
		calls = append(calls, member{"inner " + key, string(raw)})
		if len(key)%2 == 1 && (raw[0] == '{' || raw[0] == '[') {
			deferredTexts = append(deferredTexts, raw)
		}
		return nil
	}, func(key string) bool { return len(key)%2 == 1 })
	valid := dErr == nil
	for _, raw := range deferredTexts {
		valid = valid && Valid(raw) == nil
	}
	if valid != (err == nil) {
		t.Fatalf("ObjectMembersNestedDeferring(%q): error %v, deferred texts %q; ObjectMembers' error %v", data, dErr, deferredTexts, err)
	}
	if err != nil {
		return
	}
	var want []member
	if err := ObjectMembersNested(data, func(key string, raw []byte) error {
		want = append(want, member{key, string(raw)})
		return nil
	}, descend, func(key string, raw []byte) error {
		want = append(want, member{"inner " + key, string(raw)})
		return nil
	}); err != nil {
		t.Fatalf("ObjectMembersNested(%q): %v", data, err)
	}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("ObjectMembersNestedDeferring(%q) calls %q, ObjectMembersNested's %q", data, calls, want)
	}
}

// checkNested holds ObjectMembersNested, descending into the members whose
// key has an even length, to ObjectMembers: got and err are ObjectMembers'
// calls and result on data. The calls must be ObjectMembers' with, before
// each member descended into, the calls ObjectMembers makes on its value;
// the error must be the same; an inner error must come back and stop every
// call.
func checkNested(t *testing.T, data []byte, got []member, err error) {
	t.Helper()
	var calls []member
	descend := func(key string) bool {
		calls = append(calls, member{"nest", key})
		return len(key)%2 == 0
	}
	nestErr := ObjectMembersNested(data, func(key string, raw []byte) error {
		calls = append(calls, member{key, string(raw)})
		return nil
	}, descend, func(key string, raw []byte) error {
		calls = append(calls, member{"inner " + key, string(raw)})
		return nil
	})
	if !reflect.DeepEqual(nestErr, err) {
		t.Fatalf("ObjectMembersNested(%q) error = %v, ObjectMembers' %v", data, nestErr, err)
	}
	if err != nil {
		return
	}
	var want []member
	inners := 0
	for _, m := range got {
		if m.raw[0] == '{' {
			want = append(want, member{"nest", m.key})
			if len(m.key)%2 == 0 {
				if err := ObjectMembers([]byte(m.raw), func(key string, raw []byte) error {
					want = append(want, member{"inner " + key, string(raw)})
					inners++
					return nil
				}); err != nil {
					t.Fatalf("ObjectMembers(%q) of a member of %q: %v", m.raw, data, err)
				}
			}
		}
		want = append(want, m)
	}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("ObjectMembersNested(%q) calls %q, want %q", data, calls, want)
	}

	// inner's error comes back and stops every call.
	stop := errors.New("stop")
	n := 0
	nestErr = ObjectMembersNested(data, func(string, []byte) error {
		n++
		return nil
	}, func(key string) bool {
		n++
		return len(key)%2 == 0
	}, func(string, []byte) error {
		n++
		return stop
	})
	if inners == 0 {
		if nestErr != nil {
			t.Fatalf("ObjectMembersNested(%q) with no inner member = %v", data, nestErr)
		}
		return
	}
	first := slices.IndexFunc(want, func(m member) bool { return strings.HasPrefix(m.key, "inner ") })
	if nestErr != stop || n != first+1 {
		t.Fatalf("ObjectMembersNested(%q) with a failing inner: %v after %d calls, want stop after %d", data, nestErr, n, first+1)
	}
}
