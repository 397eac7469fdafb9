package gatekeeper

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want location // nil: an error
		err  string
	}{
		{in: "spec.replicas", want: location{{field: "spec"}, {field: "replicas"}}},
		{in: "spec.containers[name: nginx].image", want: location{{field: "spec"}, {field: "containers"}, {list: true, key: "name", value: "nginx"}, {field: "image"}}},
		{in: "spec.containers[name:*].securityContext", want: location{{field: "spec"}, {field: "containers"}, {list: true, key: "name", glob: true}, {field: "securityContext"}}},
		{in: `metadata.annotations."example.com/owner"`, want: location{{field: "metadata"}, {field: "annotations"}, {field: "example.com/owner"}}},
		{in: `spec.ports[ port : 80 ].protocol`, want: location{{field: "spec"}, {field: "ports"}, {list: true, key: "port", value: int64(80)}, {field: "protocol"}}},
		{in: `spec.x['it\'s': "a b"]`, want: location{{field: "spec"}, {field: "x"}, {list: true, key: "it's", value: "a b"}}},
		{in: "spec.", err: "cannot end with '.'"},
		{in: "", err: "expected a field name"},
		{in: "spec..x", err: "expected a field name"},
		{in: "0spec", err: "expected a field name"},
		{in: "spec.containers[name]", err: "expected ':'"},
		{in: "spec.containers[name: x", err: "expected ']'"},
		{in: "spec.containers[name: x][a: b]", err: "expected '.' or the end"},
		{in: `spec."open`, err: "unterminated string"},
		{in: "spec.a/b", err: "expected '.' or the end"},
		{in: strings.Repeat("a.", 70) + "a", err: "more than 64 steps"},
		{in: strings.Repeat("a", 5000), err: "longer than 4096 bytes"},
	} {
		got, err := parseLocation(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, errLocation) {
				t.Errorf("%q: got %v, %v; want an error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(segment{})); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
		// A location prints as it parses.
		again, err := parseLocation(got.String())
		if err != nil || !cmp.Equal(got, again, cmp.AllowUnexported(segment{})) {
			t.Errorf("%q printed as %q reads %v, %v", tc.in, got.String(), again, err)
		}
	}
}

// FuzzLocation: any text parses or fails with errLocation, and what
// parses prints as itself.
func FuzzLocation(f *testing.F) {
	for _, s := range []string{"spec.containers[name: nginx].image", `metadata.labels."a/b"`, "a[b: *].c[d: 12]", `x['y\'': 'z']`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := parseLocation(s)
		if err != nil {
			if !errors.Is(err, errLocation) {
				t.Fatalf("%q: %v is not errLocation", s, err)
			}
			return
		}
		again, err := parseLocation(l.String())
		if err != nil || !cmp.Equal(l, again, cmp.AllowUnexported(segment{})) {
			t.Fatalf("%q printed as %q reads %v, %v", s, l.String(), again, err)
		}
	})
}
