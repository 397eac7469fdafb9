package cel

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
)

// TestFastPatchSameResult: the fast path gives what the apiserver's way
// gives, result or error, on a built-in kind and a custom one, for patches
// it takes and ones it hands over; the patches marked fast must be taken
// by it.
func TestFastPatchSameResult(t *testing.T) {
	for _, obj := range []string{deployment, widget} {
		for _, tc := range []struct {
			src             string
			deployment, crd bool // the fast path takes it on the Deployment, on the Widget
		}{
			{`[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]`, true, true},
			{`[JSONPatch{op: 'replace', path: '/metadata/labels/app', value: 'z'}, JSONPatch{op: 'remove', path: '/metadata/labels/app'}]`, true, true},
			{`[JSONPatch{op: 'add', path: '/spec/replicas', value: 5}]`, true, true},
			{`[JSONPatch{op: 'replace', path: '/spec/nope', value: 5}]`, false, false},
			{`[JSONPatch{op: 'add', path: '/spec/nope', value: 5}]`, false, true},
			{`[JSONPatch{op: 'add', path: '/spec/replicas', value: 'five'}]`, false, true},
			{`[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 1}}]`, false, true},
			{`[JSONPatch{op: 'add', path: '/missing/parent/x', value: 1}]`, false, false},
			{`[JSONPatch{op: 'remove', path: '/metadata/annotations'}]`, false, false},
			{`[JSONPatch{op: 'test', path: '/metadata/name', value: 'web'}, JSONPatch{op: 'add', path: '/metadata/labels/t', value: 'ok'}]`, true, false},
			{`[JSONPatch{op: 'test', path: '/metadata/name', value: 'other'}, JSONPatch{op: 'add', path: '/metadata/labels/t', value: 'ok'}]`, false, false},
			{`[JSONPatch{op: 'test', path: '/spec/replicas', value: 3}, JSONPatch{op: 'replace', path: '/spec/replicas', value: 4}]`, true, false},
			{`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/ports/-', value: {'containerPort': 8080}}]`, true, false},
			{`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/-', value: {'name': 'c', 'image': 'i', 'bogus': 'x'}}]`, false, false},
			{`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/1/resources/requests/memory', value: '1Gi'}]`, true, false},
			{`[JSONPatch{op: 'add', path: '/spec/containers/0/image', value: 'b:2'}]`, false, true},
			{`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/env', value: [{'name': 'A', 'value': 'b'}]}]`, true, false},
			{`[JSONPatch{op: 'move', from: '/metadata/labels/app', path: '/metadata/labels/moved'}]`, false, false},
		} {
			src := tc.src
			m, ds := Language{}.compileMutation(env(), JSONPatch, src, true)
			if ds != nil {
				t.Fatalf("%s: %v", src, ds)
			}
			o := decode(t, obj).(map[string]any)
			out, _, err := m.prg.eval(context.Background(), &lang.Activation{Object: o})
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			var used bool
			fast, fastErr := applyJSONPatchWith(out, o, true, &used, newGoTypes())
			slow, slowErr := applyJSONPatchWith(out, o, false, nil, nil)
			if want := (obj == deployment && tc.deployment) || (obj == widget && tc.crd); used != want {
				t.Errorf("%s on %s: fast path taken %v, want %v", src, o["kind"], used, want)
			}
			if (fastErr == nil) != (slowErr == nil) || (fastErr != nil && fastErr.Error() != slowErr.Error()) {
				t.Errorf("%s on %s: errors differ: fast %v, apiserver's way %v", src, o["kind"], fastErr, slowErr)
				continue
			}
			if d := cmp.Diff(slow, fast); d != "" {
				t.Errorf("%s on %s: results differ (-apiserver's way +fast):\n%s", src, o["kind"], d)
			}
		}
	}
}

// TestFitsScalar: where fitsScalar answers, it answers what decoding the
// value's JSON strictly into the type does, for every plain kind (named
// ones and pointers too), types that decode themselves, and integers at
// each kind's edges.
func TestFitsScalar(t *testing.T) {
	type named string
	types := []reflect.Type{
		reflect.TypeFor[string](), reflect.TypeFor[named](), reflect.TypeFor[*string](), reflect.TypeFor[**int32](),
		reflect.TypeFor[bool](), reflect.TypeFor[*bool](),
		reflect.TypeFor[int](), reflect.TypeFor[int8](), reflect.TypeFor[int16](), reflect.TypeFor[int32](), reflect.TypeFor[int64](),
		reflect.TypeFor[uint](), reflect.TypeFor[uint8](), reflect.TypeFor[uint16](), reflect.TypeFor[uint32](), reflect.TypeFor[uint64](),
		reflect.TypeFor[float32](), reflect.TypeFor[float64](), reflect.TypeFor[json.Number](),
		reflect.TypeFor[[]byte](), reflect.TypeFor[map[string]string](), reflect.TypeFor[[]string](), reflect.TypeFor[any](),
		reflect.TypeFor[intstr.IntOrString](), reflect.TypeFor[apiresource.Quantity](), reflect.TypeFor[metav1.Time](),
		reflect.TypeFor[corev1.Protocol](), reflect.TypeFor[corev1.Container](),
	}
	values := []any{"", "x", "80", "1Gi", "true", true, false, nil, 3.0, 3.5, uint64(7),
		map[string]any{"a": "b"}, []any{"a"}, json.Number("1"), json.Number("8080"), json.Number("-1"), json.Number("300"),
		json.Number("2147483648"), json.Number("1e3"), json.Number("3.5"), json.Number("99999999999999999999")}
	for _, n := range []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, 65535, 65536,
		math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxUint32, math.MaxUint32 + 1,
		math.MaxInt64, math.MinInt64} {
		values = append(values, n)
	}
	g := newGoTypes()
	answered := 0
	for _, ft := range types {
		for _, v := range values {
			fits, known := fitsScalar(ft, v, g)
			if !known {
				continue
			}
			answered++
			if want := decodesStrictly(ft, v); fits != want {
				t.Errorf("fitsScalar(%v, %#v) = %v, decoding says %v", ft, v, fits, want)
			}
		}
	}
	if answered < 200 {
		t.Errorf("fitsScalar answered %d cases, want at least 200: the fast way is not taken", answered)
	}
}

// TestEditsTestsAmongEdits: a test after edits is taken by Edits when
// every edit before it is apart from its path (they part at a member of an
// object), and its operations then give what Apply gives; otherwise Apply
// decides.
func TestEditsTestsAmongEdits(t *testing.T) {
	for _, tc := range []struct {
		src  string
		edit bool // Edits takes it
	}{
		{`[JSONPatch{op: 'add', path: '/metadata/labels/p', value: 'x'}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'app'}, JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: 8080}]`, true},
		{`[JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: 8080}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'app'}]`, true},
		{`[JSONPatch{op: 'add', path: '/metadata/labels/p', value: 'x'}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'other'}]`, false},
		{`[JSONPatch{op: 'add', path: '/metadata/labels/p', value: 'x'}, JSONPatch{op: 'test', path: '/metadata/labels/p', value: 'x'}]`, false},
		{`[JSONPatch{op: 'add', path: '/metadata/labels', value: {'p': 'x'}}, JSONPatch{op: 'test', path: '/metadata/labels/app', value: 'web'}]`, false},
		{`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0', value: {'name': 'c', 'image': 'i'}}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/1/name', value: 'app'}]`, false},
		{`[JSONPatch{op: 'remove', path: '/spec/template/spec/containers/0'}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'side'}]`, false},
		{`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0', value: {'name': 'c', 'image': 'i'}}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/1/name', value: 'side'}]`, false},
		{`[JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0', value: {'name': 'c', 'image': 'i'}}, JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'app'}]`, false},
	} {
		m, ds := Language{}.compileMutation(env(), JSONPatch, tc.src, true)
		if ds != nil {
			t.Fatalf("%s: %v", tc.src, ds)
		}
		o := decode(t, deployment).(map[string]any)
		p, _, err := m.EvalJSONPatch(context.Background(), &lang.Activation{Object: o}, o, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		ops, ok := p.Edits()
		if ok != tc.edit {
			t.Errorf("%s: Edits takes it: %v, want %v", tc.src, ok, tc.edit)
		}
		want, wantErr := p.Apply()
		if !ok {
			continue
		}
		got, err := patch.ApplyRFC6902(o, ops)
		if err != nil || wantErr != nil {
			t.Errorf("%s: Edits' operations: %v, Apply: %v", tc.src, err, wantErr)
			continue
		}
		if d := cmp.Diff(any(want), got); d != "" {
			t.Errorf("%s: (-Apply +Edits' operations):\n%s", tc.src, d)
		}
	}
}

// TestEditsManyBeforeATest: past maxEditsBeforeTest operations with a test
// among edits, Apply decides (Edits would compare each test with every
// edit before it).
func TestEditsManyBeforeATest(t *testing.T) {
	src := `object.spec.template.spec.containers.map(c, JSONPatch{op: 'add', path: '/metadata/labels/' + c.name, value: 'x'}) + ` +
		`[JSONPatch{op: 'test', path: '/metadata/name', value: 'web'}]`
	for _, n := range []int{2, maxEditsBeforeTest + 1} {
		o := decode(t, deployment).(map[string]any)
		var cs []any
		for i := range n {
			cs = append(cs, map[string]any{"name": fmt.Sprintf("c%d", i), "image": "i"})
		}
		o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"] = cs
		m, ds := Language{}.compileMutation(env(), JSONPatch, src, true)
		if ds != nil {
			t.Fatal(ds)
		}
		p, _, err := m.EvalJSONPatch(context.Background(), &lang.Activation{Object: o}, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Edits(); ok != (n+1 <= maxEditsBeforeTest) {
			t.Errorf("%d edits then a test: Edits takes it %v", n, ok)
		}
	}
}
