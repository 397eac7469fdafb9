package lang

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFixedLimit(t *testing.T) {
	tests := []struct {
		asked int64
		want  string
	}{
		{0, ""},
		{100, ""},
		{101, "limit MaxWork 101 cannot be honoured: l's bound is 100"},
		{99, "limit MaxWork 99 is not supported: l's bound is fixed at 100"},
	}
	for _, tt := range tests {
		d, bad := FixedLimit("l", "MaxWork", tt.asked, 100)
		if bad != (tt.want != "") || d.Msg != tt.want || (bad && d.Pos != -1) {
			t.Errorf("FixedLimit(%d): %v %v, want %q", tt.asked, d, bad, tt.want)
		}
	}
}

func TestUndeclared(t *testing.T) {
	env := &Env{Name: "e", Vars: []Var{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	want := []Diagnostic{{Pos: -1, Msg: `environment "e" declares variable "b", which l cannot bind`}}
	if diff := cmp.Diff(want, Undeclared("l", env, "a", "c")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if ds := Undeclared("l", env, "a", "b", "c"); ds != nil {
		t.Errorf("got %v", ds)
	}
}
