package controller

import "testing"

// TestHolds: a stored spec holds the translation when every field of the
// translation is there as it is (the API server's defaults aside).
func TestHolds(t *testing.T) {
	want := map[string]any{"failurePolicy": "Fail", "validations": []any{map[string]any{"expression": "true", "message": "m"}}, "n": float64(3)}
	for _, c := range []struct {
		name string
		cur  map[string]any
		ok   bool
	}{
		{"defaults added", map[string]any{"failurePolicy": "Fail", "matchPolicy": "Equivalent", "validations": []any{map[string]any{"expression": "true", "message": "m", "reason": "Invalid"}}, "n": int64(3)}, true},
		{"a field changed", map[string]any{"failurePolicy": "Ignore", "validations": []any{map[string]any{"expression": "true", "message": "m"}}, "n": int64(3)}, false},
		{"a list longer", map[string]any{"failurePolicy": "Fail", "validations": []any{map[string]any{"expression": "true", "message": "m"}, map[string]any{"expression": "false"}}, "n": int64(3)}, false},
		{"a field missing", map[string]any{"failurePolicy": "Fail", "n": int64(3)}, false},
	} {
		if got := holds(c.cur, want); got != c.ok {
			t.Errorf("%s: holds = %v, want %v", c.name, got, c.ok)
		}
	}
}
