package value

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type schemaInner struct {
	S string   `json:"s,omitempty"`
	N int      `json:"n"`
	F float64  `json:"f"`
	B bool     `json:"b"`
	L []string `json:"l"`
}

type schemaOuter struct {
	schemaInner `json:",inline"`
	Items       []schemaInner          `json:"items"`
	Map         map[string]schemaInner `json:"map"`
	Ptr         *schemaInner           `json:"ptr"`
	Any         any                    `json:"any"`
	Bytes       []byte                 `json:"bytes"`
	Skip        string                 `json:"-"`
}

func TestFindMismatch(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want *Mismatch
	}{
		{`{"s": "x", "n": 1, "f": 1.5, "b": true, "l": ["a"], "any": [1, {"x": false}], "bytes": "AA==", "-": 3}`, nil},
		{`{"s": null, "items": null, "unknown": 1}`, nil},
		{`{"s": false}`, &Mismatch{Path: "s", Want: "string", Got: false}},
		{`{"n": 1.5}`, &Mismatch{Path: "n", Want: "integer", Got: json.Number("1.5")}},
		{`{"f": "1"}`, &Mismatch{Path: "f", Want: "number", Got: "1"}},
		{`{"items": [{"s": "a"}, {"l": ["a", 2]}]}`, &Mismatch{Path: "items[1].l[1]", Want: "string", Got: json.Number("2")}},
		{`{"map": {"k": {"b": "yes"}}}`, &Mismatch{Path: "map.k.b", Want: "boolean", Got: "yes"}},
		{`{"ptr": []}`, &Mismatch{Path: "ptr", Want: "object", Got: []any{}}},
		{`{"items": {}}`, &Mismatch{Path: "items", Want: "array", Got: map[string]any{}}},
	} {
		v, err := Decode([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		got := FindMismatch(v, reflect.TypeFor[schemaOuter]())
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.doc, diff)
		}
	}
	m := &Mismatch{Path: "spec.match[0].matchValue", Want: "string", Got: json.Number("8080")}
	if want := `spec.match[0].matchValue must be a string, not a number (8080); YAML reads an unquoted 8080 as a number: quote it, as in matchValue: "8080"`; m.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", m.Error(), want)
	}
}
