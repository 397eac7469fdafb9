package lang

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLazyFunc(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	l := &LazyFunc{Keys: []string{"a", "b"}, Get: func(name string) (any, error) {
		calls++
		if name == "b" {
			return nil, boom
		}
		return name + "!", nil
	}}
	for _, tc := range []struct {
		name string
		v    any
		ok   bool
		err  error
	}{
		{"a", "a!", true, nil},
		{"b", nil, true, boom},
		{"c", nil, false, nil},
	} {
		v, ok, err := l.Member(tc.name)
		if v != tc.v || ok != tc.ok || !errors.Is(err, tc.err) {
			t.Errorf("Member(%q) = %v, %v, %v, want %v, %v, %v", tc.name, v, ok, err, tc.v, tc.ok, tc.err)
		}
	}
	if calls != 2 {
		t.Errorf("Get called %d times, want 2", calls)
	}
	if diff := cmp.Diff([]string{"a", "b"}, l.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}
