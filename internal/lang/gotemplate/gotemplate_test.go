package gotemplate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/template"
)

func env() *lang.Env {
	return &lang.Env{Name: "test.value", Vars: []lang.Var{{Name: VarTarget}, {Name: VarNamespace}, {Name: VarSelectedItem}, {Name: VarSelectKeyParts}}}
}

func compile(t *testing.T, src string) *Program {
	t.Helper()
	p, ds := Language{}.CompileText(env(), src)
	if ds != nil {
		t.Fatalf("Compile(%q): %v", src, ds)
	}
	return p
}

func TestCompile(t *testing.T) {
	deepRange := "{{range .a}}{{range .}}{{range .}}{{range .}}{{range .}}{{end}}{{end}}{{end}}{{end}}{{end}}"
	tests := []struct {
		name    string
		env     *lang.Env
		src     string
		static  bool
		wantPos []int // the diagnostics' positions; nil: compiles
		msg     string
	}{
		{name: "static", env: env(), src: "nginx:1.25", static: true},
		{name: "field", env: env(), src: "{{ .Target.metadata.name }}-{{ .Namespace }}"},
		{name: "placeholder", env: env(), src: "{{ .#0 }}"},
		{name: "no vars needed", env: &lang.Env{Name: "e"}, src: "{{ .SelectedItem }}"},
		{name: "unclosed action", env: env(), src: "{{ .Target.a ", wantPos: []int{0}, msg: "unclosed action"},
		{name: "third line", env: env(), src: "a\nb\n{{ nosuch }}", wantPos: []int{4}, msg: `function "nosuch" not defined`},
		{name: "blocked", env: env(), src: `{{ env "HOME" }}`, wantPos: []int{0}, msg: "env is disabled"},
		{name: "range too deep", env: env(), src: deepRange, wantPos: []int{53}, msg: "MaxRangeDepth"},
		{name: "undeclared var", env: &lang.Env{Name: "e", Vars: []lang.Var{{Name: VarTarget}, {Name: "oldObject"}}}, src: "x",
			wantPos: []int{-1}, msg: `environment "e" declares variable "oldObject", which gotemplate cannot bind`},
		{name: "limits equal to the leaf's", env: &lang.Env{Limits: lang.Limits{MaxOutput: template.MaxOutput, MaxWork: template.MaxWork, MaxValues: 3}}, src: "x", static: true},
		{name: "limits above the leaf's", env: &lang.Env{Limits: lang.Limits{MaxOutput: template.MaxOutput + 1, MaxWork: template.MaxWork + 1}}, src: "x",
			wantPos: []int{-1, -1}, msg: "cannot be honoured"},
		{name: "limit below the leaf's", env: &lang.Env{Limits: lang.Limits{MaxWork: 100}}, src: "x",
			wantPos: []int{-1}, msg: "limit MaxWork 100 is not supported: gotemplate's bound is fixed at 33554432"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ds := Language{}.Compile(tt.env, tt.src)
			var pos []int
			for _, d := range ds {
				pos = append(pos, d.Pos)
				if !strings.Contains(d.Msg, tt.msg) {
					t.Errorf("diagnostic %q does not say %q", d.Msg, tt.msg)
				}
			}
			if diff := cmp.Diff(tt.wantPos, pos); diff != "" {
				t.Fatalf("positions (-want +got):\n%s\n%v", diff, ds)
			}
			if tt.wantPos != nil {
				if p != nil {
					t.Fatal("a program with diagnostics")
				}
				return
			}
			x := p.(lang.Text)
			if x.Source() != tt.src || x.Static() != tt.static {
				t.Errorf("Source %q Static %v, want %q %v", x.Source(), x.Static(), tt.src, tt.static)
			}
		})
	}
}

var target = map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "x"}}, "n": json.Number("3")}

func TestRenderMatchesLeaf(t *testing.T) {
	in := &lang.Activation{Object: target, Namespace: "prod", Item: map[string]any{"image": "nginx"}, Keys: []any{2, "c"}}
	data := &template.Data{Target: target, Namespace: "prod", SelectedItem: in.Item, SelectKeyParts: in.Keys}
	for _, src := range []string{
		"static", "{{ .Target.metadata.name }}-{{ .Namespace }}", "{{ .SelectedItem.image }}", "{{ .#0 }}/{{ .#1 }}",
		`{{ regexReplaceAll "n(.*)" .SelectedItem.image "${1}" }}`, "{{ range $k, $v := .Target.metadata.labels }}{{ $k }}={{ $v }}{{ end }}",
		"{{ .Target.missing }}",
	} {
		p := compile(t, src)
		tm, err := template.Compile(env().Name, src)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := tm.Execute(data)
		got, err := p.Render(context.Background(), in)
		if diff := cmp.Diff(want, got); diff != "" || (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v (leaf %v) (-leaf +got):\n%s", src, err, wantErr, diff)
		}
		v, err := p.Eval(context.Background(), in)
		if err != nil || v != any(want) {
			t.Errorf("%s: Eval %v, %v, want %q", src, v, err, want)
		}
	}
}

func TestValue(t *testing.T) {
	tests := []struct {
		src  string
		want any
		err  error
	}{
		{"8080", json.Number("8080"), nil},
		{`"8080"`, "8080", nil},
		{"[a, b]", []any{"a", "b"}, nil},
		{"{{ .Namespace }}", nil, ErrNotStatic},
	}
	for _, tt := range tests {
		got, err := compile(t, tt.src).Value()
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: error %v, want %v", tt.src, err, tt.err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.src, diff)
		}
		if tt.err == nil {
			v, err := ParseValue(tt.src)
			if err != nil || !cmp.Equal(tt.want, v) {
				t.Errorf("ParseValue(%s): %v, %v", tt.src, v, err)
			}
		}
	}
	deep := strings.Repeat("[", template.MaxValueDepth+1) + strings.Repeat("]", template.MaxValueDepth+1)
	if _, err := ParseValue(deep); !errors.Is(err, template.ErrLimit) {
		t.Errorf("ParseValue too deep: %v, want ErrLimit", err)
	}
}

func TestErrorsUnchanged(t *testing.T) {
	in := &lang.Activation{Object: target}
	p := compile(t, "{{ len (until 10000000) }}")
	if _, err := p.Render(context.Background(), in); !errors.Is(err, template.ErrLimit) || !errors.Is(err, template.ErrTemplate) {
		t.Errorf("Render: got %v, want ErrLimit", err)
	}
	if _, err := p.Eval(context.Background(), in); !errors.Is(err, template.ErrLimit) {
		t.Errorf("Eval: got %v, want ErrLimit", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, src := range []string{"{{ .Namespace }}", "static"} {
		if _, err := compile(t, src).Render(ctx, in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s, canceled: got %v", src, err)
		}
	}
}

// TestRenderAllocs: binding the Activation costs no allocation beyond the
// leaf's Execute with a Data the caller already has.
func TestRenderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector")
	}
	in := &lang.Activation{Object: target, Namespace: "prod"}
	data := &template.Data{Target: target, Namespace: "prod"}
	for _, src := range []string{"{{ .Target.metadata.name }}-{{ .Namespace }}", `{{ printf "%s-%s" .Target.metadata.name .Namespace }}`} {
		p := compile(t, src)
		tm, _ := template.Compile(env().Name, src)
		_, _ = p.Render(context.Background(), in)
		got := testing.AllocsPerRun(100, func() { _, _ = p.Render(context.Background(), in) })
		want := testing.AllocsPerRun(100, func() { _, _ = tm.Execute(data) })
		if got > want {
			t.Errorf("%s: Render %v allocs, leaf Execute %v", src, got, want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	p := compile(t, `{{ .Target.metadata.name }}-{{ .Namespace }}-{{ printf "%v" .SelectedItem }}`)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := string(rune('a' + i))
			in := &lang.Activation{Object: target, Namespace: ns, Item: i}
			want := "web-" + ns + "-" + string(rune('0'+i))
			for range 100 {
				if got, err := p.Render(context.Background(), in); err != nil || got != want {
					t.Errorf("got %q, %v, want %q", got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkRender(b *testing.B) {
	src := `{{ printf "%s-%s" .Target.metadata.name .Namespace }}`
	p, ds := Language{}.CompileText(env(), src)
	if ds != nil {
		b.Fatal(ds)
	}
	tm, _ := template.Compile(env().Name, src)
	in := &lang.Activation{Object: target, Namespace: "prod"}
	data := &template.Data{Target: target, Namespace: "prod"}
	b.Run("Program.Render", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Render(context.Background(), in)
		}
	})
	b.Run("leaf.Execute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = tm.Execute(data)
		}
	})
}
