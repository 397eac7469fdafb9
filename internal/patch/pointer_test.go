package patch

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in   string
		want Pointer
	}{
		{"", nil},
		{"/", Pointer{""}},
		{"//", Pointer{"", ""}},
		{"/a", Pointer{"a"}},
		{"/a/b/c", Pointer{"a", "b", "c"}},
		{"/a/", Pointer{"a", ""}},
		{"/a~1b", Pointer{"a/b"}},
		{"/m~0n", Pointer{"m~n"}},
		{"/~01", Pointer{"~1"}},
		{"/~10", Pointer{"/0"}},
		{"/~0~1~0", Pointer{"~/~"}},
		{"/metadata/annotations/example.com~1name", Pointer{"metadata", "annotations", "example.com/name"}},
		{"/0/-/-1", Pointer{"0", "-", "-1"}},
		{"/ü/ /\"", Pointer{"ü", " ", `"`}},
	}
	for _, tt := range tests {
		got, err := ParsePointer(tt.in)
		if err != nil {
			t.Errorf("ParsePointer(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParsePointer(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
		if s := got.String(); s != tt.in {
			t.Errorf("ParsePointer(%q).String() = %q", tt.in, s)
		}
	}
}

func TestParsePointerErrors(t *testing.T) {
	tests := []struct {
		in, detail string
	}{
		{"a", `does not start with "/"`},
		{"a/b", `does not start with "/"`},
		{"#/a", `does not start with "/"`},
		{"/~", `trailing "~" at offset 1`},
		{"/a/b~", `trailing "~" at offset 4`},
		{"/a~2", `invalid escape "~2" at offset 2`},
		{"/~a", `invalid escape "~a" at offset 1`},
		{"/ok/~~0", `invalid escape "~~" at offset 4`},
		{"/x/~/y", `trailing "~" at offset 3`},
	}
	for _, tt := range tests {
		_, err := ParsePointer(tt.in)
		if !errors.Is(err, ErrInvalidPointer) {
			t.Errorf("ParsePointer(%q) error = %v, want ErrInvalidPointer", tt.in, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.detail) {
			t.Errorf("ParsePointer(%q) error = %q, want it to contain %q", tt.in, err, tt.detail)
		}
	}
}

func TestPointerString(t *testing.T) {
	tests := []struct {
		in   Pointer
		want string
	}{
		{nil, ""},
		{Pointer{}, ""},
		{Pointer{""}, "/"},
		{Pointer{"a/b", "c~d", "e"}, "/a~1b/c~0d/e"},
		{Pointer{"~1"}, "/~01"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%q.String() = %q, want %q", []string(tt.in), got, tt.want)
		}
		back, err := ParsePointer(tt.want)
		if err != nil || !cmp.Equal(back, tt.in, cmpopts.EquateEmpty()) {
			t.Errorf("round trip of %q: %q, %v", []string(tt.in), []string(back), err)
		}
	}
}

func TestEscapeToken(t *testing.T) {
	tests := map[string]string{
		"":       "",
		"abc":    "abc",
		"a/b":    "a~1b",
		"a~b":    "a~0b",
		"~/":     "~0~1",
		"/~1":    "~1~01",
		"x.io/y": "x.io~1y",
	}
	for in, want := range tests {
		if got := EscapeToken(in); got != want {
			t.Errorf("EscapeToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseIndex(t *testing.T) {
	tests := []struct {
		tok  string
		n    int
		kind int
	}{
		{"-", 0, idxDash},
		{"0", 0, idxNumber},
		{"7", 7, idxNumber},
		{"42", 42, idxNumber},
		{"-1", -1, idxNumber},
		{"-12", -12, idxNumber},
		{"99999999999999999999999", maxIndex, idxNumber},
		{"-99999999999999999999999", -maxIndex, idxNumber},
		{"", 0, idxInvalid},
		{"01", 0, idxInvalid},
		{"-0", 0, idxInvalid},
		{"-01", 0, idxInvalid},
		{"+1", 0, idxInvalid},
		{"1.0", 0, idxInvalid},
		{"1e2", 0, idxInvalid},
		{" 1", 0, idxInvalid},
		{"--1", 0, idxInvalid},
		{"a", 0, idxInvalid},
	}
	for _, tt := range tests {
		n, kind := parseIndex(tt.tok)
		if n != tt.n || kind != tt.kind {
			t.Errorf("parseIndex(%q) = %d, %d; want %d, %d", tt.tok, n, kind, tt.n, tt.kind)
		}
	}
}
