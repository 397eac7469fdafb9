package cel

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
)

// TestFastPatchSameResult: the fast path gives what the apiserver's way
// gives, result or error, on a built-in kind and a custom one, for patches
// it takes and ones it hands over.
func TestFastPatchSameResult(t *testing.T) {
	for _, obj := range []string{deployment, widget} {
		for _, src := range []string{
			`[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]`,
			`[JSONPatch{op: 'replace', path: '/metadata/labels/app', value: 'z'}, JSONPatch{op: 'remove', path: '/metadata/labels/app'}]`,
			`[JSONPatch{op: 'add', path: '/spec/replicas', value: 5}]`,
			`[JSONPatch{op: 'replace', path: '/spec/nope', value: 5}]`,
			`[JSONPatch{op: 'add', path: '/spec/nope', value: 5}]`,
			`[JSONPatch{op: 'add', path: '/spec/replicas', value: 'five'}]`,
			`[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 1}}]`,
			`[JSONPatch{op: 'add', path: '/missing/parent/x', value: 1}]`,
			`[JSONPatch{op: 'remove', path: '/metadata/annotations'}]`,
			`[JSONPatch{op: 'test', path: '/metadata/name', value: 'web'}, JSONPatch{op: 'add', path: '/metadata/labels/t', value: 'ok'}]`,
			`[JSONPatch{op: 'test', path: '/metadata/name', value: 'other'}, JSONPatch{op: 'add', path: '/metadata/labels/t', value: 'ok'}]`,
			`[JSONPatch{op: 'test', path: '/spec/replicas', value: 3}, JSONPatch{op: 'replace', path: '/spec/replicas', value: 4}]`,
			`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/ports/-', value: {'containerPort': 8080}}]`,
			`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/-', value: {'name': 'c', 'image': 'i', 'bogus': 'x'}}]`,
			`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/1/resources/requests/memory', value: '1Gi'}]`,
			`[JSONPatch{op: 'add', path: '/spec/containers/0/image', value: 'b:2'}]`,
			`[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/env', value: [{'name': 'A', 'value': 'b'}]}]`,
			`[JSONPatch{op: 'move', from: '/metadata/labels/app', path: '/metadata/labels/moved'}]`,
		} {
			m, ds := Language{}.CompileMutation(env(), JSONPatch, src)
			if ds != nil {
				t.Fatalf("%s: %v", src, ds)
			}
			o := decode(t, obj).(map[string]any)
			out, _, err := m.prg.eval(context.Background(), &lang.Activation{Object: o})
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			fast, fastErr := applyJSONPatchWith(out, o, true)
			slow, slowErr := applyJSONPatchWith(out, o, false)
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
