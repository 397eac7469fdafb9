package cel

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/modwright/modwright/internal/lang"
)

// TestEnvCache: expressions that declare the same variables share one
// environment, others get their own, concurrent compiles of one key build
// it once, and every program still evaluates against its own activation.
func TestEnvCache(t *testing.T) {
	c := NewEnvCache()
	l := Language{Envs: c}
	objEnv := &lang.Env{Name: "a", Vars: []lang.Var{{Name: VarObject}}}
	var wg sync.WaitGroup
	progs := make([]*Program, 8)
	for i := range progs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, ds := l.CompileExpr(objEnv, "object.n > 1")
			if ds != nil {
				t.Errorf("compile: %v", ds)
			}
			progs[i] = p
		}()
	}
	wg.Wait()
	if c.Len() != 1 {
		t.Fatalf("%d environments for one set of variables, want 1", c.Len())
	}
	for i, p := range progs {
		got, err := p.EvalBool(context.Background(), &lang.Activation{Object: map[string]any{"n": int64(i)}})
		if err != nil || got != (i > 1) {
			t.Errorf("program %d: %v, %v", i, got, err)
		}
	}
	// An environment lives as long as a program compiled against it:
	// these are kept to the end.
	var keep []any
	p, ds := l.CompileExpr(&lang.Env{Name: "b", Vars: []lang.Var{{Name: VarObject}, {Name: VarOldObject}}}, "object == oldObject")
	if ds != nil {
		t.Fatal(ds)
	}
	m, ds := l.CompileMutation(objEnv, JSONPatch, "[JSONPatch{op: 'remove', path: '/a'}]")
	if ds != nil {
		t.Fatal(ds)
	}
	keep = append(keep, p, m)
	if c.Len() != 3 {
		t.Errorf("%d environments, want 3 (object; object and oldObject; object for mutations)", c.Len())
	}
	// A typed variable: the same type is one environment, another type
	// another, and the type is checked.
	typed := func(field string) *apiservercel.DeclType {
		return apiservercel.NewObjectType("t", map[string]*apiservercel.DeclField{field: apiservercel.NewDeclField(field, apiservercel.IntType, true, nil, nil)})
	}
	tEnv := &lang.Env{Name: "t", Vars: []lang.Var{{Name: "v"}}}
	x := typed("x")
	for _, src := range []string{"v.x > 1", "v.x < 1"} {
		p, ds := l.CompileTyped(tEnv, src, map[string]*apiservercel.DeclType{"v": x})
		if ds != nil {
			t.Fatal(ds)
		}
		keep = append(keep, p)
	}
	if c.Len() != 4 {
		t.Errorf("%d environments after two expressions of one typed variable, want 4", c.Len())
	}
	if _, ds := l.CompileTyped(tEnv, "v.x > 1", map[string]*apiservercel.DeclType{"v": typed("y")}); ds == nil {
		t.Error("v.x compiled against a type without x")
	}
	// Types named by a key: equal types declared by two rules (two
	// DeclTypes) are one environment, and their programs are shared.
	p1, ds := l.CompileTypedAs(tEnv, "v.x > 1", map[string]*apiservercel.DeclType{"v": typed("x")}, "t{x:int}")
	if ds != nil {
		t.Fatal(ds)
	}
	p2, ds := l.CompileTypedAs(tEnv, "v.x > 1", map[string]*apiservercel.DeclType{"v": typed("x")}, "t{x:int}")
	if ds != nil {
		t.Fatal(ds)
	}
	p3, ds := l.CompileTypedAs(tEnv, "v.x < 1", map[string]*apiservercel.DeclType{"v": typed("x")}, "t{x:int}")
	if ds != nil {
		t.Fatal(ds)
	}
	if p1 != p2 || p3.env != p1.env || p1.env == keep[2].(*Program).env {
		t.Errorf("equal named types: programs shared %v, environment shared %v, the one of the unnamed type's taken %v, want true, true, false",
			p1 == p2, p3.env == p1.env, p1.env == keep[2].(*Program).env)
	}
	runtime.KeepAlive(keep)
	runtime.KeepAlive(progs)
	runtime.KeepAlive([]*Program{p1, p2, p3})
	// No program left: every environment is forgotten.
	keep, progs, p1, p2, p3 = nil, nil, nil, nil, nil
	for i := 0; i < 300 && c.Len() > 0; i++ { // cleanups run after a GC, in their own goroutine
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.Len(); n != 0 {
		t.Errorf("%d environments still held after no program uses them", n)
	}
}

// TestEnvCachePrograms: an expression compiled again with the same text,
// environment and budget is the same (immutable) program; another budget
// or environment is another; a program no rule holds any more is
// forgotten.
func TestEnvCachePrograms(t *testing.T) {
	c := NewEnvCache()
	l := Language{Envs: c}
	env := &lang.Env{Name: "a", Vars: []lang.Var{{Name: VarObject}}}
	p1, ds := l.CompileExpr(env, "object.n > 1")
	if ds != nil {
		t.Fatal(ds)
	}
	p2, _ := l.CompileExpr(&lang.Env{Name: "b", Vars: []lang.Var{{Name: VarObject}}}, "object.n > 1")
	if p1 != p2 {
		t.Error("the same expression in the same environment compiled twice")
	}
	p3, _ := l.CompileExpr(&lang.Env{Name: "a", Vars: []lang.Var{{Name: VarObject}}, Limits: lang.Limits{MaxWork: 10}}, "object.n > 1")
	p4, _ := l.CompileExpr(&lang.Env{Name: "a", Vars: []lang.Var{{Name: VarObject}, {Name: VarOldObject}}}, "object.n > 1")
	if p3 == p1 || p4 == p1 || p3 == p4 {
		t.Error("a program shared across budgets or environments")
	}
	if got, err := p2.EvalBool(context.Background(), &lang.Activation{Object: map[string]any{"n": int64(2)}}); err != nil || !got {
		t.Errorf("shared program: %v, %v", got, err)
	}
	if c.Programs() != 3 {
		t.Errorf("%d programs held, want 3", c.Programs())
	}
	runtime.KeepAlive([]*Program{p1, p2, p3, p4})
	for i := 0; i < 300 && c.Programs() > 0; i++ { // cleanups run after a GC, in their own goroutine
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.Programs(); n != 0 {
		t.Errorf("%d programs still held after no rule uses them", n)
	}
}
