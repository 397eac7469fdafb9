package patch

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modwright/modwright/internal/value"
)

func TestOperationJSON(t *testing.T) {
	tests := []struct {
		op   Operation
		json string
	}{
		{Operation{Op: Add, Path: Pointer{"metadata", "labels", "color"}, Value: "blue"},
			`{"op":"add","path":"/metadata/labels/color","value":"blue"}`},
		{Operation{Op: Add, Path: Pointer{"a"}, Value: nil}, `{"op":"add","path":"/a","value":null}`},
		{Operation{Op: Replace, Path: nil, Value: map[string]any{"b": json.Number("1.50"), "a": []any{true}}},
			`{"op":"replace","path":"","value":{"a":[true],"b":1.50}}`},
		{Operation{Op: Replace, Path: Pointer{"x"}, Value: nil}, `{"op":"replace","path":"/x","value":null}`},
		{Operation{Op: Remove, Path: Pointer{"a/b", "~"}}, `{"op":"remove","path":"/a~1b/~0"}`},
		{Operation{Op: Add, Path: Pointer{"s"}, Value: "<&>"}, `{"op":"add","path":"/s","value":"<&>"}`},
	}
	for _, tt := range tests {
		b, err := tt.op.MarshalJSON() // json.Marshal would add HTML escaping
		if err != nil {
			t.Errorf("Marshal(%v): %v", tt.op, err)
			continue
		}
		if string(b) != tt.json {
			t.Errorf("Marshal(%v) = %s, want %s", tt.op, b, tt.json)
		}
		var back Operation
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("Unmarshal(%s): %v", b, err)
			continue
		}
		if diff := cmp.Diff(tt.op, back, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip of %s (-want +got):\n%s", b, diff)
		}
	}

	// A value on remove is never emitted, and ignored when read.
	b, err := json.Marshal(Operation{Op: Remove, Path: Pointer{"a"}, Value: "x"})
	if err != nil || string(b) != `{"op":"remove","path":"/a"}` {
		t.Errorf("Marshal(remove with value) = %s, %v", b, err)
	}

	// Slices of operations, as a patch.
	ops := []Operation{{Op: Add, Path: Pointer{"a", "-"}, Value: json.Number("1")}, {Op: Remove, Path: Pointer{"b"}}}
	b, err = json.Marshal(ops)
	if err != nil || string(b) != `[{"op":"add","path":"/a/-","value":1},{"op":"remove","path":"/b"}]` {
		t.Errorf("Marshal(ops) = %s, %v", b, err)
	}
	var back []Operation
	if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(ops, back) {
		t.Errorf("Unmarshal(ops) = %v, %v", back, err)
	}
}

func TestOperationUnmarshalErrors(t *testing.T) {
	tests := []struct {
		in   string
		want error // a sentinel, or nil for "some error"
	}{
		{`{"op":"move","path":"/a","from":"/b"}`, ErrUnsupportedOp},
		{`{"op":"test","path":"/a","value":1}`, ErrUnsupportedOp},
		{`{"path":"/a","value":1}`, nil},
		{`{"op":"add","value":1}`, nil},
		{`{"op":"add","path":"/a"}`, nil},
		{`{"op":"replace","path":"/a"}`, nil},
		{`{"op":"add","path":"a","value":1}`, ErrInvalidPointer},
		{`{"op":"remove","path":"/~2"}`, ErrInvalidPointer},
		{`{"op":1,"path":"/a"}`, nil},
		{`[]`, nil},
	}
	for _, tt := range tests {
		var op Operation
		err := json.Unmarshal([]byte(tt.in), &op)
		if err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", tt.in, op)
			continue
		}
		if tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("Unmarshal(%s) error = %v, want %v", tt.in, err, tt.want)
		}
	}
}

func TestOperationString(t *testing.T) {
	tests := []struct {
		op   Operation
		want string
	}{
		{Operation{Op: Add, Path: Pointer{"metadata", "labels", "color"}, Value: "blue"}, `add /metadata/labels/color "blue"`},
		{Operation{Op: Add, Path: Pointer{"a"}}, `add /a null`},
		{Operation{Op: Replace, Value: map[string]any{"a": json.Number("1")}}, `replace "" {"a":1}`},
		{Operation{Op: Remove, Path: Pointer{"a/b"}}, `remove /a~1b`},
		{Operation{Op: "move", Path: Pointer{"a"}}, `move /a`},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestOpError(t *testing.T) {
	d := NewDoc(map[string]any{"spec": map[string]any{}})
	err := d.Apply(Operation{Op: Replace, Path: Pointer{"spec", "x"}, Value: json.Number("1")})
	var oe *OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v is not an *OpError", err)
	}
	if want := `replace /spec/x: path not found: member "x" does not exist`; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
	if !errors.Is(err, ErrPathNotFound) || oe.Op != Replace || !cmp.Equal(oe.Path, Pointer{"spec", "x"}) {
		t.Errorf("OpError = %#v", oe)
	}
	err = d.Apply(Operation{Op: Replace, Path: Pointer{"y"}})
	if want := `replace /y: path not found: member "y" does not exist`; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %q", err, want)
	}
	err = d.Apply(Operation{Op: Add, Path: Pointer{"spec", "l", "3"}})
	if want := `add /spec/l/3: invalid array index: index 3 in new array at /spec/l (only 0, - and -1 can create an array)`; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %q", err, want)
	}
	err = d.Apply(Operation{Op: Remove})
	if want := `remove "": invalid JSON pointer: cannot remove the whole document`; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %q", err, want)
	}
	if got := (&OpError{Op: Add, Path: Pointer{"a"}, Err: ErrNotContainer}).Error(); got != "add /a: not an object or array" {
		t.Errorf("Error() without detail = %q", got)
	}
}

// TestOperationJSONPaths holds the path AppendJSON writes, Pointer.String
// and EscapeToken to their definitions (RFC 6901's escaping, then
// value.AppendJSON's quoting of that string) on random tokens: every
// escape of either kind, invalid UTF-8, and paths longer than the stack
// buffer the path is written in.
func TestOperationJSONPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 30))
	alphabet := []string{"a", "Z", "~", "/", "~1", "\"", "\\", "\n", "\x00", "\x7f", "é", "\u2028", "\xff", "<", "-", "0"}
	for range 3000 {
		p := make(Pointer, rng.IntN(6))
		for i := range p {
			var b strings.Builder
			for range rng.IntN(12) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			if rng.IntN(50) == 0 {
				b.WriteString(strings.Repeat("~x/", 40)) // past the 256 bytes
			}
			p[i] = b.String()
		}
		var want strings.Builder
		for _, tok := range p {
			want.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
		}
		if got := p.String(); got != want.String() {
			t.Fatalf("%q.String() = %q, want %q", []string(p), got, want.String())
		}
		for _, tok := range p {
			if got, w := EscapeToken(tok), strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"); got != w {
				t.Fatalf("EscapeToken(%q) = %q, want %q", tok, got, w)
			}
		}
		op := Operation{Op: Remove, Path: p}
		got, err := op.AppendJSON([]byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		quoted, _ := value.AppendJSON(nil, want.String())
		if w := `x{"op":"remove","path":` + string(quoted) + `}`; string(got) != w {
			t.Fatalf("AppendJSON(%q) = %s, want %s", []string(p), got, w)
		}
	}
}
