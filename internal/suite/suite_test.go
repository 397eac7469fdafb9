package suite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const header = "apiVersion: modwright.io/v1alpha1\nkind: TestSuite\nrules: [r]\nresources: [m]\n"

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string // each must occur in the error; none: valid
	}{
		{"valid", header + "cases: [{resource: Pod/p, expect: unchanged}]", nil},
		{"unknown field", header + "cases: [{resource: Pod/p, expect: unchanged, expected: x}]", []string{`unknown field "cases[0].expected"`}},
		{"wrong kind", "apiVersion: v1\nkind: Suite\ncases: [{resource: Pod/p, expect: unchanged}]",
			[]string{"apiVersion: must be modwright.io/v1alpha1", "kind: must be TestSuite", "rules: required"}},
		{"no cases", header, []string{"cases: required"}},
		{"resource and object", header + "cases: [{resource: Pod/p, object: {kind: Pod}, expect: unchanged}]", []string{"cases[0]: has both resource and object"}},
		{"bad reference", header + "cases: [{resource: a/b/c/d, expect: unchanged}]", []string{"cases[0].resource: must be Kind/name"}},
		{"result on a rejection", header + "cases: [{resource: Pod/p, expect: rejected, result: x.yaml}]", []string{"cases[0].result: only admitted and patched"}},
		{"message on admission", header + "cases: [{resource: Pod/p, expect: admitted, message: x}]", []string{"cases[0].message: only rejected"}},
		{"object not an object", header + "cases: [{object: [1], expect: admitted}]", []string{"cases[0].object: must be an object"}},
		{"bad case operation", header + "cases: [{resource: Pod/p, expect: admitted, operation: PATCH}]", []string{"cases[0].operation: must be CREATE"}},
		{"no resources to refer to", "apiVersion: modwright.io/v1alpha1\nkind: TestSuite\nrules: [r]\ncases: [{resource: Pod/p, expect: admitted}]", []string{"the suite has no resources"}},
		{"old on CREATE", header + "cases: [{resource: Pod/p, expect: admitted, old: o.yaml}]",
			[]string{"cases[0].old: is the old object of an UPDATE, and the operation is CREATE: give operation: UPDATE"}},
		{"old on DELETE", header + "operation: DELETE\ncases: [{resource: Pod/p, expect: admitted, oldObject: {kind: Pod}}]",
			[]string{"cases[0].old: is refused with DELETE"}},
		{"old and oldObject", header + "cases: [{resource: Pod/p, operation: update, expect: admitted, old: o.yaml, oldObject: {kind: Pod}}]",
			[]string{"cases[0]: has both old and oldObject"}},
		{"oldObject not an object", header + "operation: UPDATE\ncases: [{resource: Pod/p, expect: admitted, oldObject: 3}]",
			[]string{"cases[0].oldObject: must be an object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("dir/"+FileName, []byte(tt.text))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if s.Operation != "CREATE" || s.Namespace != "default" || s.Dir != "dir" {
					t.Errorf("defaults: %+v", s)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
			for _, w := range append(tt.want, "dir/"+FileName) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestOld(t *testing.T) {
	s, err := Parse(FileName, []byte(header+"operation: UPDATE\ncases: [{resource: Pod/p, expect: admitted, oldObject: {kind: Pod, x: 1.50}}, {resource: Pod/p, expect: admitted, old: o.yaml}]"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Cases[0].OldObj["x"]; got == nil || s.Cases[1].Old != "o.yaml" || s.Cases[1].OldObj != nil {
		t.Errorf("old objects: %#v, %#v", s.Cases[0], s.Cases[1])
	}
}

func TestInlineObjectsKeepNumbers(t *testing.T) {
	s, err := Parse(FileName, []byte(header+"cases: [{object: {kind: Pod, x: 10000000000000000001}, expect: patched, resultObject: {kind: Pod, x: 1.50}}]"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	got := []string{c.Obj["x"].(interface{ String() string }).String(), c.ResultObj["x"].(interface{ String() string }).String()}
	if diff := cmp.Diff([]string{"10000000000000000001", "1.5"}, got); diff != "" {
		t.Errorf("numbers (-want +got):\n%s", diff)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b/" + FileName, "a/c/" + FileName, "a/other.yaml", FileName} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Find([]string{dir, filepath.Join(dir, "a/other.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i], _ = filepath.Rel(dir, got[i])
	}
	want := []string{"a/c/" + FileName, "b/" + FileName, FileName, "a/other.yaml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
	if _, err := Find([]string{filepath.Join(dir, "nope")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("missing path: %v", err)
	}
}

func TestFindFiles(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b.yaml", "a/z.json", "a/y.txt", "a/x.yml", "d.yaml/e.txt"} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yaml := func(p string) bool { return filepath.Ext(p) == ".yaml" || filepath.Ext(p) == ".yml" }
	// A file given by name is taken whatever its name; directories matching
	// by name (d.yaml) are searched, not taken.
	got, err := FindFiles([]string{filepath.Join(dir, "a", "y.txt"), dir}, yaml)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i], _ = filepath.Rel(dir, got[i])
	}
	want := []string{"a/y.txt", "a/x.yml", "b.yaml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FindFiles (-want +got):\n%s", diff)
	}
	if _, err := FindFiles([]string{filepath.Join(dir, "nope")}, yaml); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Errorf("missing path: %v", err)
	}
}

func TestTitle(t *testing.T) {
	s, err := Parse(FileName, []byte(header+`cases:
  - {name: named, resource: Pod/p, expect: admitted}
  - {resource: Pod/p, expect: admitted}
  - {object: {kind: Pod, metadata: {name: q}}, expect: admitted}
  - {object: {kind: Pod}, expect: admitted}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range s.Cases {
		got = append(got, s.Cases[i].Title(i))
	}
	if diff := cmp.Diff([]string{"named", "Pod/p", "Pod/q", "cases[3]"}, got); diff != "" {
		t.Errorf("titles (-want +got):\n%s", diff)
	}
}

// TestLoadKyvernoFieldNames: a kyverno-test.yaml is decoded as Kyverno's
// CLI decodes it: a field's name matches whatever its case, an unknown
// field is an error.
func TestLoadKyvernoFieldNames(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, KyvernoFileName)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kt, err := LoadKyverno(write("apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\npolicies: [p.yaml]\nresults:\n- {policy: p, isMUtatingPolicy: true, result: pass}\n"))
	if err != nil || len(kt.Results) != 1 || !kt.Results[0].IsMutatingPolicy {
		t.Fatalf("isMUtatingPolicy: %v, %+v", err, kt)
	}
	if _, err := LoadKyverno(write("apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\npolicies: [p.yaml]\nresults:\n- {policy: p, isMutating: true, result: pass}\n")); err == nil || !strings.Contains(err.Error(), `unknown field "isMutating"`) {
		t.Fatalf("an unknown field: %v", err)
	}
}
