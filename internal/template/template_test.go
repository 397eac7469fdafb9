package template

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"text/template"
	"text/template/parse"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/value"
)

func TestExecute(t *testing.T) {
	target := map[string]any{
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "nginx"}},
		"spec": map[string]any{
			"replicas":    json.Number("3"),
			"containers":  []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
			"externalIPs": []any{"1.2.3.4", "5.6.7.8"},
		},
	}
	data := &Data{Target: target, Namespace: "ns1", SelectedItem: map[string]any{"image": "repo1/nginx:1"}, SelectKeyParts: []any{1, "x"}}
	tests := []struct {
		name, text, want string
	}{
		{"static", "hello", "hello"},
		{"namespace", "{{ .Namespace }}", "ns1"},
		{"target", "{{ .Target.metadata.name }}", "web"},
		{"number keeps its text", "{{ .Target.spec.replicas }}", "3"},
		{"list prints like KubeMod", "{{ .Target.spec.externalIPs }}", "[1.2.3.4 5.6.7.8]"},
		{"placeholder shorthand", `{{ index (index .Target.spec.containers .#0) "name" }}`, "b"},
		{"select key parts", "{{ index .SelectKeyParts 1 }}", "x"},
		{"selected item", `{{ regexReplaceAll "(.+)/(.*)" (index .SelectedItem "image") "my-repo/${2}" }}`, "my-repo/nginx:1"},
		{"sprig", `{{ "abc" | upper }}`, "ABC"},
		{"missing key", "{{ .Target.nothing }}", "<no value>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, err := Compile("value", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.Execute(data)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"{{ .Target", "unclosed action"},
		{`{{ env "HOME" }}`, "env is disabled"},
		{`{{ getHostByName "example.com" }}`, "getHostByName is disabled"},
		{`{{ set .Target "a" 1 }}`, "set is disabled"},
		{`{{ genPrivateKey "rsa" }}`, "genPrivateKey is disabled"},
		{`{{ noSuchFunc }}`, `function "noSuchFunc" not defined`},
	}
	for _, tt := range tests {
		_, err := Compile("spec.rejectMessage", tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrTemplate) {
			t.Errorf("Compile(%q) error = %v, want it to contain %q", tt.text, err, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), "spec.rejectMessage") {
			t.Errorf("Compile(%q) error %q does not name the field", tt.text, err)
		}
	}
}

func TestExecuteError(t *testing.T) {
	tpl, err := Compile("spec.rejectMessage", "{{ index .Target 1 }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tpl.Execute(&Data{Target: map[string]any{}}); !errors.Is(err, ErrTemplate) {
		t.Fatalf("want ErrTemplate, got %v", err)
	}
}

func TestTemplateDoesNotMutateTarget(t *testing.T) {
	target := map[string]any{"a": []any{"x"}}
	before := value.DeepCopy(target)
	tpl, err := Compile("v", `{{ $l := append .Target.a "y" }}{{ $l }}{{ $d := deepCopy .Target }}{{ $d }}{{ dig "b" "c" "dflt" .Target }}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tpl.Execute(&Data{Target: target}); err != nil {
		t.Fatal(err)
	}
	if !value.Equal(before, target) {
		t.Fatalf("target changed: %v", target)
	}
}

func reference(text string) (any, error) {
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, err
	}
	return value.Decode(j)
}

func TestParseValue(t *testing.T) {
	tests := []struct {
		text string
		want any
	}{
		{"8080", json.Number("8080")},
		{`"8080"`, "8080"},
		{"false", false},
		{`"false"`, "false"},
		{"", nil},
		{"null", nil},
		{"whatever", "whatever"},
		{"yes", true},
		{"on", true},
		{"0755", json.Number("493")},
		{"1.5", json.Number("1.5")},
		{"my-repo/nginx:1.14.2", "my-repo/nginx:1.14.2"},
		{"nginx-8598fccb59-", "nginx-8598fccb59-"},
		{`["hello"]`, []any{"hello"}},
		{"a: 1\nb:\n  - x", map[string]any{"a": json.Number("1"), "b": []any{"x"}}},
	}
	for _, tt := range tests {
		got, err := ParseValue(tt.text)
		if err != nil {
			t.Errorf("ParseValue(%q): %v", tt.text, err)
			continue
		}
		if !value.Equal(got, tt.want) {
			t.Errorf("ParseValue(%q) = %#v, want %#v", tt.text, got, tt.want)
		}
		ref, err := reference(tt.text)
		if err != nil || !value.Equal(got, ref) {
			t.Errorf("ParseValue(%q) = %#v disagrees with sigs.k8s.io/yaml %#v (%v)", tt.text, got, ref, err)
		}
	}
	if _, err := ParseValue("a: [1"); err == nil {
		t.Error("invalid YAML accepted")
	}
}

// FuzzParseValue checks that the fast path agrees with sigs.k8s.io/yaml.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"8080", "abc", "yes", "No", "0x1F", "1e3", "nginx:1.14", "a-b", "True", "null", "~", "on", "y", "n", "0", "01", "-1", "abc def", ".inf", "NaN", "a.b/c_d-e", "Off", "OFF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := fastScalar(s)
		if !ok {
			return
		}
		ref, err := reference(s)
		if err != nil {
			t.Fatalf("fast path accepted %q that YAML rejects: %v", s, err)
		}
		if diff := cmp.Diff(ref, fast); diff != "" && !value.Equal(ref, fast) {
			t.Fatalf("fast path disagrees for %q: (-yaml +fast)\n%s", s, diff)
		}
	})
}

func BenchmarkExecute(b *testing.B) {
	tpl, err := Compile("v", "{{ .Target.metadata.name }}-x")
	if err != nil {
		b.Fatal(err)
	}
	data := &Data{Target: map[string]any{"metadata": map[string]any{"name": "web"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tpl.Execute(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseValue(b *testing.B) {
	for _, text := range []string{"web-x", "8080", "runAsNonRoot: true\ncapabilities:\n  drop: [ALL]"} {
		b.Run(text[:3], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseValue(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFastPathAgreesWithTextTemplate renders templates both ways.
func TestFastPathAgreesWithTextTemplate(t *testing.T) {
	target := map[string]any{
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"on": true}, "n": json.Number("1e3"), "long": strings.Repeat("xy", 100)},
		"list":     []any{"a"},
		"obj":      map[string]any{},
		"null":     nil,
	}
	data := &Data{Target: target, Namespace: "ns", SelectedItem: map[string]any{"image": "x"}}
	texts := []string{
		"{{ .Target.metadata.name }}-x", "{{.Namespace}}/{{ .Target.metadata.name }}", "{{ .Target.metadata.labels.on }}",
		"{{ .Target.metadata.n }}", "{{ .Target.list }}", "{{ .Target.obj }}", "{{ .Target.null }}", "{{ .Target.missing }}",
		"{{ .Target.metadata.name.x }}", "{{ .SelectedItem.image }}", "{{ .Target }}", "a{{ .Namespace }}b{{ .Namespace }}c",
		"{{ .Target.metadata.long }}-{{ .Target.metadata.long }}", // past the stack buffer
	}
	for _, text := range texts {
		tpl, err := Compile("v", text)
		if err != nil {
			t.Fatal(err)
		}
		got, gotErr := tpl.Execute(data)
		slow := *tpl
		slow.fast = nil
		want, wantErr := slow.Execute(data)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%q: fast %q (%v), text/template %q (%v)", text, got, gotErr, want, wantErr)
		}
		if strings.Contains(text, ".Namespace") && tpl.fast == nil {
			t.Errorf("%q should take the fast path", text)
		}
	}
}

func TestUsedFuncs(t *testing.T) {
	src := `{{ define "x" }}{{ trim . }}{{ end }}{{ if upper .A }}{{ range splitList "," (lower .B) }}{{ . | quote }}{{ else }}{{ default "d" nil }}{{ end }}{{ else if b64enc "x" }}{{ with (list 1 2) }}{{ template "x" (toString .) }}{{ end }}{{ end }}{{ len (dict "k" 1) }}`
	trees, err := parse.Parse("t", src, "", "", funcs, builtins)
	if err != nil {
		t.Fatal(err)
	}
	got := template.FuncMap{}
	for _, tree := range trees {
		collectFuncs(tree.Root, got)
	}
	var names []string
	for k := range got {
		names = append(names, k)
	}
	sort.Strings(names)
	want := []string{"b64enc", "default", "dict", "list", "lower", "quote", "splitList", "toString", "trim", "upper"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if _, err := Compile("t", "{{ env \"HOME\" }}"); err == nil || !strings.Contains(err.Error(), "env is disabled in modwright") {
		t.Fatalf("blocked function: %v", err)
	}
	if _, err := Compile("t", `{{ define "x" }}{{ upper . }}{{ end }}{{ template "x" .Namespace }}`); err != nil {
		t.Fatal(err)
	}
	tm, err := Compile("t", `{{ range splitList "," .Namespace }}{{ . | upper | quote }}{{ end }}`)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tm.Execute(&Data{Namespace: "a,b"}); err != nil || out != `"A""B"` {
		t.Fatalf("%q %v", out, err)
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("spec.patch[0].value", `{{ .Target.metadata.name | upper }}-{{ .Namespace }}`); err != nil {
			b.Fatal(err)
		}
	}
}
