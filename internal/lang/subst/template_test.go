package subst_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang/subst"
)

// mapResolver resolves an expression as a key of a map; a missing key is
// undefined.
type mapResolver map[string]any

var _ subst.Resolver = mapResolver(nil)

func (m mapResolver) Resolve(_ context.Context, expr string) (any, error) {
	v, ok := m[expr]
	if !ok {
		return nil, subst.ErrUndefined
	}
	return v, nil
}

var vars = mapResolver{
	"a":      json.Number("5"),
	"s":      "str",
	"k":      "s",
	"empty":  "",
	"null":   nil,
	"m":      map[string]any{"x": "y", "n": json.Number("1")},
	"l":      []any{"a", true},
	"deep":   "{{s}}!",
	"braces": "{{ not a var }}",
	"loop":   "x{{loop}}",
	"a b":    "spaced",
}

func TestRender(t *testing.T) {
	tests := []struct {
		name, src string
		cur       any
		want      any
	}{
		{"no variable", "plain text", nil, "plain text"},
		{"empty string", "", nil, ""},
		{"only a variable keeps its type", "{{a}}", nil, json.Number("5")},
		{"spaces trimmed", "{{   a  }}", nil, json.Number("5")},
		{"inner spaces kept", "{{ a b }}", nil, "spaced"},
		{"only a variable: null", "{{null}}", nil, nil},
		{"only a variable: map", "{{m}}", nil, map[string]any{"x": "y", "n": json.Number("1")}},
		{"embedded number", "n={{a}}", nil, "n=5"},
		{"embedded null", "v={{null}}", nil, "v=null"},
		{"embedded map as JSON", "m={{m}}", nil, `m={"n":1,"x":"y"}`},
		{"embedded list as JSON", "{{l}} ", nil, `["a",true] `},
		{"two variables", "{{s}}-{{a}}", nil, "str-5"},
		{"adjacent variables", "{{s}}{{s}}", nil, "strstr"},
		{"nested inside out", "{{ {{k}} }}", nil, "str"},
		{"nested in text", "<{{ {{k}} }}>", nil, "<str>"},
		{"escaped", `\{{s}}`, nil, "{{s}}"},
		{"escaped beside a variable", `\{{s}} {{s}}`, nil, "{{s}} str"},
		{"escaped outer, inner resolved", `\{{x.{{s}}}}`, nil, "{{x.str}}"},
		{"unclosed is text", "{{s", nil, "{{s"},
		{"unclosed outer, inner resolved", "{{ x {{s}}", nil, "{{ x str"},
		{"closing without opening is text", "s}}", nil, "s}}"},
		{"triple braces", "{{{s}}}", nil, "{str}"},
		{"single braces are text", "{s}", nil, "{s}"},
		{"current value", "{{@}}", json.Number("7"), json.Number("7")},
		{"current value spaced", "{{ @ }}", "v", "v"},
		{"current value embedded", "<{{@}}>", true, "<true>"},
		{"value never scanned again", "{{deep}} ", nil, "{{s}}! "},
		{"a value naming itself is text", "{{loop}} ", nil, "x{{loop}} "},
		{"only a variable: not scanned again", "{{deep}}", nil, "{{s}}!"},
		{"shallow value not scanned again", "{{- deep}} ", nil, "{{s}}! "},
		{"shallow value with braces", "<{{-braces}}>", nil, "<{{ not a var }}>"},
		{"shallow only a variable", "{{- s }}", nil, "str"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm, err := subst.Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tm.Render(context.Background(), vars, tt.cur)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Render(%q) (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name, src string
		is        error
		expr      string
		pos       int
	}{
		{"undefined", "x {{nope}}", subst.ErrUndefined, "nope", 2},
		{"undefined inner", "{{ s.{{nope}} }}", subst.ErrUndefined, "nope", 5},
		{"undefined outer", "{{ x{{k}} }}", subst.ErrUndefined, "xs", 0},
		{"empty after nesting", "{{ {{empty}} }}", nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm, err := subst.Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tm.Render(context.Background(), vars, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if tt.pos < 0 {
				return
			}
			var ve *subst.VarError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a *VarError", err)
			}
			if diff := cmp.Diff([]any{tt.expr, tt.pos}, []any{ve.Expr, ve.Pos}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, src string
		pos       int
	}{
		{"empty variable", "ab{{ }}", 2},
		{"empty shallow variable", "{{-}}", 0},
		{"too deep", strings.Repeat("{{ ", subst.MaxDepth+1) + "a" + strings.Repeat("}}", subst.MaxDepth+1), 3 * subst.MaxDepth},
		{"too long", strings.Repeat("a", subst.MaxSource+1), subst.MaxSource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := subst.Compile(tt.src)
			var se *subst.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			if se.Pos != tt.pos {
				t.Errorf("position %d, want %d (%v)", se.Pos, tt.pos, err)
			}
		})
	}
}

func TestTemplateInfo(t *testing.T) {
	tm, err := subst.Compile(`{{a}} {{ m.{{ k }} }} \{{s}} {{@}}`)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{tm.HasVariables(), tm.UsesCurrent(), tm.Expressions(),
		tm.ReplaceVariables(func(string) string { return "V" })}
	want := []any{true, true, []string{"a", "k"}, `V {{ m.V }} \{{s}} V`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDocument(t *testing.T) {
	doc := map[string]any{
		"static": map[string]any{"keep": "me", "n": json.Number("3000")},
		"pattern": map[string]any{
			"(spec)": map[string]any{"port": "3000", "n": json.Number("3000")},
			"ref":    "$(./../spec/port)",
			"below":  "$(<./../spec/port)",
			"num":    "$(>=./../spec/n)",
			"abs":    "x $(/static/keep)",
			"utf8":   "é$(/static/keep)",
			"esc":    `\$(ENV) \${ENV}`,
			"{{s}}":  "key substituted",
			"list":   []any{"{{a}}", "n={{a}}", json.Number("1")},
		},
	}
	d, err := subst.CompileDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Substitute(context.Background(), vars)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"static": map[string]any{"keep": "me", "n": json.Number("3000")},
		"pattern": map[string]any{
			"(spec)": map[string]any{"port": "3000", "n": json.Number("3000")},
			"ref":    "3000",
			"below":  "<3000",
			"num":    ">=3000.000000",
			"abs":    "x me",
			"utf8":   "éme",
			"esc":    `$(ENV) \${ENV}`,
			"str":    "key substituted",
			"list":   []any{json.Number("5"), "n=5", json.Number("1")},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !d.HasVariables() {
		t.Error("HasVariables is false")
	}
}

func TestDocumentStatic(t *testing.T) {
	doc := map[string]any{"a": []any{`x \{{y}}`, json.Number("1")}}
	d, err := subst.CompileDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Substitute(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{"x {{y}}", json.Number("1")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDocumentErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  any
		path string
		is   error
	}{
		{"undefined variable", map[string]any{"spec": map[string]any{"name": "{{nope}}"}}, "/spec/name", subst.ErrUndefined},
		{"undefined in a list", map[string]any{"l": []any{"ok", "{{nope}}"}}, "/l/1", subst.ErrUndefined},
		{"missing reference", map[string]any{"a": "$(./../b)"}, "/a", subst.ErrReference},
		{"reference to an object", map[string]any{"a": "$(./../b)", "b": map[string]any{"c": "d"}}, "/a", subst.ErrReference},
		{"reference to a number", map[string]any{"a": "$(./../b)", "b": json.Number("1")}, "/a", subst.ErrReference},
		{"empty reference", map[string]any{"a": "$(<)"}, "/a", subst.ErrReference},
		{"syntax", map[string]any{"a": "{{ }}"}, "/a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := subst.SubstituteAll(context.Background(), tt.doc, vars)
			var pe *subst.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PathError", err)
			}
			if pe.Path != tt.path {
				t.Errorf("path %q, want %q", pe.Path, tt.path)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

// echo resolves every expression to its own text.
type echo struct{}

func (echo) Resolve(_ context.Context, expr string) (any, error) { return expr, nil }

func FuzzCompile(f *testing.F) {
	for _, s := range []string{"", "{{a}}", `\{{a}}`, "{{ a.{{b}} }}", "{{{a}}}", "{{-a}} {{@}}", "{{", "}}", "{{ {{ }} }}", "$(./../a)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		tm, err := subst.Compile(s)
		if err != nil {
			var se *subst.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			return
		}
		_ = tm.ReplaceVariables(func(string) string { return "x" })
		_ = tm.Expressions()
		_, _ = tm.Render(context.Background(), echo{}, nil)
		_ = subst.HasReference(s)
	})
}

// BenchmarkRender renders ten variables embedded in text (the resolver is
// a map lookup: this is the package's own cost).
func BenchmarkRender(b *testing.B) {
	tm, err := subst.Compile(strings.Repeat("{{s}}-{{a}} ", 5))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tm.Render(ctx, vars, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNestedExpressions(t *testing.T) {
	for src, want := range map[string][]string{
		"{{ a }} {{ b.c }}":             nil,
		"{{ a.{{ b }} }}":               {"b"},
		"x {{ a.{{ b.{{ c }} }} }} y":   {"c"},
		"{{ a.{{ b }}.{{ c }} }} {{d}}": {"b", "c"},
	} {
		tm, err := subst.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, tm.NestedExpressions()); diff != "" {
			t.Errorf("NestedExpressions(%q) (-want +got):\n%s", src, diff)
		}
	}
}
