package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"text/template"
)

// deepObject is a value nested depth maps deep.
func deepObject(depth int) any {
	var v any = "x"
	for range depth {
		v = map[string]any{"a": v}
	}
	return v
}

// bigObject is a map of n entries of 100 bytes.
func bigObject(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("k%05d", i)] = strings.Repeat("v", 100)
	}
	return m
}

// TestExecuteLimits runs templates that, before the bounds, built hundreds
// of megabytes or ran for seconds with larger arguments; the arguments here
// are just past each bound, so the test stays cheap even without them.
func TestExecuteLimits(t *testing.T) {
	data := &Data{Target: map[string]any{"small": bigObject(100), "deep": deepObject(8000), "deep2k": deepObject(2000),
		"big": strings.Repeat("a", 1_000_000), "json": "[" + strings.Repeat("1,", 50_000) + "1]"}}
	tests := []struct {
		name, text, limit string
	}{
		{"until", `{{ len (until 10000000) }}`, "MaxList"},
		{"until negative", `{{ len (until -10000000) }}`, "MaxList"},
		{"untilStep", `{{ len (untilStep 0 10000000 1) }}`, "MaxList"},
		{"untilStep counter overflow", `{{ len (untilStep 0 9223372036854775807 1000000000000000000) }}`, "overflows"},
		{"seq", `{{ seq 1 1000000 }}`, "MaxList"},
		{"seq one arg", `{{ seq 1000000 }}`, "MaxList"},
		{"repeat", `{{ len (repeat 10000000 "x") }}`, "MaxOutput"},
		{"randAlpha", `{{ len (randAlpha 100000) }}`, "MaxWork"},
		{"randBytes", `{{ len (randBytes 100000) }}`, "MaxWork"},
		{"indent", `{{ len (indent 10000000 "x") }}`, "MaxOutput"},
		{"nindent", `{{ len (nindent 3000 (repeat 1000 "\n")) }}`, "MaxOutput"},
		{"printf width", `{{ printf "%0100000000d" 1 }}`, "MaxFormatWidth"},
		{"printf star width", `{{ printf "%*d" 100000000 1 }}`, "MaxFormatWidth"},
		{"printf indexed star", `{{ printf "%[2]*[1]d" 1 100000000 }}`, "MaxFormatWidth"},
		{"printf precision", `{{ printf "%.100000f" 1.0 }}`, "MaxFormatWidth"},
		{"replace empty", `{{ len (replace "" (repeat 100 "x") (repeat 100000 "y")) }}`, "MaxOutput"},
		{"wrapWith", `{{ len (wrapWith 1 (repeat 1000 "-") (repeat 10000 "y ")) }}`, "MaxOutput"},
		{"regexReplaceAll empty match", `{{ len (regexReplaceAll "" (repeat 100000 "a") (repeat 100 "b")) }}`, "MaxOutput"},
		{"regexReplaceAll expansion", `{{ len (regexReplaceAll "(a*)" .Target.big "${1}${1}${1}") }}`, "MaxOutput"},
		{"regexReplaceAllLiteral", `{{ len (regexReplaceAllLiteral "" (repeat 100000 "a") (repeat 100 "b")) }}`, "MaxOutput"},
		{"splitList", `{{ len (splitList "" .Target.big) }}`, "MaxList"},
		{"split", `{{ len (split "a" .Target.big) }}`, "MaxList"},
		{"regexFindAll", `{{ len (regexFindAll "a" .Target.big -1) }}`, "MaxList"},
		{"regexSplit", `{{ len (regexSplit "a" .Target.big -1) }}`, "MaxList"},
		{"uniq quadratic", `{{ len (uniq (until 20000)) }}`, "MaxWork"},
		{"join separator", `{{ len (join (repeat 100000 "x") (until 100)) }}`, "MaxOutput"},
		{"toPrettyJson of a deep object", `{{ len (toPrettyJson .Target.deep) }}`, "MaxWork"},
		{"rendered output", `{{ .Target.big }}{{ .Target.big }}{{ .Target.big }}`, "MaxOutput"},
		{"rendered output in a loop", `{{ range until 1000 }}{{ $.Target.big }}{{ end }}`, "MaxOutput"},
		{"range iterations", `{{ range until 20000 }}{{ end }}`, "MaxSteps"},
		{"range over an integer", `{{ range 100000 }}{{ end }}`, "MaxSteps"},
		{"nested ranges", `{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}`, "MaxSteps"},
		{"nested ranges over the object", `{{ range $.Target.small }}{{ range $.Target.small }}{{ range $.Target.small }}{{ end }}{{ end }}{{ end }}`, "MaxSteps"},
		{"recursion", `{{ define "r" }}{{ if lt (len .) 16 }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ end }}{{ end }}{{ template "r" list }}`, "MaxWork"},
		{"infinite recursion", `{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" 1 }}`, "MaxSteps"},
		{"work in a loop", `{{ range until 5000 }}{{ $x := toJson $.Target.small }}{{ end }}`, "MaxWork"},
		{"printing the object in a loop", `{{ range until 5000 }}{{ $x := toString $.Target.small }}{{ end }}`, "MaxWork"},
		{"appending in a loop", `{{ $l := list }}{{ range until 9000 }}{{ $l = append $l . }}{{ end }}{{ len $l }}`, "MaxWork"},
		{"deepCopy of a deep object", `{{ range until 20 }}{{ $x := deepCopy $.Target.deep2k }}{{ end }}`, "MaxWork"},
		{"fromJson in a loop", `{{ range until 100 }}{{ $x := fromJson $.Target.json }}{{ end }}`, "MaxWork"},
		{"time zones in a loop", `{{ range until 5000 }}{{ $x := dateInZone "2006" now "UTC" }}{{ end }}`, "MaxWork"},
		{"comparing long strings in a loop", `{{ range until 5000 }}{{ if eq $.Target.big (printf "%s" $.Target.big) }}{{ end }}{{ end }}`, "MaxWork"},
		{"has with a big needle", `{{ has $.Target (until 100) }}`, "MaxWork"},
		{"without on big values", `{{ without (list $.Target $.Target $.Target $.Target) 1 2 3 4 5 6 7 8 9 10 }}`, "MaxWork"},
		{"big loop body", `{{ range until 3000 }}` + strings.Repeat(`{{ $x := add 1 2 }}`, 200) + `{{ end }}`, "MaxWork"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, err := Compile("spec.patch[0].value", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tpl.Execute(data)
			if !errors.Is(err, ErrLimit) || !errors.Is(err, ErrTemplate) {
				t.Fatalf("got %d bytes of output and error %v, want ErrLimit", len(out), err)
			}
			if !strings.Contains(err.Error(), tt.limit) || !strings.Contains(err.Error(), "spec.patch[0].value") {
				t.Errorf("error %q does not name the field and %s", err, tt.limit)
			}
		})
	}
}

// TestExecuteWithinLimits: real templates, and each bounded function used
// as intended, still render.
func TestExecuteWithinLimits(t *testing.T) {
	data := &Data{
		Target:    map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"a": "1", "b": "2"}}, "items": []any{"x", "y"}, "big": strings.Repeat("a", 1_000_000)},
		Namespace: "ns",
	}
	tests := []struct{ text, want string }{
		{`{{ len (until 100000) }}`, "100000"},
		{`{{ until 3 }}`, "[0 1 2]"},
		{`{{ untilStep 10 0 -3 }}`, "[10 7 4 1]"},
		{`{{ seq 3 }} {{ seq 5 3 }} {{ seq 0 2 6 }} {{ seq 0 }}`, "1 2 3 5 4 3 0 2 4 6 1 0"},
		{`{{ repeat 3 "ab" }}`, "ababab"},
		{`{{ len (randAlpha 16) }}`, "16"},
		{`{{ indent 2 "a\nb" }}`, "  a\n  b"},
		{`{{ printf "%05d-%s-%.2f" 42 "x" 1.5 }}`, "00042-x-1.50"},
		{`{{ printf "%[2]*[1]d|%-4[3]s|" 12 5 "ab" }}`, "   12|ab  |"},
		{`{{ printf "%d%%" 5 }}`, "5%"},
		{`{{ replace "-" "_" .Target.metadata.name }}`, "web"},
		{`{{ regexReplaceAll "(.+)/(.*)" "repo1/nginx:1" "my-repo/${2}" }}`, "my-repo/nginx:1"},
		{`{{ regexReplaceAllLiteral "a" "banana" "$1" }}`, "b$1n$1n$1"},
		{`{{ splitList "," "a,b,c" | join "+" }}`, "a+b+c"},
		{`{{ len (splitList "," .Target.big) }}`, "1"},
		{`{{ regexFindAll "a" "banana" -1 }}`, "[a a a]"},
		{`{{ regexSplit "n" "banana" -1 }}`, "[ba a a]"},
		{`{{ uniq (list 1 1 2) }}`, "[1 2]"},
		{`{{ range $k, $v := .Target.metadata.labels }}{{ $k }}={{ $v }};{{ end }}`, "a=1;b=2;"},
		{`{{ range .Target.items }}{{ range $.Target.items }}{{ . }}{{ end }}{{ else }}none{{ end }}`, "xyxy"},
		{`{{ range .Target.missing }}x{{ else }}none{{ end }}`, "none"},
		{`{{ range $i := 3 }}{{ $i }}{{ end }}`, "012"},
		{`{{ range until 5 }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}`, "012"},
		{`{{ define "x" }}<{{ . }}>{{ end }}{{ template "x" .Namespace }}{{ template "x" 1 }}`, "<ns><1>"},
		{`{{ toJson .Target.metadata }}`, `{"labels":{"a":"1","b":"2"},"name":"web"}`},
		{`{{ html "<a>" }}{{ js "'" }}{{ urlquery "a b" }}{{ print 1 2 }}{{ println "x" }}`, "&lt;a&gt;\\'a+b1 2x\n"},
		{`{{ len .Target.big }}`, "1000000"},
		{`{{ wrapWith 3 "|" "ab cd ef" }}`, "ab|cd|ef"},
	}
	for _, tt := range tests {
		tpl, err := Compile("v", tt.text)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.text, err)
			continue
		}
		// Twice: the meter is reset between executions.
		for range 2 {
			got, err := tpl.Execute(data)
			if err != nil || got != tt.want {
				t.Errorf("%q = %q, %v; want %q", tt.text, got, err, tt.want)
				break
			}
		}
	}
}

// TestBudgetIsPerExecution: a template using most of a budget runs again
// and again, also concurrently.
func TestBudgetIsPerExecution(t *testing.T) {
	tpl, err := Compile("v", `{{ range until 8000 }}{{ end }}{{ len (repeat 2000000 "x") }}`)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 {
				if out, err := tpl.Execute(&Data{}); err != nil || out != "2000000" {
					t.Errorf("got %q, %v", out, err)
				}
			}
		})
	}
	wg.Wait()
}

func TestRangeDepthLimit(t *testing.T) {
	ok := `{{ range until 2 }}{{ range until 2 }}{{ range until 2 }}{{ range until 2 }}x{{ end }}{{ end }}{{ end }}{{ end }}`
	if _, err := Compile("v", ok); err != nil {
		t.Fatalf("%d nested ranges: %v", MaxRangeDepth, err)
	}
	deep := "{{ if true }}\n" + `{{ range until 2 }}{{ with 1 }}{{ range until 2 }}{{ range until 2 }}{{ range until 2 }}{{ range until 2 }}x{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}`
	_, err := Compile("spec.patch[1].value", deep)
	if !errors.Is(err, ErrLimit) || !errors.Is(err, ErrTemplate) {
		t.Fatalf("want a limit error, got %v", err)
	}
	// The error points at the fifth range: line 2, column 97.
	if !strings.Contains(err.Error(), "spec.patch[1].value:2:97") || !strings.Contains(err.Error(), "MaxRangeDepth = 4") {
		t.Errorf("error %q does not give the position and the limit", err)
	}
	if _, err := Compile("v", `{{ define "x" }}`+ok+`{{ end }}{{ range until 2 }}{{ template "x" }}{{ end }}`); err != nil {
		t.Errorf("depth is counted per template: %v", err)
	}
}

// TestInstrumentationIsHidden: the loop counters cannot be called from a
// template, and instrumented templates print nothing extra.
func TestInstrumentationIsHidden(t *testing.T) {
	for _, text := range []string{`{{ __range 1 }}`, `{{ __loop_1 }}`} {
		if _, err := Compile("v", text); err == nil || !errors.Is(err, ErrTemplate) {
			t.Errorf("Compile(%q) = %v, want an error", text, err)
		}
	}
}

func TestParseValueDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if _, err := ParseValue(nest(MaxValueDepth)); err != nil {
		t.Fatalf("%d levels: %v", MaxValueDepth, err)
	}
	block := strings.Builder{}
	for i := range MaxValueDepth + 1 {
		fmt.Fprintf(&block, "%s- \n", strings.Repeat("  ", i))
	}
	for name, text := range map[string]string{
		"flow":           nest(MaxValueDepth + 1),
		"flow, 100,000":  nest(100_000),
		"block":          strings.Repeat("- ", MaxValueDepth+1) + "x",
		"JSON objects":   strings.Repeat(`{"a":`, MaxValueDepth+1) + "1" + strings.Repeat("}", MaxValueDepth+1),
		"indented lists": block.String(),
	} {
		_, err := ParseValue(text)
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxValueDepth = 1000") {
			t.Errorf("%s: got %v, want ErrLimit naming MaxValueDepth", name, err)
		}
	}
	// Many items are refused before parsing.
	if _, err := ParseValue("[" + strings.Repeat("1,", MaxValueItems) + "1]"); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxValueItems = 100000") {
		t.Errorf("%d items: got %v, want ErrLimit naming MaxValueItems", MaxValueItems+1, err)
	}
	if v, err := ParseValue("[" + strings.Repeat("1,", MaxValueItems/2) + "1]"); err != nil || len(v.([]any)) != MaxValueItems/2+1 {
		t.Errorf("%d items: %v", MaxValueItems/2+1, err)
	}
	// Brackets in quotes are text.
	if v, err := ParseValue(`"` + strings.Repeat("[", 2000) + `"`); err != nil || v != strings.Repeat("[", 2000) {
		t.Errorf("quoted brackets: %v", err)
	}
	if _, err := ParseValue(`[[`); err == nil || errors.Is(err, ErrLimit) {
		t.Errorf("invalid YAML: %v", err)
	}
}

// TestMethodCallsWithArguments: a method's work cannot be metered, so
// calling one with arguments does not compile; other references still do.
func TestMethodCallsWithArguments(t *testing.T) {
	for _, text := range []string{
		`{{ (now).Format .Target.layout }}`,
		`{{ $t := now }}{{ $t.Format "2006" }}`,
		`{{ "2006" | (now).Format }}`,
		`{{ if true }}{{ range until 2 }}{{ (semver "1.2.3").SetMetadata $.Target.layout }}{{ end }}{{ end }}`,
		`{{ define "x" }}{{ .Format "x" }}{{ end }}`,
		`{{ upper ((now).Format "x") }}`,
	} {
		_, err := Compile("spec.patch[0].value", text)
		if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "calling a method with arguments") || !strings.Contains(err.Error(), "spec.patch[0].value:1:") {
			t.Errorf("Compile(%q) = %v, want a method call error with its position", text, err)
		}
	}
	data := &Data{Target: map[string]any{"a": map[string]any{"b": "c"}}}
	for text, want := range map[string]string{
		`{{ gt (now).Unix 0 }}`:                    "true",
		`{{ (semver "1.2.3").Major }}`:             "1",
		`{{ $x := .Target }}{{ $x.a.b }}`:          "c",
		`{{ (index .Target "a").b }}`:              "c",
		`{{ .Target.a.b | upper }}`:                "C",
		`{{ date "2006" (toDate "2006" "2020") }}`: "2020",
	} {
		tpl, err := Compile("v", text)
		if err != nil {
			t.Errorf("Compile(%q): %v", text, err)
			continue
		}
		if got, err := tpl.Execute(data); err != nil || got != want {
			t.Errorf("%q = %q, %v; want %q", text, got, err, want)
		}
	}
}

// BenchmarkExecuteMetered runs a template with functions, a comparison and
// a range: the path the meter instruments.
func BenchmarkExecuteMetered(b *testing.B) {
	tpl, err := Compile("v", `{{ .Target.metadata.name | upper }}{{ if eq .Namespace "ns" }}-{{ end }}{{ range .Target.list }}{{ . }}{{ end }}`)
	if err != nil {
		b.Fatal(err)
	}
	data := &Data{Namespace: "ns", Target: map[string]any{"metadata": map[string]any{"name": "web"}, "list": []any{"a", "b"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tpl.Execute(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMeteringKeepsResults: instrumented templates render exactly what
// text/template renders, errors included.
func TestMeteringKeepsResults(t *testing.T) {
	data := &Data{Namespace: "ns", SelectKeyParts: []any{0, "k"}, Target: map[string]any{
		"m": map[string]any{"b": "2", "a": "1"}, "l": []any{"x", "y", "z"}, "n": json.Number("3"), "e": []any{}, "s": "str"}}
	texts := []string{
		`{{ range $i, $v := .Target.l }}{{ $i }}{{ $v }}{{ else }}none{{ end }}`,
		`{{ range .Target.e }}x{{ else }}empty{{ end }}`,
		`{{ range $k, $v := .Target.m }}{{ $k }}={{ $v }}{{ end }}`,
		`{{ range .Target.l }}{{ if eq . "y" }}{{ continue }}{{ end }}{{ if eq . "z" }}{{ break }}{{ end }}{{ . }}{{ end }}`,
		`{{ range $x := .Target.l }}{{ range $.Target.l }}{{ $x }}{{ . }}{{ end }}{{ end }}`,
		`{{ $c := 0 }}{{ range .Target.l }}{{ $c = add1 $c }}{{ end }}{{ $c }}`,
		`{{ range .Target.s }}{{ end }}`,
		`{{ range .Target.missing }}x{{ end }}y`,
		`{{ range 3 }}{{ . }}{{ end }}`,
		`{{ with .Target.m }}{{ .a }}{{ else with .Target.l }}l{{ end }}`,
		`{{ define "t" }}[{{ . }}]{{ end }}{{ range .Target.l }}{{ template "t" . }}{{ end }}{{ block "b" .Namespace }}<{{ . }}>{{ end }}`,
		`{{ .Target.l | join "," | upper | printf "%s-%d" }}`,
		`{{ printf "%s-%d" (.Target.l | join ",") 3 | quote }}`,
		`{{ index .Target.m "a" | eq "1" }}{{ lt 1 2 }}{{ ne .Target.n "3" }}`,
		`{{ toJson .Target }}{{ toPrettyJson .Target.m }}`,
		`{{ .Target.l | toStrings | sortAlpha | reverse }}`,
		`{{ index .SelectKeyParts 1 }}{{ len .Target.l }}{{ slice .Target.s 1 2 }}`,
		`{{ html "<x>" }}{{ js "a'b" }}{{ urlquery "a b" }}{{ print 1 "a" }}{{ println 2 }}`,
		`{{ until 3 }}{{ seq 3 }}{{ untilStep 0 10 4 }}{{ repeat 2 "ab" }}{{ indent 2 "a" }}{{ nindent 2 "b" }}`,
		`{{ regexReplaceAll "a(.)" "abacad" "${1}x" }}{{ regexFindAll "a." "abacad" 2 }}{{ regexSplit "a" "xayaz" -1 }}`,
		`{{ splitList "," "a,b" }}{{ split "," "a,b" }}{{ splitn "," 2 "a,b,c" }}{{ chunk 2 (list 1 2 3) }}{{ uniq (list 1 1 2) }}`,
		`{{ replace "a" "bb" "aaa" }}{{ wrapWith 2 "|" "ab cd" }}{{ trunc 2 "abc" }}`,
		`{{ index .Target 1 }}`,
		`{{ fail "boom" }}`,
		`{{ eq .Target.l .Target.l }}`,
		`{{ chunk 0 .Target.l }}`,
	}
	for _, text := range texts {
		tpl, err := Compile("v", text)
		if err != nil {
			t.Errorf("Compile(%q): %v", text, err)
			continue
		}
		got, gotErr := tpl.Execute(data)
		plain, err := template.New("v").Option("missingkey=default").Funcs(funcs).Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		wantErr := plain.Execute(&want, data)
		if (gotErr == nil) != (wantErr == nil) || wantErr == nil && got != want.String() {
			t.Errorf("%s: got %q, %v; want %q, %v", text, got, gotErr, want.String(), wantErr)
		}
	}
}

// FuzzExecute runs arbitrary templates: each compiles or not, and runs to a
// result or an error within the bounds, never a crash.
func FuzzExecute(f *testing.F) {
	for _, s := range []string{
		`{{ len (until 100) }}`, `{{ range $k, $v := .Target.m }}{{ $k }}{{ end }}`, `{{ repeat 3 "ab" | upper }}`,
		`{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" 1 }}`, `{{ printf "%*d" 5 3 }}`, `{{ regexReplaceAll "a" .Target.s "$0$0" }}`,
		`{{ eq .Target.s "x" }}`, `{{ toPrettyJson .Target }}`, `{{ range until 10 }}{{ range until 10 }}{{ . }}{{ end }}{{ end }}`,
	} {
		f.Add(s)
	}
	data := &Data{Namespace: "ns", Target: map[string]any{"m": map[string]any{"a": "1"}, "l": []any{"x"}, "s": "abc", "n": json.Number("3")}}
	f.Fuzz(func(t *testing.T, text string) {
		tpl, err := Compile("v", text)
		if err != nil {
			return
		}
		out, err := tpl.Execute(data)
		if err == nil && len(out) > MaxOutput {
			t.Fatalf("%d bytes of output", len(out))
		}
		if v, err := ParseValue(out); err == nil && tooDeep(v, MaxValueDepth) {
			t.Fatal("value too deep")
		}
	})
}
