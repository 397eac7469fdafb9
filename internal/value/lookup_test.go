package value

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookup(t *testing.T) {
	tree := map[string]any{
		"metadata": map[string]any{"name": "p", "labels": nil},
		"spec":     []any{map[string]any{"x": json.Number("1")}},
	}
	for _, tt := range []struct {
		name   string
		keys   []string
		want   any
		wantOK bool
	}{
		{"no keys", nil, tree, true},
		{"member", []string{"metadata", "name"}, "p", true},
		{"null member", []string{"metadata", "labels"}, nil, true},
		{"missing", []string{"metadata", "namespace"}, nil, false},
		{"through a string", []string{"metadata", "name", "x"}, nil, false},
		{"through a null", []string{"metadata", "labels", "x"}, nil, false},
		{"through an array", []string{"spec", "0"}, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Lookup(tree, tt.keys...)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
