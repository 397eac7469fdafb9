package jsonpath

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modwright/modwright/internal/jsonpath"
	leaf "github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/lang"
)

func env() *lang.Env {
	return &lang.Env{Name: "test.select", Vars: []lang.Var{{Name: VarObject}}}
}

func compile(t *testing.T, src string) *Program {
	t.Helper()
	p, ds := Language{}.CompileQuery(env(), src)
	if ds != nil {
		t.Fatalf("Compile(%q): %v", src, ds)
	}
	return p
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name  string
		env   *lang.Env
		src   string
		canon string
		want  []lang.Diagnostic
	}{
		{name: "path", env: env(), src: `$.spec.containers[*].image`, canon: `$.spec.containers[*].image`},
		{name: "computed", env: env(), src: `$.a + 1`, canon: `$.a + 1`},
		{name: "unclosed bracket", env: env(), src: `$.a[`, want: []lang.Diagnostic{{Pos: syntaxPos(`$.a[`), Msg: syntaxMsg(`$.a[`)}}},
		{name: "empty", env: env(), src: ``, want: []lang.Diagnostic{{Pos: 0, Msg: "empty expression"}}},
		{name: "no object", env: &lang.Env{Name: "e"}, src: `$.a`,
			want: []lang.Diagnostic{{Pos: -1, Msg: `environment "e" declares no "object" variable for a query's root`}}},
		{name: "limits equal to the leaf's", env: &lang.Env{Vars: env().Vars, Limits: lang.Limits{MaxValues: leaf.MaxValues, MaxWork: leaf.MaxVisits, MaxOutput: 10}}, src: `$.a`, canon: `$.a`},
		{name: "limits above the leaf's", env: &lang.Env{Vars: env().Vars, Limits: lang.Limits{MaxValues: leaf.MaxValues + 1, MaxWork: leaf.MaxVisits + 1}}, src: `$.a`,
			want: []lang.Diagnostic{
				{Pos: -1, Msg: "limit MaxValues 262145 cannot be honoured: jsonpath's bound is 262144"},
				{Pos: -1, Msg: "limit MaxWork 16777217 cannot be honoured: jsonpath's bound is 16777216"},
			}},
		{name: "limits below the leaf's", env: &lang.Env{Vars: env().Vars, Limits: lang.Limits{MaxValues: 10}}, src: `$.a`,
			want: []lang.Diagnostic{{Pos: -1, Msg: "limit MaxValues 10 is not supported: jsonpath's bound is fixed at 262144"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ds := Language{}.Compile(tt.env, tt.src)
			if diff := cmp.Diff(tt.want, ds); diff != "" {
				t.Fatalf("diagnostics (-want +got):\n%s", diff)
			}
			if tt.want != nil {
				if p != nil {
					t.Fatalf("program %v with diagnostics", p)
				}
				return
			}
			q := p.(lang.Query)
			if q.Source() != tt.src || q.Canonical() != tt.canon {
				t.Errorf("Source %q Canonical %q, want %q %q", q.Source(), q.Canonical(), tt.src, tt.canon)
			}
		})
	}
}

func syntaxPos(src string) int {
	var se *leaf.SyntaxError
	_, err := leaf.Parse(src)
	errors.As(err, &se)
	return se.Pos
}

func syntaxMsg(src string) string {
	var se *leaf.SyntaxError
	_, err := leaf.Parse(src)
	errors.As(err, &se)
	return se.Msg
}

func TestSyntaxPosition(t *testing.T) {
	// `$.a[` ends where the leaf says, at the end of the source.
	_, ds := Language{}.Compile(env(), `$.a[`)
	if len(ds) != 1 || ds[0].Pos != 4 {
		t.Errorf("got %v, want one diagnostic at 4", ds)
	}
}

var objects = []any{
	map[string]any{"a": "x", "spec": map[string]any{"containers": []any{
		map[string]any{"name": "a", "image": "nginx"}, map[string]any{"name": "b", "image": "redis"}}}},
	map[string]any{"a": []any{"1", "2"}},
	[]any{"z"},
	nil,
}

func TestEvalMatchesLeaf(t *testing.T) {
	ctx := context.Background()
	for _, src := range []string{`$.a`, `$.spec.containers[*].image`, `$..name`, `$.spec.containers[?(@.name == "b")]`, `length($.a)`, `$.*`, `$[0]`} {
		p := compile(t, src)
		e := leaf.MustParse(src)
		if p.IsPath() != e.IsQuery() || p.Definite() != e.Definite() || p.Captures() != e.Captures() {
			t.Errorf("%s: IsPath %v Definite %v Captures %d, leaf %v %v %d", src, p.IsPath(), p.Definite(), p.Captures(), e.IsQuery(), e.Definite(), e.Captures())
		}
		for i, obj := range objects {
			res, wantErr := e.Evaluate(ctx, obj)
			got, err := p.Eval(ctx, &lang.Activation{Object: obj})
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%s on %d: error %v, leaf %v", src, i, err, wantErr)
			}
			if err != nil {
				continue
			}
			if diff := cmp.Diff(res.Values, got); diff != "" {
				t.Errorf("%s on %d: Eval (-leaf +got):\n%s", src, i, diff)
			}
			vals, single, _ := p.Values(ctx, obj, nil)
			if diff := cmp.Diff(res.Values, vals); diff != "" || single != res.Single {
				t.Errorf("%s on %d: Values single %v (leaf %v) (-leaf +got):\n%s", src, i, single, res.Single, diff)
			}
			if !p.IsPath() {
				if _, err := p.Nodes(ctx, obj); !errors.Is(err, leaf.ErrNotQuery) {
					t.Errorf("%s: Nodes of a computed expression: %v", src, err)
				}
				continue
			}
			ns, err := e.Select(ctx, obj)
			if err != nil {
				t.Fatal(err)
			}
			var want []lang.Node
			for _, n := range ns {
				keys := slices.Clone(n.Keys)
				for j, k := range keys {
					if d, ok := k.(jsonpath.Descent); ok {
						keys[j] = lang.Path(d) // a descent's key, as the seam names it
					}
				}
				want = append(want, lang.Node{Value: n.Value, Keys: keys})
			}
			got2, err := p.Nodes(ctx, obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got2); diff != "" {
				t.Errorf("%s on %d: Nodes (-leaf +got):\n%s", src, i, diff)
			}
			// Appended to storage holding a node and keys already (NodesTo),
			// the same nodes after it, and it unchanged.
			first := lang.Node{Value: "first", Keys: []any{"k"}}
			dst, keys := append(make([]lang.Node, 0, 2), first), append(make([]any, 0, 3), "kept")
			got3, keys3, err := p.NodesTo(ctx, obj, dst, keys)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(append([]lang.Node{first}, want...), got3, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s on %d: NodesTo (-leaf +got):\n%s", src, i, diff)
			}
			if len(keys3) == 0 || keys3[0] != "kept" {
				t.Errorf("%s on %d: NodesTo's keys %v lost what they held", src, i, keys3)
			}
		}
	}
}

func TestValuesAppends(t *testing.T) {
	p := compile(t, `$.spec.containers[*].name`)
	dst := make([]any, 1, 8)
	dst[0] = "first"
	vals, single, err := p.Values(context.Background(), objects[0], dst)
	if err != nil || single {
		t.Fatalf("single %v, err %v", single, err)
	}
	if diff := cmp.Diff([]any{"first", "a", "b"}, vals); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if &vals[0] != &dst[0] {
		t.Error("Values did not append into dst's spare capacity")
	}
}

func deepArrays(depth int) any {
	var v any = "leaf"
	for i := 1; i < depth; i++ {
		v = []any{v}
	}
	return v
}

func TestErrorsUnchanged(t *testing.T) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		src  string
		obj  any
		want error
	}{
		{"too many values", ctx, `$..*..*`, deepArrays(2000), leaf.ErrTooManyValues},
		{"too much work", ctx, `$..x`, deepArrays(10010), leaf.ErrTooMuchWork},
		{"eval", ctx, `$.s + 1`, map[string]any{"s": "x"}, leaf.ErrEval},
		{"canceled", canceled, `$.a`, objects[0], context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := compile(t, tt.src)
			if _, err := p.Eval(tt.ctx, &lang.Activation{Object: tt.obj}); !errors.Is(err, tt.want) {
				t.Errorf("Eval: got %v, want %v", err, tt.want)
			}
			if _, _, err := p.Values(tt.ctx, tt.obj, nil); !errors.Is(err, tt.want) {
				t.Errorf("Values: got %v, want %v", err, tt.want)
			}
			if p.IsPath() {
				if _, err := p.Nodes(tt.ctx, tt.obj); !errors.Is(err, tt.want) {
					t.Errorf("Nodes: got %v, want %v", err, tt.want)
				}
			}
		})
	}
}

// TestValuesAllocs: Values allocates exactly what the leaf's
// EvaluateAppend does.
func TestValuesAllocs(t *testing.T) {
	ctx := context.Background()
	for _, src := range []string{`$.spec.containers[0].image`, `$.spec.containers[*].image`, `length($.a)`} {
		p, e := compile(t, src), leaf.MustParse(src)
		buf := make([]any, 0, 8)
		got := testing.AllocsPerRun(100, func() { _, _, _ = p.Values(ctx, objects[0], buf[:0]) })
		want := testing.AllocsPerRun(100, func() { _, _ = e.EvaluateAppend(ctx, objects[0], buf[:0]) })
		if got != want {
			t.Errorf("%s: Values %v allocs, EvaluateAppend %v", src, got, want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	p := compile(t, `$.spec.containers[*].image`)
	want := []any{"nginx", "redis"}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				got, err := p.Eval(context.Background(), &lang.Activation{Object: objects[0]})
				if err != nil || !cmp.Equal(want, got) {
					t.Errorf("got %v, %v", got, err)
					return
				}
				if ns, err := p.Nodes(context.Background(), objects[0]); err != nil || len(ns) != 2 {
					t.Errorf("nodes %v, %v", ns, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkValues(b *testing.B) {
	ctx := context.Background()
	src := `$.spec.containers[*].image`
	p, ds := Language{}.CompileQuery(env(), src)
	if ds != nil {
		b.Fatal(ds)
	}
	e := leaf.MustParse(src)
	buf := make([]any, 0, 8)
	b.Run("Program.Values", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = p.Values(ctx, objects[0], buf[:0])
		}
	})
	b.Run("leaf.EvaluateAppend", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = e.EvaluateAppend(ctx, objects[0], buf[:0])
		}
	})
}
