package packs_test

import (
	"errors"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/value"
)

// FuzzDecode decodes arbitrary rule outputs and metadata: nothing may
// panic; an output is edges or a shape error; metadata is valid or one of
// the loader's errors.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`[{"type": "T", "from": {"kind": "A", "name": "a"}, "to": {"kind": "B", "namespace": "n", "name": "b"}}]`))
	f.Add([]byte(`{"type": "T"}`))
	f.Add([]byte("name: p\nversion: 0.1.0\nrego_api: v1\nkubeatlas: '>= 1.0.0'\nmodules: [{name: m, file: m.rego, entrypoint: data.m.derive}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if v, err := value.Decode(data); err == nil {
			if _, err := packs.DecodeEdges(v); err != nil && !errors.Is(err, packs.ErrShape) {
				t.Fatalf("not a shape error: %v", err)
			}
		}
		var m packs.Metadata
		if yaml.Unmarshal(data, &m) == nil {
			err := packs.ValidateMetadata(&m)
			if err == nil {
				err = packs.CheckConstraint(m.KubeAtlas, packs.KubeAtlasVersion)
			}
			if err != nil && !errors.Is(err, packs.ErrInvalidMetadata) && !errors.Is(err, packs.ErrIncompatibleRegoAPI) &&
				!errors.Is(err, packs.ErrInvalidConstraint) && !errors.Is(err, packs.ErrIncompatibleKubeAtlas) {
				t.Fatalf("an untyped error: %v", err)
			}
		}
	})
}
