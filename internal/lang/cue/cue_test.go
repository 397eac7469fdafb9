package cue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cue"
)

var env = &lang.Env{Name: "test"}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		src  string
		pos  int
		want string
	}{
		{src: "a: {", pos: 4, want: "expected '}'"},
		{src: "a: 1\na: 2", pos: -2, want: "conflicting values"},
		{src: "a: b", pos: -2, want: "reference \"b\" not found"},
	} {
		_, ds := cue.Language{}.CompileExpr(env, c.src)
		if len(ds) == 0 {
			t.Errorf("%q compiles", c.src)
			continue
		}
		if !strings.Contains(ds[0].Msg, c.want) {
			t.Errorf("%q: %v, want %q", c.src, ds, c.want)
		}
		if c.pos >= -1 && ds[0].Pos != c.pos {
			t.Errorf("%q: position %d, want %d", c.src, ds[0].Pos, c.pos)
		}
		if c.pos == -2 && ds[0].Pos < 0 {
			t.Errorf("%q: no position: %v", c.src, ds)
		}
	}
}

func TestRun(t *testing.T) {
	src := `
object: _ @tag(object)
oldObject: _ @tag(oldObject)
patches: [{op: "add", path: "/metadata/labels/name", value: object.metadata.name}]
validate: {
	if oldObject.metadata.name != _|_ && oldObject.metadata.name != object.metadata.name {
		valid:  false
		reason: "renamed from \(oldObject.metadata.name)"
	}
}
`
	p, ds := cue.Language{}.CompileExpr(env, src)
	if ds != nil {
		t.Fatal(ds)
	}
	obj := map[string]any{"metadata": map[string]any{"name": "web"}}
	ctx := context.Background()
	got, err := p.Run(ctx, map[string]any{"object": obj, "oldObject": map[string]any{}}, cue.OutputPatches)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{map[string]any{"op": "add", "path": "/metadata/labels/name", "value": "web"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("patches (-want +got):\n%s", d)
	}
	v, err := p.Run(ctx, map[string]any{"object": obj, "oldObject": map[string]any{"metadata": map[string]any{"name": "old"}}}, cue.OutputValidate)
	if err != nil {
		t.Fatal(err)
	}
	if valid, reason, err := cue.ValidateResult(v); valid || reason != "renamed from old" || err != nil {
		t.Errorf("validate = %v %q %v", valid, reason, err)
	}
	if _, err := p.Run(ctx, map[string]any{"object": obj}, "nope"); !errors.Is(err, cue.ErrNoOutput) {
		t.Errorf("a missing output: %v", err)
	}
	// An incomplete output (object not given) is an error naming the field.
	if _, err := p.Run(ctx, nil, cue.OutputPatches); err == nil || !strings.Contains(err.Error(), "patches") {
		t.Errorf("an incomplete output: %v", err)
	}
	// Concurrent evaluations of one program.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := strings.Repeat("x", i+1)
			for range 20 {
				v, err := p.Run(ctx, map[string]any{"object": map[string]any{"metadata": map[string]any{"name": name}}}, cue.OutputPatches)
				if err != nil {
					t.Error(err)
					return
				}
				if got := v.([]any)[0].(map[string]any)["value"]; got != name {
					t.Errorf("value %v, want %s", got, name)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// squares is a program whose evaluation takes n*n steps (n a parameter).
const squares = `
import "list"
n: int @tag(n)
out: [for x in list.Range(0, n, 1) for y in list.Range(0, n, 1) {x * y}]
`

func TestDeadline(t *testing.T) {
	// A program whose evaluation explodes: the request's deadline ends it.
	p, ds := cue.Language{}.CompileExpr(env, squares)
	if ds != nil {
		t.Fatal(ds)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Run(ctx, map[string]any{"n": 100000}, "out")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Run returned after %v", took)
	}
}

func TestValidateResult(t *testing.T) {
	for _, c := range []struct {
		in     any
		valid  bool
		reason string
		err    bool
	}{
		{map[string]any{}, true, "", false},
		{map[string]any{"valid": false, "reason": "r"}, false, "r", false},
		{map[string]any{"valid": "no"}, false, "", true},
		{"x", false, "", true},
	} {
		valid, reason, err := cue.ValidateResult(c.in)
		if valid != c.valid || reason != c.reason || (err != nil) != c.err {
			t.Errorf("ValidateResult(%v) = %v %q %v", c.in, valid, reason, err)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{"a: 1", "object: _ @tag(object)\npatches: [{op: \"add\", path: \"/a\", value: object.x}]", "a: {", "import \"strings\"\nb: strings.ToUpper(\"x\")"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, ds := cue.Language{}.CompileExpr(env, src)
		if ds == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, _ = p.Run(ctx, map[string]any{"object": map[string]any{"x": "y"}}, "")
		}
	})
}

func TestCheckTimeout(t *testing.T) {
	// A program that computes a large constant without its parameters:
	// its check at load is bounded.
	start := time.Now()
	_, ds := cue.Language{CheckTimeout: 10 * time.Millisecond}.CompileExpr(env, `
import "list"
out: [for x in list.Range(0, 100, 1) for y in list.Range(0, 100, 1) {x * y}]
`)
	if len(ds) != 1 || !strings.Contains(ds[0].Msg, "checking the program took over 10ms") {
		t.Errorf("diagnostics %v", ds)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Compile returned after %v", took)
	}
}
