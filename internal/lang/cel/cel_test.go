package cel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/value"
)

func env() *lang.Env {
	return &lang.Env{Name: "test", Vars: []lang.Var{
		{Name: "object"}, {Name: "oldObject"}, {Name: "request"}, {Name: "namespaceObject"},
		{Name: "variables"}, {Name: "self"}, {Name: "oldSelf"}, {Name: "params"},
	}}
}

func compile(t testing.TB, src string) *Program {
	t.Helper()
	p, ds := Language{}.CompileExpr(env(), src)
	if ds != nil {
		t.Fatalf("Compile(%q): %v", src, ds)
	}
	return p
}

func decode(t testing.TB, s string) any {
	t.Helper()
	v, err := value.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []lang.Diagnostic // nil: compiles
	}{
		{src: "object.spec.replicas > 1"},
		{src: "has(object.metadata.labels) && 'app' in object.metadata.labels"},
		{src: "oldObject == null || request.operation == 'UPDATE'"},
		{src: "self.all(x, x > 0) && variables.foo && params.bar && namespaceObject.metadata.name != ''"},
		{src: "jsonpatch.escapeKey('k8s.io/my~label') == 'k8s.io~1my~0label'"},
		{src: "object.spec.replicas > 1 && unknownVar", want: []lang.Diagnostic{{Pos: 28, Msg: "undeclared reference to 'unknownVar' (in container '')"}}},
		{src: "object.spec.", want: []lang.Diagnostic{{Pos: 12, Msg: "Syntax error: no viable alternative at input '.'"}}},
		{src: "object.a +\n  ) ", want: []lang.Diagnostic{{Pos: 13, Msg: "Syntax error: mismatched input ')' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null'"}}},
		{src: "1 + 'a'", want: []lang.Diagnostic{{Pos: 2, Msg: "found no matching overload for '_+_' applied to '(int, string)'"}}},
		{src: "'é' + 1", want: []lang.Diagnostic{{Pos: 5, Msg: "found no matching overload for '_+_' applied to '(string, int)'"}}},
		{src: "'x'.matches('[')", want: []lang.Diagnostic{{Pos: 12, Msg: "invalid matches argument"}}},
	} {
		p, ds := Language{}.Compile(env(), tc.src)
		if tc.want == nil {
			if ds != nil || p == nil {
				t.Errorf("Compile(%q) = %v, want a program", tc.src, ds)
			}
			continue
		}
		if p != nil {
			t.Errorf("Compile(%q) returned a program with diagnostics", tc.src)
		}
		if diff := cmp.Diff(tc.want, ds, cmpMsgPrefix); diff != "" {
			t.Errorf("Compile(%q) diagnostics (-want +got):\n%s", tc.src, diff)
		}
	}
}

// cmpMsgPrefix compares Diagnostics by position and message prefix (CEL's
// messages may carry a detail after the one the test names).
var cmpMsgPrefix = cmp.Comparer(func(a, b lang.Diagnostic) bool {
	return a.Pos == b.Pos && (strings.HasPrefix(a.Msg, b.Msg) || strings.HasPrefix(b.Msg, a.Msg))
})

func TestCompileEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  *lang.Env
		want string
	}{
		{"not an identifier", &lang.Env{Name: "e", Vars: []lang.Var{{Name: "a-b"}}}, `declares variable "a-b", which is not a CEL identifier`},
		{"negative budget", &lang.Env{Name: "e", Limits: lang.Limits{MaxWork: -1}}, "limit MaxWork -1 is not supported"},
	} {
		_, ds := Language{}.Compile(tc.env, "1")
		if len(ds) != 1 || !strings.Contains(ds[0].Msg, tc.want) || ds[0].Pos != -1 {
			t.Errorf("%s: diagnostics %v, want one at -1 containing %q", tc.name, ds, tc.want)
		}
	}
}

func TestCostEstimate(t *testing.T) {
	small := env()
	small.Limits.MaxWork = 50
	for _, tc := range []struct {
		name string
		env  *lang.Env
		src  string
		ok   bool
	}{
		{"constant", small, "1 + 2 == 3", true},
		{"field under default", env(), "object.spec.replicas <= 10 && object.metadata.name.startsWith('web')", true},
		{"comprehension under default", env(), "object.spec.containers.all(c, c.name != '')", true},
		{"nested comprehensions over variables", env(), "object.a.all(x, object.b.all(y, x == y))", true},
		{"comprehension over a variable, small budget", small, "object.spec.containers.all(c, c.name != '')", true},
		{"literal comprehensions over small", small, "[1, 2, 3, 4, 5].all(x, [1, 2, 3, 4, 5].all(y, [1, 2, 3, 4, 5].all(z, x + y + z > 0)))", false},
		{"literal comprehensions under default", env(), "[1, 2, 3, 4, 5].all(x, [1, 2, 3, 4, 5].all(y, [1, 2, 3, 4, 5].all(z, x + y + z > 0)))", true},
		{"long literal string regex over small", small, "'" + strings.Repeat("a", 1000) + "'.matches('^a+$')", false},
	} {
		p, ds := Language{}.CompileExpr(tc.env, tc.src)
		switch {
		case tc.ok && ds != nil:
			t.Errorf("%s: refused: %v", tc.name, ds)
		case !tc.ok && ds == nil:
			min, max := p.Cost()
			t.Errorf("%s: compiled (cost %d..%d), want refused", tc.name, min, max)
		case !tc.ok && !strings.Contains(ds[0].Msg, "estimated expression cost"):
			t.Errorf("%s: diagnostic %v, want an estimated cost", tc.name, ds)
		}
	}
	// Cost is the worst case over inputs up to the largest request.
	if min, max := compile(t, "object.spec.containers.all(c, c.name != '')").Cost(); min > max || max <= PerCallLimit {
		t.Errorf("Cost() = %d, %d, want a maximum above PerCallLimit", min, max)
	}
}

func TestEval(t *testing.T) {
	obj := decode(t, `{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": {"name": "web-1", "labels": {"app": "web", "gone": null}, "annotations": null},
		"spec": {"replicas": 3, "ratio": 0.5, "big": 1e3, "cpu": "500m", "mem": "2Gi",
			"url": "https://example.com:8443/a?b=c", "ver": "1.2.3", "addr": "10.0.0.1", "cidr": "10.0.0.0/8",
			"containers": [{"name": "a", "image": "nginx:1.25"}, {"name": "b", "image": "busybox"}],
			"ports": [80, 443], "nothing": null}
	}`)
	item := decode(t, `{"name": "a", "image": "nginx:1.25"}`)
	in := &lang.Activation{Object: obj, Item: item, Vars: map[string]any{"params": decode(t, `{"max": 5}`)}}
	for _, tc := range []struct {
		src  string
		in   *lang.Activation
		want any
	}{
		{"object.spec.replicas", in, json.Number("3")},
		{"object.spec.replicas + 1", in, json.Number("4")},
		{"object.spec.ratio * 2.0", in, json.Number("1")},
		{"object.spec.ratio", in, json.Number("0.5")},
		{"type(object.spec.big) == double", in, true},
		{"object.spec.replicas < params.max && object.spec.ratio < 1", in, true},
		{"object.metadata.name", in, "web-1"},
		{"object.spec.containers[1].image", in, "busybox"},
		{"object.spec.containers.map(c, c.name)", in, []any{"a", "b"}},
		{"size(object.spec.containers)", in, json.Number("2")},
		{"size(object.metadata.labels)", in, json.Number("1")},
		{"has(object.metadata.labels.app)", in, true},
		{"has(object.metadata.labels.gone)", in, false},
		{"has(object.metadata.annotations)", in, false},
		{"has(object.spec.nothing)", in, false},
		{"'gone' in object.metadata.labels", in, false},
		{"object.metadata.labels == {'app': 'web'}", in, true},
		{"{'app': 'web'} == object.metadata.labels", in, true},
		{"object.metadata.labels.all(k, k == 'app')", in, true},
		{"object.metadata.labels.all(k, v, k == 'app' && v == 'web')", in, true},
		{"object.metadata.labels", in, map[string]any{"app": "web", "gone": nil}},
		{"object.spec.ports", in, []any{json.Number("80"), json.Number("443")}},
		{"{'a': [dyn(1), dyn(2.5), dyn('x'), dyn(true), dyn(null)]}", in, map[string]any{"a": []any{json.Number("1"), json.Number("2.5"), "x", true, nil}}},
		{"object.metadata.name.startsWith('web') && object.metadata.name.upperAscii() == 'WEB-1'", in, true},
		{"object.metadata.name.split('-')", in, []any{"web", "1"}},
		{"object.metadata.name.matches('^web-[0-9]+$')", in, true},
		{"object.metadata.name.find('[0-9]+')", in, "1"},
		{"quantity(object.spec.mem).isGreaterThan(quantity('1Gi'))", in, true},
		{"quantity(object.spec.cpu).compareTo(quantity('1')) < 0", in, true},
		{"url(object.spec.url).getHost()", in, "example.com:8443"},
		{"url(object.spec.url).getPort()", in, "8443"},
		{"isURL('not a url')", in, false},
		{"isSemver(object.spec.ver) && semver(object.spec.ver).isLessThan(semver('1.10.0'))", in, true},
		{"ip(object.spec.addr).family()", in, json.Number("4")},
		{"cidr(object.spec.cidr).containsIP(ip(object.spec.addr))", in, true},
		{"isIP('::1') && !isCIDR('x')", in, true},
		{"'%s-%d'.format(['a', 1])", in, "a-1"},
		{"[3, 1, 2].sort()", in, []any{json.Number("1"), json.Number("2"), json.Number("3")}},
		{"[1, 2, 3].isSorted() && [1, 2].sum() == 3", in, true},
		{"sets.contains([1, 2, 3], [2])", in, true},
		{"optional.of(object.spec.replicas).orValue(0)", in, json.Number("3")},
		{"object.?spec.?nothing.orValue('absent')", in, "absent"},
		{"jsonpatch.escapeKey('a/b~c')", in, "a~1b~0c"},
		{"self.name == 'a' && self.image.startsWith('nginx')", in, true},
		{"oldObject == null", in, true},
		{"request == null && variables == null", in, true},
		{"oldObject.metadata.name", &lang.Activation{Object: obj, OldObject: decode(t, `{"metadata": {"name": "old"}}`)}, "old"},
		{"object == null", nil, true},
		{"b'ab'", in, "YWI="},
		{"duration('1m')", in, "60s"},
		{"18446744073709551615u", in, json.Number("18446744073709551615")},
	} {
		got, err := compile(t, tc.src).Eval(context.Background(), tc.in)
		if err != nil {
			t.Errorf("Eval(%q): %v", tc.src, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Eval(%q) (-want +got):\n%s", tc.src, diff)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	in := &lang.Activation{Object: decode(t, `{"spec": {"n": null, "s": "x"}, "l": [1]}`)}
	for _, tc := range []struct {
		src, want string
	}{
		{"object.spec.n", "no such key: n"},
		{"object.spec.missing == 1", "no such key: missing"},
		{"object.l[3]", "index out of bounds"},
		{"object.spec.s + 1", "no such overload"},
		{"1.0 / 0.0", "has no JSON form"},
		{"ip('10.0.0.1')", "has no JSON form"},
		{"{1: 2}", "string keys"},
		{"int(object.spec.s)", "type conversion error"},
	} {
		_, err := compile(t, tc.src).Eval(context.Background(), in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Eval(%q) error %v, want one containing %q", tc.src, err, tc.want)
		}
		if errors.Is(err, lang.ErrLimit) {
			t.Errorf("Eval(%q) error %v is a limit", tc.src, err)
		}
	}
}

func TestEvalBool(t *testing.T) {
	in := &lang.Activation{Object: decode(t, `{"a": 1}`)}
	for _, tc := range []struct {
		src  string
		want bool
		err  string
	}{
		{src: "object.a == 1", want: true},
		{src: "object.a > 1", want: false},
		{src: "object.a", err: "evaluated to int, want bool"},
		{src: "object.b", err: "no such key"},
	} {
		got, err := compile(t, tc.src).EvalBool(context.Background(), in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("EvalBool(%q) error %v, want %q", tc.src, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("EvalBool(%q) = %v, %v, want %v", tc.src, got, err, tc.want)
		}
	}
}

func bigList(n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = json.Number("1")
	}
	return l
}

func TestCostLimit(t *testing.T) {
	small := env()
	small.Limits.MaxWork = 1000
	mid := env()
	mid.Limits.MaxWork = 20000
	// Not PerCallLimit: cel-go's cost tracker takes time quadratic in a
	// comprehension's iterations (refValStack.drop), ~90 s to reach 1e6.
	for _, tc := range []struct {
		env   *lang.Env
		n     int
		limit bool
	}{
		{small, 100, false},
		{small, 1000, true},
		{mid, 2000, false},
		{mid, 20000, true},
	} {
		p, ds := Language{}.CompileExpr(tc.env, "object.l.all(x, x == 1)")
		if ds != nil {
			t.Fatal(ds)
		}
		ok, err := p.EvalBool(context.Background(), &lang.Activation{Object: map[string]any{"l": bigList(tc.n)}})
		if !tc.limit {
			if err != nil || !ok {
				t.Errorf("MaxWork %d, %d elements: %v, %v", tc.env.Limits.MaxWork, tc.n, ok, err)
			}
			continue
		}
		if !errors.Is(err, lang.ErrLimit) || !strings.Contains(err.Error(), "cost limit exceeded") {
			t.Errorf("MaxWork %d, %d elements: error %v, want a cost limit", tc.env.Limits.MaxWork, tc.n, err)
		}
	}
}

func TestContext(t *testing.T) {
	p := compile(t, "object.l.all(x, x == 1)")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Eval(ctx, &lang.Activation{Object: map[string]any{"l": bigList(10000)}})
	if !errors.Is(err, context.Canceled) || errors.Is(err, lang.ErrLimit) {
		t.Fatalf("Eval with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestConcurrent(t *testing.T) {
	p := compile(t, "object.spec.replicas <= 10 && object.metadata.name.startsWith('web') && object.spec.l.exists(x, x == 3)")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				obj := map[string]any{
					"metadata": map[string]any{"name": "web"},
					"spec":     map[string]any{"replicas": json.Number("3"), "l": []any{json.Number("1"), json.Number("3")}},
				}
				if (g+i)%2 == 0 {
					obj["metadata"] = map[string]any{"name": "db"}
				}
				ok, err := p.EvalBool(context.Background(), &lang.Activation{Object: obj})
				if err != nil || ok != ((g+i)%2 != 0) {
					t.Errorf("goroutine %d, %d: %v, %v", g, i, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestOffset(t *testing.T) {
	for _, tc := range []struct {
		src            string
		line, col, pos int
	}{
		{"abc", 1, 2, 2},
		{"a\nbc", 2, 1, 3},
		{"é\nxé!", 2, 2, 6},
		{"a", 3, 0, -1},
		{"a", 0, 0, -1},
	} {
		if got := offsetAt(tc.src, tc.line, tc.col); got != tc.pos {
			t.Errorf("offsetAt(%q, %d, %d) = %d, want %d", tc.src, tc.line, tc.col, got, tc.pos)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"object.spec.replicas <= 10", "has(object.a) ? object.a : 'x'", "object.l.all(x, x > 0)",
		"quantity('1Gi').isGreaterThan(quantity(object.m))", "url('https://a/b').getHost()", "'[' .matches('(')",
		"object.m.map(k, v, v)", "1 / 0", "9223372036854775807 + 1", "object.x.y.z[0]['a']", "{1: 2}",
		"[JSONPatch{op: 'add', path: '/a', value: 1}]", "[JSONPatch{op: 'remove', path: '/x/y'}]",
		"Object{metadata: Object.metadata{labels: {'a': 'b'}}}", "Object{x: Object.y{}}",
	} {
		f.Add(s)
	}
	obj, err := value.Decode([]byte(`{"a": "x", "m": "2Gi", "l": [1, 2.5, "s", null, {"k": null}], "x": {"y": {"z": [{"a": 1}]}}, "n": null}`))
	if err != nil {
		f.Fatal(err)
	}
	e := env()
	e.Limits.MaxWork = 10000
	f.Fuzz(func(t *testing.T, src string) {
		checkPos := func(what string, ds []lang.Diagnostic) {
			for _, d := range ds {
				if d.Pos < -1 || d.Pos > len(src) {
					t.Fatalf("%s(%q): diagnostic at %d, outside the source", what, src, d.Pos)
				}
			}
		}
		if p, ds := (Language{}).CompileExpr(e, src); ds != nil {
			checkPos("Compile", ds)
		} else {
			_, _ = p.Eval(context.Background(), &lang.Activation{Object: obj, Item: obj})
		}
		for _, kind := range []MutationKind{JSONPatch, ApplyConfiguration} {
			m, ds := Language{}.CompileMutation(e, kind, src)
			if ds != nil {
				checkPos("CompileMutation", ds)
				continue
			}
			got, _, err := m.Apply(context.Background(), &lang.Activation{Object: obj}, obj.(map[string]any))
			if err == nil && got == nil {
				t.Fatalf("Apply(%q) returned no object and no error", src)
			}
		}
	})
}

func BenchmarkEval(b *testing.B) {
	obj := loadDeployment(b)
	p := compile(b, "object.spec.replicas <= 10 && object.metadata.name.startsWith('web')")
	in := &lang.Activation{Object: obj}
	ctx := context.Background()
	if _, err := p.Eval(ctx, in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Eval(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ds := (Language{}).CompileExpr(env(), "object.spec.replicas <= 10 && object.metadata.name.startsWith('web')"); ds != nil {
			b.Fatal(ds)
		}
	}
}

// TestMembers: the members an expression selects on a variable, and
// whether it reads the variable otherwise too (then any member may be
// read).
func TestMembers(t *testing.T) {
	env := &lang.Env{Name: "m", Vars: []lang.Var{{Name: "variables"}, {Name: "object"}}}
	for _, tc := range []struct {
		src     string
		members []string
		whole   bool
	}{
		{"variables.params.x + variables.y", []string{"params", "y"}, false},
		{"has(variables.params.a) && object.b == 1", []string{"params"}, false},
		{"variables.params.exists(p, p == variables.z)", []string{"params", "z"}, false},
		{`variables["a"] == 1`, nil, true},
		{"size(variables) > 0 && variables.a == 1", []string{"a"}, true},
		{"object.variables == 1", nil, false},
		{"[1, 2].exists(variables, variables == 1)", nil, true}, // a shadowing iteration variable: taken as a read, conservatively
	} {
		p, ds := Language{}.CompileExpr(env, tc.src)
		if len(ds) > 0 {
			t.Fatalf("%s: %v", tc.src, ds)
		}
		members, whole := p.Members("variables")
		if !cmp.Equal(tc.members, members, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()) || whole != tc.whole {
			t.Errorf("%s: members %v, whole %v; want %v, %v", tc.src, members, whole, tc.members, tc.whole)
		}
	}
}

// TestQuick: an expression whose worst case is small is evaluated without
// a context (quick), with the same value and cost as with one; one that
// iterates over the input is not, and a cancelled context stops it.
func TestQuick(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "nginx"}}, "spec": map[string]any{"replicas": json.Number("2"), "l": bigList(10000)}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		src   string
		quick bool
	}{
		{"object.metadata.?labels.?app.orValue('') == 'nginx'", true},
		{"object.spec.replicas in [1, 2, 3]", true},
		{"has(object.spec.x) || object.spec.replicas > 1", true},
		{"object.metadata.name + '-1' == 'web-1'", false}, // a string of the request's size
		{"object.spec.l.all(x, x == 1)", false},
	} {
		p := compile(t, tc.src)
		if p.quick != tc.quick {
			t.Errorf("%s: quick %v, want %v (cost %d)", tc.src, p.quick, tc.quick, p.max)
		}
		v, cost, err := p.EvalBoolCost(context.Background(), &lang.Activation{Object: obj})
		if !tc.quick {
			if _, _, err := p.EvalBoolCost(ctx, &lang.Activation{Object: obj}); tc.src == "object.spec.l.all(x, x == 1)" && !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled context: %v, want context.Canceled", tc.src, err)
			}
			continue
		}
		p.quick = false // the same program through ContextEval
		w, wcost, werr := p.EvalBoolCost(context.Background(), &lang.Activation{Object: obj})
		if v != w || cost != wcost || (err == nil) != (werr == nil) {
			t.Errorf("%s: quick %v %d %v, with a context %v %d %v", tc.src, v, cost, err, w, wcost, werr)
		}
	}
}

// BenchmarkQuick measures one quick condition under a request's context
// (a deadline, as the webhook gives), without a context of its own (quick)
// and with one (ContextEval).
func BenchmarkQuick(b *testing.B) {
	obj := map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "nginx"}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, quick := range []bool{true, false} {
		b.Run(fmt.Sprintf("quick=%v", quick), func(b *testing.B) {
			p := compile(b, "object.metadata.?labels.?app.orValue('') == 'nginx'")
			p.quick = quick
			act := &lang.Activation{Object: obj}
			b.ReportAllocs()
			for b.Loop() {
				if ok, _, err := p.EvalBoolCost(ctx, act); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
