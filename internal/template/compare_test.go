package template

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"text/template"
)

// TestComparisonsAgreeWithBuiltins: the metered eq, ne, lt, le, gt and ge
// give exactly text/template's results and errors.
func TestComparisonsAgreeWithBuiltins(t *testing.T) {
	values := []any{nil, true, false, 0, 1, -1, int64(-5), int8(-3), int32(3), uint(3), uint8(3), 3, 1.5, float32(1.5), "a", "b", "",
		json.Number("3"), complex(1, 2), []any{1}, map[string]any{}, &Data{}}
	var texts []string
	for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
		texts = append(texts, "{{ "+op+" .Target.a .Target.b }}", "{{ "+op+" .Target.a 3 }}", "{{ "+op+` .Target.a "a" }}`,
			"{{ "+op+" .Target.missing .Target.a }}", "{{ .Target.a | "+op+" .Target.b }}", "{{ "+op+" 1 .Target.b }}")
	}
	texts = append(texts, "{{ eq .Target.a }}", "{{ eq .Target.a 1 2 3 }}", `{{ eq .Target.a "x" "a" }}`, "{{ eq 1 .Target.b .Target.a }}",
		"{{ if eq .Target.a .Target.b }}y{{ else }}n{{ end }}")
	for _, text := range texts {
		tpl, err := Compile("v", text)
		if err != nil {
			t.Fatal(err)
		}
		builtin := template.Must(template.New("v").Option("missingkey=default").Parse(text))
		for _, a := range values {
			for _, b := range values {
				data := &Data{Target: map[string]any{"a": a, "b": b}}
				got, gotErr := tpl.Execute(data)
				var want strings.Builder
				wantErr := builtin.Execute(&want, data)
				if (gotErr == nil) != (wantErr == nil) || got != want.String() && wantErr == nil {
					t.Errorf("%s with a=%#v b=%#v: got %q, %v; want %q, %v", text, a, b, got, gotErr, want.String(), wantErr)
					continue
				}
				if wantErr != nil {
					_, g, _ := strings.Cut(gotErr.Error(), "error calling")
					_, w, _ := strings.Cut(wantErr.Error(), "error calling")
					if g != w {
						t.Errorf("%s with a=%#v b=%#v: error %q, want %q", text, a, b, gotErr, wantErr)
					}
				}
			}
		}
	}
}

// TestComparisonsAreMetered: comparing long strings in a loop is charged.
func TestComparisonsAreMetered(t *testing.T) {
	long := strings.Repeat("x", 1_000_000)
	data := &Data{Target: map[string]any{"a": long + "a", "b": long + "b"}}
	for _, text := range []string{
		`{{ range until 10000 }}{{ if eq $.Target.a $.Target.b }}{{ end }}{{ end }}`,
		`{{ range until 10000 }}{{ if lt $.Target.a $.Target.b }}{{ end }}{{ end }}`,
		`{{ range until 10000 }}{{ if $.Target.a | ne $.Target.b }}{{ end }}{{ end }}`,
	} {
		tpl, err := Compile("v", text)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tpl.Execute(data); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxWork") {
			t.Errorf("%s: got %v, want the work limit", text, err)
		}
	}
}
