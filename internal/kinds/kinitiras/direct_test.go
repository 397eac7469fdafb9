package kinitiras_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/modwright/modwright/api/kinitiras/v1alpha1"
	"github.com/modwright/modwright/internal/kinds/kinitiras"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/value"
)

func ptrTo[T any](v T) *T { return &v }

var directExtra = map[string]any{
	"http":          map[string]any{"body": map[string]any{"name": "from-http", "n": json.Number("4")}},
	"otherObject":   map[string]any{"metadata": map[string]any{"name": "other", "labels": map[string]any{"app": "other"}}},
	"otherObject_d": map[string]any{"spec": map[string]any{"replicas": json.Number("2")}, "metadata": map[string]any{"name": "other"}},
}

// TestDirectMetadata: annotations and labels templates run natively give
// the patches their rendered CUE gives, on every probe object.
func TestDirectMetadata(t *testing.T) {
	objs := probes(t)
	names := sortedNames(objs)
	values := []struct {
		name string
		v    *kinitiras.ConstantValue
		ref  *kinitiras.ResourceRef
	}{
		{"string", &kinitiras.ConstantValue{String: ptrTo(`say "hi" \o/`)}, nil},
		{"integer", &kinitiras.ConstantValue{Integer: ptrTo[int64](5)}, nil},
		{"float", &kinitiras.ConstantValue{Float: ptrTo[v1alpha1.Float64]("0.5")}, nil},
		{"boolean", &kinitiras.ConstantValue{Boolean: ptrTo(true)}, nil},
		{"stringSlice", &kinitiras.ConstantValue{StringSlice: []string{"a", "b"}}, nil},
		{"stringMap", &kinitiras.ConstantValue{StringMap: map[string]string{"b": "2", "a/x": "1"}}, nil},
		{"ref current slash", nil, &kinitiras.ResourceRef{From: "current", Path: "/metadata/labels/app"}},
		{"ref current dotted", nil, &kinitiras.ResourceRef{From: "current", Path: "metadata.name"}},
		{"ref current index", nil, &kinitiras.ResourceRef{From: "current", Path: "/spec/containers/0/name"}},
		{"ref current dashed", nil, &kinitiras.ResourceRef{From: "current", Path: "metadata.annotations.no-delete"}},
		{"ref current quoted", nil, &kinitiras.ResourceRef{From: "current", Path: `metadata.labels."kinitiras.kcloudlabs.io/webhook"`}},
		{"ref current struct", nil, &kinitiras.ResourceRef{From: "current", Path: "/spec/affinity"}},
		{"ref current missing", nil, &kinitiras.ResourceRef{From: "current", Path: "/metadata/labels/nope"}},
		{"ref old", nil, &kinitiras.ResourceRef{From: "old", Path: "/metadata/name"}},
		{"ref k8s", nil, &kinitiras.ResourceRef{From: "k8s", Path: "/metadata/labels/app", K8s: &kinitiras.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}}},
		{"ref owner", nil, &kinitiras.ResourceRef{From: "owner", Path: "metadata.name"}},
		{"ref http", nil, &kinitiras.ResourceRef{From: "http", Path: "body.name", Http: &kinitiras.HTTPRef{URL: "http://x"}}},
	}
	n := 0
	for _, field := range []string{kinitiras.TypeAnnotations, kinitiras.TypeLabels} {
		for _, op := range []string{"add", "replace", "remove"} {
			for _, key := range []string{"added-by", "example.com/team", "no-delete", "app"} {
				for _, v := range values {
					tmpl := &kinitiras.OverrideTemplate{Type: v1alpha1.OverrideRuleType(field), Operation: v1alpha1.OverriderOperator(op), Path: key, Value: v.v, ValueRef: v.ref}
					name := fmt.Sprintf("%s %s %s %s", field, op, key, v.name)
					src, errs := kinitiras.RenderOverride(tmpl, "t")
					if errs != nil {
						t.Fatalf("%s: %v", name, errs)
					}
					prog := compileCUE(t, src)
					for _, o := range names {
						obj := objs[o]
						want, werr := runOverride(prog, obj, directExtra)
						got, ok := kinitiras.DirectOverride(tmpl, obj, obj, directExtra)
						if !ok {
							t.Fatalf("%s: not run natively", name)
						}
						if werr != nil || !value.Equal(want, got) {
							t.Errorf("%s on %s:\nCUE    %s (%v)\nnative %s", name, o, enc(want), werr, enc(got))
						}
						n++
					}
				}
			}
		}
	}
	t.Logf("%d comparisons", n)
}

func runOverride(p *cuelang.Program, obj map[string]any, extra map[string]any) (any, error) {
	data := map[string]any{"object": obj, "oldObject": obj, "extraParams": extra}
	out, err := p.Run(context.Background(), map[string]any{cuelang.VarData: data}, cuelang.OutputPatches)
	if l, ok := out.([]any); ok && len(l) == 0 {
		out = []any(nil)
	}
	return out, err
}

func enc(v any) string {
	b, _ := value.Encode(v)
	return string(b)
}

func sortedNames(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDirectCondition: condition templates run natively give the verdict
// (or the failure) their rendered CUE gives, for every cond, affect mode,
// kind of value, valueProcess and reference, on every probe object, with
// and without an old object.
func TestDirectCondition(t *testing.T) {
	objs := probes(t)
	names := sortedNames(objs)
	datas := []*kinitiras.ResourceRef{
		{From: "current", Path: "/spec/replicas"},
		{From: "current", Path: "/metadata/labels/app"},
		{From: "current", Path: "metadata.name"},
		{From: "current", Path: "/metadata/annotations/nope"},
		{From: "current", Path: "/spec/containers/0/resources/limits/cpu"},
		{From: "old", Path: "/metadata/name"},
		{From: "k8s", Path: "/spec/replicas", K8s: &kinitiras.ResourceSelector{APIVersion: "v1", Kind: "X", Name: "x"}},
	}
	values := []*kinitiras.ConstantValue{
		{Integer: ptrTo[int64](3)},
		{Integer: ptrTo[int64](2)},
		{Float: ptrTo[v1alpha1.Float64]("3.0")},
		{String: ptrTo("web")},
		{String: ptrTo("^w")},
		{Boolean: ptrTo(true)},
		{IntegerSlice: []int64{1, 3}},
		{StringSlice: []string{"web", "p"}},
		{FloatSlice: []v1alpha1.Float64{"3.0", "2"}},
	}
	refs := []*kinitiras.ResourceRef{nil, {From: "current", Path: "/spec/replicas"}, {From: "http", Path: "body.n", Http: &kinitiras.HTTPRef{URL: "http://x"}}}
	processes := []*kinitiras.ValueProcess{nil,
		{Operation: "*", OperationWith: ptrTo(intstr.FromString("50%"))},
		{Operation: "+", OperationWith: ptrTo(intstr.FromInt32(2))},
		{Operation: "/", OperationWith: ptrTo(intstr.FromString("1.5"))}}
	conds := []string{"Equal", "NotEqual", "Exist", "NotExist", "In", "NotIn", "Gt", "Gte", "Lt", "Lte", "Regex"}
	n := 0
	for _, cond := range conds {
		for _, mode := range []string{"", "allow"} {
			for di, d := range datas {
				for vi, v := range values {
					for ri, ref := range refs {
						for pi, vp := range processes {
							if (cond == "Exist" || cond == "NotExist") && (vi+ri+pi > 0) || ref != nil && vi > 0 {
								continue // the value is not read; or a reference instead of each value
							}
							c := &kinitiras.Condition{AffectMode: mode, Cond: cond, Message: "m", DataRef: d, ValueProcess: vp}
							if ref != nil {
								c.ValueRef = ref
							} else {
								c.Value = v
							}
							tmpl := &kinitiras.ValidateTemplate{Type: "condition", Condition: c}
							name := fmt.Sprintf("%s %s data%d value%d ref%d process%d", cond, mode, di, vi, ri, pi)
							src, errs := kinitiras.RenderValidate(tmpl, "t")
							if errs != nil {
								continue // refused when it loads (In with a scalar...)
							}
							prog := compileCUE(t, src)
							for _, o := range names {
								for _, old := range []map[string]any{nil, objs[o]} {
									obj := objs[o]
									data := map[string]any{"object": obj, "extraParams": directExtra}
									if old != nil {
										data["oldObject"] = old
									}
									out, err := prog.Run(context.Background(), map[string]any{cuelang.VarData: data}, cuelang.OutputValidate)
									var wv bool
									var wr string
									if err == nil {
										wv, wr, err = cuelang.ValidateResult(out)
									}
									gv, gr, gerr, ok := kinitiras.DirectValidate(tmpl, obj, old, directExtra)
									if !ok {
										t.Fatalf("%s: not run natively", name)
									}
									if (err != nil) != (gerr != nil) || err == nil && (wv != gv || wr != gr) {
										t.Errorf("%s on %s (old %v):\nCUE    %v %q %v\nnative %v %q %v", name, o, old != nil, wv, wr, err, gv, gr, gerr)
									}
									n++
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d comparisons", n)
}
