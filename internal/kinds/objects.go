package kinds

import (
	"errors"
	"fmt"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
)

// MetadataStrings is obj's metadata member of strings (labels,
// annotations; other values left out), nil when it has none.
func MetadataStrings(obj any, member string) map[string]string {
	m, _ := obj.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	src, _ := md[member].(map[string]any)
	if len(src) == 0 {
		return nil
	}
	out := make(map[string]string, len(src))
	for k, v := range src {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// ReadNamespace reads the Namespace ns through the engine's object reader:
// nil when there is none (no reader, offline without it, or ns is "").
func ReadNamespace(h *engine.Handle, ns string) (map[string]any, error) {
	objs := h.Objects()
	if objs == nil || ns == "" {
		return nil, nil
	}
	obj, err := objs.Get(h.Context(), engine.ObjectRef{Kind: "Namespace", Name: ns})
	if err != nil {
		if errors.Is(err, lang.ErrNoReader) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Namespace %q: %w", ns, err)
	}
	return obj, nil
}
