package cel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
)

type sink struct {
	got []string
	err error
}

func (s *sink) Generate(ns string, objs []map[string]any) error {
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		s.got = append(s.got, ns+"/"+md["name"].(string))
	}
	return s.err
}

// TestGenerator: generator.Apply and generator.apply hand their objects to
// the Generator bound to the variable and give true; a Generator's error,
// an element that is not an object and no Generator bound are errors.
func TestGenerator(t *testing.T) {
	env := &lang.Env{Name: "gen", Vars: []lang.Var{{Name: cel.VarObject}, {Name: cel.VarGenerator}}}
	compile := func(src string) *cel.Program {
		t.Helper()
		p, ds := cel.Language{Generator: true}.CompileExpr(env, src)
		if ds != nil {
			t.Fatalf("%s: %v", src, ds)
		}
		return p
	}
	obj := map[string]any{"metadata": map[string]any{"name": "web"}}
	for _, tc := range []struct {
		src  string
		want []string
		err  string
		fail error
	}{
		{src: `generator.Apply("team", [{"metadata": {"name": object.metadata.name + "-a"}}, {"metadata": {"name": "b"}}])`, want: []string{"team/web-a", "team/b"}},
		{src: `generator.apply("", [{"metadata": {"name": "c"}}])`, want: []string{"/c"}},
		{src: `generator.Apply("team", [{"metadata": {"name": "d"}}])`, fail: errors.New("quota"), want: []string{"team/d"}, err: "failed to generate resources: quota"},
		{src: `generator.Apply("team", [dyn(1)])`, err: "no such overload"},
	} {
		s := &sink{err: tc.fail}
		out, err := compile(tc.src).Eval(context.Background(), &lang.Activation{Object: obj, Vars: map[string]any{cel.VarGenerator: cel.GeneratorValue(s)}})
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error saying %q", tc.src, err, tc.err)
			}
		case err != nil || out != true:
			t.Errorf("%s: %v, %v; want true", tc.src, out, err)
		}
		if diff := cmp.Diff(tc.want, s.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.src, diff)
		}
	}
	if _, err := compile(`generator.Apply("x", [])`).Eval(context.Background(), &lang.Activation{Object: obj}); err == nil {
		t.Error("no generator bound: no error")
	}
	if _, ds := (cel.Language{}).CompileExpr(env, `generator.Apply("x", [])`); ds == nil {
		t.Error("without Language.Generator, generator.Apply compiles")
	}
}
