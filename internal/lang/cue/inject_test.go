package cue

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/value"
)

func TestUsages(t *testing.T) {
	for _, c := range []struct {
		src  string
		want map[string]string // name -> "all" or the paths joined
	}{
		{"object: _ @tag(object)\nx: [object.spec.replicas]", map[string]string{"object": "spec.replicas"}},
		{"object: _ @tag(object)\nx: [object.metadata.annotations[\"a/b\"]]\ny: [object.spec.list[0].name]", map[string]string{"object": "metadata.annotations.a/b spec.list.0.name"}},
		{"object: _ @tag(object)\nx: [object]", map[string]string{"object": "all"}},
		{"object: _ @tag(object)\nk: \"spec\"\nx: [object[k]]", map[string]string{"object": "all"}},
		{"object: {spec: replicas: <10}", map[string]string{"object": "all"}},
		{"object: _ @tag(object)\nx: [for k, v in object.metadata.labels {k}]", map[string]string{"object": "metadata.labels"}},
		{"object: _ @tag(object)\nx: \"\\(object.metadata.name)\"", map[string]string{"object": "metadata.name"}},
		{"data: _ @tag(data)\nx: [data.object.spec]\ny: [data.request.operation]", map[string]string{"data": "object.spec request.operation"}},
		{"patches: [{op: \"add\", path: \"/a\", value: 1}]", map[string]string{}},
		{"data: _ @tag(data)\nobject: data.object\nkind: object.kind\nx: [object.spec.containers[0].resources]\ny: [kind]", map[string]string{"data": "object.spec.containers.0.resources object.kind"}},
		{"data: _ @tag(data)\nkind: object.kind\nobject: data.object\ny: [kind]", map[string]string{"data": "object.kind"}},
		{"data: _ @tag(data)\nobject: data.object\nx: [object]", map[string]string{"data": "object"}},
		{"data: _ @tag(data)\nobject: data.object\nother: data.extraParams.\"http\"\nx: [other.body.name]", map[string]string{"data": "extraParams.http.body.name"}},
		{"let o = object\nobject: _ @tag(object)\nx: [o.spec]", map[string]string{"object": "all"}},
	} {
		f, ds := Language{}.CompileExpr(&lang.Env{Name: "t"}, c.src)
		if ds != nil {
			t.Fatalf("%q: %v", c.src, ds)
		}
		got := map[string]string{}
		for n, u := range f.reads {
			if u.all {
				got[n] = "all"
				continue
			}
			var ps []string
			for _, p := range u.paths {
				ps = append(ps, strings.Join(p, "."))
			}
			slices.Sort(ps)
			got[n] = joinSpace(ps)
		}
		want := map[string]string{}
		for k, v := range c.want {
			ps := splitSpace(v)
			slices.Sort(ps)
			want[k] = joinSpace(ps)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", c.src, d)
		}
	}
}

func joinSpace(ps []string) string { return strings.Join(ps, " ") }

func splitSpace(s string) []string { return strings.Split(s, " ") }

// TestInjectSameResult runs programs with the parameters pruned to what
// they read and whole: the outputs (or errors) must agree.
func TestInjectSameResult(t *testing.T) {
	obj, err := value.Decode([]byte(`{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a/b": "c"}},
		"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"object: _ @tag(object)\nvalidate: valid: object.spec.replicas < 5",
		"object: _ @tag(object)\nvalidate: {if object.metadata.annotations == _|_ {valid: false}}",
		"object: _ @tag(object)\nvalidate: {if object.metadata.nope == _|_ {valid: false, reason: \"no nope\"}}",
		"object: _ @tag(object)\nout: [for c in object.spec.template.spec.containers {c.image}]",
		"object: _ @tag(object)\nout: object.metadata.annotations[\"a/b\"]",
		"object: _ @tag(object)\nout: object.spec.template.spec.containers[0].name",
		"object: _ @tag(object)\nout: len(object.metadata.labels)",
		"object: _ @tag(object)\nout: object.spec.nope.deeper",
		"data: _ @tag(data)\nout: data.object.metadata.name + data.request.operation",
		"object: _ @tag(object)\nout: object",
	} {
		p, ds := Language{}.CompileExpr(&lang.Env{Name: "t"}, src)
		if ds != nil {
			t.Fatalf("%q: %v", src, ds)
		}
		params := map[string]any{"object": obj, "data": map[string]any{"object": obj, "request": map[string]any{"operation": "CREATE"}}}
		output := "out"
		if strings.Contains(src, "validate") {
			output = "validate"
		}
		pruned, perr := p.Run(context.Background(), params, output)
		whole := &Program{src: p.src, file: p.file, reads: map[string]*usage{"object": {all: true}, "oldObject": {all: true}, "data": {all: true}}}
		full, ferr := whole.Run(context.Background(), params, output)
		if (perr != nil) != (ferr != nil) {
			t.Errorf("%q: pruned error %v, whole error %v", src, perr, ferr)
			continue
		}
		if !value.Equal(pruned, full) {
			t.Errorf("%q: pruned %v, whole %v", src, pruned, full)
		}
	}
}

// TestParametersInComprehensions: a parameter read inside a top-level
// comprehension, through a list index, once filled in. (CUE's
// Context.Encode made lists that stayed unindexed there, and a program
// evaluated before its parameters kept its comprehensions unapplied.)
func TestParametersInComprehensions(t *testing.T) {
	src := `data: _ @tag(data)
object: data.object
kind: object.kind
_res: {}
if kind == "Pod" {_res: object.spec.containers[0].resources}
if kind != "Pod" {_res: object.spec.template.spec.containers[0].resources}
_limits: {}
if _res.limits != _|_ {_limits: _res.limits}
_cpu: *0 | number
if _limits.cpu != _|_ {_cpu: _limits.cpu * 2}
out: {cpu: _cpu, n: len(object.spec.containers)}`
	p, ds := Language{}.CompileExpr(&lang.Env{Name: "t"}, src)
	if ds != nil {
		t.Fatal(ds)
	}
	for _, c := range []struct{ obj, want string }{
		{`{"kind": "Pod", "spec": {"containers": [{"resources": {"limits": {"cpu": 3}}}]}}`, `{"cpu":6,"n":1}`},
		{`{"kind": "Pod", "spec": {"containers": [{"name": "c"}, {"name": "d"}]}}`, `{"cpu":0,"n":2}`},
		{`{"kind": "Deployment", "spec": {"containers": [], "template": {"spec": {"containers": [{"resources": {"limits": {"cpu": 1.5}}}]}}}}`, `{"cpu":3.0,"n":0}`},
	} {
		for range 2 { // a fresh instance, then a pooled one
			obj, err := value.Decode([]byte(c.obj))
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Run(context.Background(), map[string]any{"data": map[string]any{"object": obj}}, "out")
			if err != nil {
				t.Fatalf("%s: %v", c.obj, err)
			}
			b, _ := value.Encode(out)
			if string(b) != c.want {
				t.Errorf("%s: got %s, want %s", c.obj, b, c.want)
			}
		}
	}
}
