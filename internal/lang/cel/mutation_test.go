package cel

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/value"
)

const deployment = `{
	"apiVersion": "apps/v1", "kind": "Deployment",
	"metadata": {"name": "web", "namespace": "team-a", "labels": {"app": "web"}},
	"spec": {"replicas": 3,
		"selector": {"matchLabels": {"app": "web"}},
		"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
			{"name": "app", "image": "nginx:1.25", "ports": [{"containerPort": 80}]},
			{"name": "side", "image": "envoy:1", "resources": {"requests": {"cpu": "0.5"}}}
		]}}}
}`

const widget = `{
	"apiVersion": "example.com/v1", "kind": "Widget",
	"metadata": {"name": "w", "labels": {"app": "w"}},
	"spec": {"big": 12345678901234567890, "ratio": 1e3, "f": 0.5, "containers": [{"name": "app", "image": "a:1"}, {"name": "side", "image": "s:1"}]}
}`

func mutate(t *testing.T, kind MutationKind, src, obj string) (map[string]any, map[string]any, error) {
	t.Helper()
	m, ds := Language{}.CompileMutation(env(), kind, src)
	if ds != nil {
		t.Fatalf("CompileMutation(%q): %v", src, ds)
	}
	o := decode(t, obj).(map[string]any)
	before, err := value.AppendJSON(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := m.Apply(context.Background(), &lang.Activation{Object: o}, o)
	after, _ := value.AppendJSON(nil, o)
	if string(before) != string(after) {
		t.Errorf("Apply(%q) modified its input", src)
	}
	return o, got, err
}

// edit returns a copy of the decoded obj changed by fn.
func edit(t *testing.T, obj string, fn func(o map[string]any)) map[string]any {
	o := decode(t, obj).(map[string]any)
	fn(o)
	return o
}

func at(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	return v
}

// mutationCase is a mutation of obj: the result is obj changed by want
// (unchanged when nil), or an error containing err.
type mutationCase struct {
	name, src string
	obj       string
	want      func(o map[string]any)
	err       string
}

func (tc mutationCase) run(t *testing.T, kind MutationKind) {
	orig, got, err := mutate(t, kind, tc.src, tc.obj)
	if tc.err != "" {
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("error %v, want %q", err, tc.err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	want := orig
	if tc.want != nil {
		want = edit(t, tc.obj, tc.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestJSONPatch(t *testing.T) {
	for _, tc := range []mutationCase{
		{name: "add label", src: "[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]", obj: deployment,
			want: func(o map[string]any) { at(o, "metadata", "labels").(map[string]any)["x"] = "y" }},
		{name: "escapeKey", src: "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('k8s.io/a~b'), value: 'y'}]", obj: deployment,
			want: func(o map[string]any) { at(o, "metadata", "labels").(map[string]any)["k8s.io/a~b"] = "y" }},
		{name: "replace int", src: "[JSONPatch{op: 'replace', path: '/spec/replicas', value: object.spec.replicas + 2}]", obj: deployment,
			want: func(o map[string]any) { at(o, "spec").(map[string]any)["replicas"] = json.Number("5") }},
		{name: "remove", src: "[JSONPatch{op: 'remove', path: '/metadata/labels/app'}]", obj: deployment,
			want: func(o map[string]any) { delete(at(o, "metadata", "labels").(map[string]any), "app") }},
		{name: "append to a list", src: "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/-', value: {'name': 'c', 'image': 'busybox'}}]", obj: deployment,
			want: func(o map[string]any) {
				s := at(o, "spec", "template", "spec").(map[string]any)
				s["containers"] = append(s["containers"].([]any), map[string]any{"name": "c", "image": "busybox"})
			}},
		{name: "insert into a list", src: "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/ports/0', value: {'containerPort': 8080}}]", obj: deployment,
			want: func(o map[string]any) {
				c := at(o, "spec", "template", "spec", "containers", 0).(map[string]any)
				c["ports"] = append([]any{map[string]any{"containerPort": json.Number("8080")}}, c["ports"].([]any)...)
			}},
		{name: "Object value", src: "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/securityContext', value: Object.spec.template.spec.containers.securityContext{runAsNonRoot: true}}]", obj: deployment,
			want: func(o map[string]any) {
				at(o, "spec", "template", "spec", "containers", 0).(map[string]any)["securityContext"] = map[string]any{"runAsNonRoot": true}
			}},
		{name: "test passes", src: "[JSONPatch{op: 'test', path: '/spec/replicas', value: 3}, JSONPatch{op: 'replace', path: '/spec/replicas', value: 1}]", obj: deployment,
			want: func(o map[string]any) { at(o, "spec").(map[string]any)["replicas"] = json.Number("1") }},
		{name: "test fails: not applied, no error", src: "[JSONPatch{op: 'test', path: '/spec/replicas', value: 4}, JSONPatch{op: 'replace', path: '/spec/replicas', value: 1}]", obj: deployment},
		{name: "copy and move", src: "[JSONPatch{op: 'copy', from: '/metadata/name', path: '/metadata/labels/name'}, JSONPatch{op: 'move', from: '/metadata/labels/app', path: '/metadata/labels/was'}]", obj: deployment,
			want: func(o map[string]any) {
				l := at(o, "metadata", "labels").(map[string]any)
				l["name"], l["was"] = "web", "web"
				delete(l, "app")
			}},
		{name: "big int kept", src: "[JSONPatch{op: 'add', path: '/spec/n', value: 9223372036854775807}]", obj: widget,
			want: func(o map[string]any) { at(o, "spec").(map[string]any)["n"] = json.Number("9223372036854775807") }},
		{name: "into the Go form of a built-in kind, the rest kept", src: "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/resources/limits', value: {'cpu': '1'}}]", obj: deployment,
			want: func(o map[string]any) {
				at(o, "spec", "template", "spec", "containers", 0).(map[string]any)["resources"] = map[string]any{"limits": map[string]any{"cpu": "1"}}
			}},
		{name: "test against the Go form", src: "[JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/resources', value: {}}, JSONPatch{op: 'replace', path: '/spec/replicas', value: 1}]", obj: deployment,
			want: func(o map[string]any) { at(o, "spec").(map[string]any)["replicas"] = json.Number("1") }},
		{name: "insert before an element with a quantity", src: "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0', value: {'name': 'first', 'image': 'x'}}]", obj: deployment,
			want: func(o map[string]any) {
				s := at(o, "spec", "template", "spec").(map[string]any)
				s["containers"] = append([]any{map[string]any{"name": "first", "image": "x"}}, s["containers"].([]any)...)
			}},
		{name: "empty patch", src: "object.spec.replicas > 10 ? [JSONPatch{op: 'remove', path: '/spec'}] : []", obj: deployment},
		{name: "remove missing", src: "[JSONPatch{op: 'remove', path: '/metadata/annotations/x'}]", obj: deployment, err: "JSON Patch:"},
		{name: "bad index", src: "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/9', value: {}}]", obj: deployment, err: "JSON Patch:"},
		{name: "unknown op", src: "[JSONPatch{op: 'frob', path: '/a'}]", obj: deployment, err: "JSON Patch:"},
		{name: "unknown field of a built-in kind", src: "[JSONPatch{op: 'add', path: '/spec/frob', value: 1}]", obj: deployment, err: `unknown field "spec.frob"`},
		{name: "wrong type for a built-in kind", src: "[JSONPatch{op: 'replace', path: '/spec/replicas', value: 'x'}]", obj: deployment, err: "the patched Deployment is invalid"},
		{name: "any field of an unknown kind", src: "[JSONPatch{op: 'add', path: '/spec/frob', value: 1}]", obj: widget,
			want: func(o map[string]any) { at(o, "spec").(map[string]any)["frob"] = json.Number("1") }},
		{name: "mismatched Object type", src: "[JSONPatch{op: 'add', path: '/spec', value: Object{spec: Object.spek{}}}]", obj: deployment, err: "type mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, JSONPatch) })
	}
}

func TestApplyConfiguration(t *testing.T) {
	for _, tc := range []mutationCase{
		{name: "labels merged", src: "Object{metadata: Object.metadata{labels: {'team': 'a'}}}", obj: deployment,
			want: func(o map[string]any) { at(o, "metadata", "labels").(map[string]any)["team"] = "a" }},
		{name: "label replaced, number spelling kept", src: "Object{metadata: Object.metadata{labels: {'app': 'web2'}}}", obj: deployment,
			want: func(o map[string]any) { at(o, "metadata", "labels").(map[string]any)["app"] = "web2" }},
		{name: "containers merged by name (built-in schema)",
			src: "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'side', image: 'envoy:2'}, Object.spec.template.spec.containers{name: 'new', image: 'busybox'}]}}}}",
			obj: deployment,
			want: func(o map[string]any) {
				s := at(o, "spec", "template", "spec").(map[string]any)
				cs := s["containers"].([]any)
				cs[1].(map[string]any)["image"] = "envoy:2"
				s["containers"] = append(cs, map[string]any{"name": "new", "image": "busybox"})
			}},
		{name: "replicas set", src: "Object{spec: Object.spec{replicas: object.spec.replicas * 2}}", obj: deployment,
			want: func(o map[string]any) { at(o, "spec").(map[string]any)["replicas"] = json.Number("6") }},
		{name: "containers replaced atomically (deduced, unknown kind)",
			src: "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'side', image: 's:2'}]}}",
			obj: widget,
			want: func(o map[string]any) {
				at(o, "spec").(map[string]any)["containers"] = []any{map[string]any{"name": "side", "image": "s:2"}}
			}},
		{name: "maps merged (deduced), numbers kept", src: "Object{metadata: Object.metadata{labels: {'team': 'a'}}, spec: Object.spec{f: 1.5}}", obj: widget,
			want: func(o map[string]any) {
				at(o, "metadata", "labels").(map[string]any)["team"] = "a"
				at(o, "spec").(map[string]any)["f"] = json.Number("1.5")
			}},
		{name: "atomic field refused", src: "Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {'x': 'y'}}}}", obj: deployment,
			err: "may not mutate atomic arrays, maps or structs: .spec.selector"},
		{name: "mismatched type names", src: "Object{spec: Object.spek{replicas: 1}}", obj: deployment, err: "type mismatch"},
		{name: "unknown field of a built-in kind", src: "Object{spec: Object.spec{frob: 1}}", obj: deployment, err: "failed to convert patch object"},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, ApplyConfiguration) })
	}
}

func TestCompileMutation(t *testing.T) {
	for _, tc := range []struct {
		kind MutationKind
		src  string
		want []lang.Diagnostic
	}{
		{kind: JSONPatch, src: "[JSONPatch{op: 'add', path: '/a', value: 1}]"},
		{kind: JSONPatch, src: "object.spec.replicas > 1 ? [JSONPatch{op: 'remove', path: '/a'}] : []"},
		{kind: ApplyConfiguration, src: "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"},
		{kind: JSONPatch, src: "[]", want: []lang.Diagnostic{{Pos: 0, Msg: "must evaluate to list(JSONPatch) but got list(dyn)"}}},
		{kind: JSONPatch, src: "Object{}", want: []lang.Diagnostic{{Pos: 0, Msg: "must evaluate to list(JSONPatch) but got Object"}}},
		{kind: JSONPatch, src: "object.patches", want: []lang.Diagnostic{{Pos: 0, Msg: "must evaluate to list(JSONPatch) but got dyn"}}},
		{kind: ApplyConfiguration, src: "[JSONPatch{op: 'add', path: '/a'}]", want: []lang.Diagnostic{{Pos: 0, Msg: "must evaluate to Object but got list(JSONPatch)"}}},
		{kind: ApplyConfiguration, src: "{'metadata': {}}", want: []lang.Diagnostic{{Pos: 0, Msg: "must evaluate to Object but got map(string, map(dyn, dyn))"}}},
		{kind: JSONPatch, src: "[JSONPatch{op: 1, path: '/a'}]", want: []lang.Diagnostic{{Pos: 13, Msg: "expected type of field 'op' is 'string' but provided type is 'int'"}}},
		{kind: JSONPatch, src: "[JSONPatch{nope: 'x'}]", want: []lang.Diagnostic{{Pos: 15, Msg: "expected type of field 'nope' is '' but provided type is 'string'"}}},
		{kind: MutationKind(9), src: "[]", want: []lang.Diagnostic{{Pos: -1, Msg: "unknown mutation kind 9"}}},
	} {
		m, ds := Language{}.CompileMutation(env(), tc.kind, tc.src)
		if tc.want == nil {
			if ds != nil || m == nil || m.Source() != tc.src || m.Kind() != tc.kind {
				t.Errorf("CompileMutation(%v, %q) = %v", tc.kind, tc.src, ds)
			}
			continue
		}
		if m != nil {
			t.Errorf("CompileMutation(%v, %q) returned a mutation with diagnostics", tc.kind, tc.src)
		}
		if diff := cmp.Diff(tc.want, ds, cmpMsgPrefix); diff != "" {
			t.Errorf("CompileMutation(%v, %q) diagnostics (-want +got):\n%s", tc.kind, tc.src, diff)
		}
	}
}

func TestMutationLimits(t *testing.T) {
	small := env()
	small.Limits.MaxWork = 1000
	m, ds := Language{}.CompileMutation(small, JSONPatch, "object.l.map(x, JSONPatch{op: 'add', path: '/a', value: x})")
	if ds != nil {
		t.Fatal(ds)
	}
	obj := map[string]any{"l": bigList(1000)}
	_, cost, err := m.Apply(context.Background(), &lang.Activation{Object: obj}, obj)
	if !errors.Is(err, lang.ErrLimit) || cost < 1000 {
		t.Errorf("Apply over budget: cost %d, %v, want a limit", cost, err)
	}
	obj = map[string]any{"l": bigList(3)}
	got, cost, err := m.Apply(context.Background(), &lang.Activation{Object: obj}, obj)
	if err != nil || cost == 0 || got["a"] != json.Number("1") {
		t.Errorf("Apply = %v, %d, %v", got, cost, err)
	}
	if min, max := m.Cost(); min > max {
		t.Errorf("Cost() = %d, %d", min, max)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := m.Apply(ctx, &lang.Activation{Object: obj}, obj); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a cancelled context: %v", err)
	}
}

func BenchmarkMutation(b *testing.B) {
	obj := loadDeployment(b)
	for _, bc := range []struct {
		name string
		kind MutationKind
		src  string
	}{
		{"JSONPatch", JSONPatch, "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/checked'), value: 'yes'}]"},
		{"ApplyConfiguration", ApplyConfiguration, "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, ds := Language{}.CompileMutation(env(), bc.kind, bc.src)
			if ds != nil {
				b.Fatal(ds)
			}
			in := &lang.Activation{Object: obj}
			ctx := context.Background()
			if _, _, err := m.Apply(ctx, in, obj); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := m.Apply(ctx, in, obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMutationDiff checks that the result of a mutation of a real
// Deployment differs from it by exactly what the mutation changed.
func TestMutationDiff(t *testing.T) {
	obj := loadDeployment(t)
	for _, tc := range []struct {
		kind MutationKind
		src  string
		want []string
	}{
		{JSONPatch, "[JSONPatch{op: 'add', path: '/metadata/labels/team', value: 'a'}]", []string{`add /metadata/labels/team "a"`}},
		{JSONPatch, "[JSONPatch{op: 'test', path: '/spec/template/spec/containers/1/name', value: 'exporter'}, JSONPatch{op: 'add', path: '/spec/template/spec/containers/1/securityContext', value: {'runAsNonRoot': true}}]",
			[]string{`add /spec/template/spec/containers/1/securityContext {"runAsNonRoot":true}`}},
		{ApplyConfiguration, "Object{metadata: Object.metadata{labels: {'team': 'a'}}}", []string{`add /metadata/labels/team "a"`}},
		{ApplyConfiguration, "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'exporter', imagePullPolicy: 'Always'}]}}}}",
			[]string{`replace /spec/template/spec/containers/1/imagePullPolicy "Always"`}},
	} {
		m, ds := Language{}.CompileMutation(env(), tc.kind, tc.src)
		if ds != nil {
			t.Fatalf("CompileMutation(%q): %v", tc.src, ds)
		}
		got, _, err := m.Apply(context.Background(), &lang.Activation{Object: obj}, obj)
		if err != nil {
			t.Errorf("Apply(%q): %v", tc.src, err)
			continue
		}
		var ops []string
		for _, op := range patch.Diff(obj, got) {
			ops = append(ops, op.String())
		}
		if diff := cmp.Diff(tc.want, ops); diff != "" {
			t.Errorf("Apply(%q) diff (-want +got):\n%s", tc.src, diff)
		}
	}
}

// loadDeployment is the benchmarks' 3.3 KB Deployment.
func loadDeployment(tb testing.TB) map[string]any {
	tb.Helper()
	data, err := os.ReadFile("../../../testdata/bench/objects/deployment.json")
	if err != nil {
		tb.Fatal(err)
	}
	v, err := value.Decode(data)
	if err != nil {
		tb.Fatal(err)
	}
	return v.(map[string]any)
}
