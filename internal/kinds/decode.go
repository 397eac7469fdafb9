package kinds

import (
	"fmt"
	"reflect"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"github.com/modwright/modwright/internal/value"
)

// Decode decodes a manifest strictly into out (a pointer to the kind's Go
// type): an apiVersion other than apiVersion, unknown or duplicate fields
// and values of the wrong type are errors naming the kind, the rule and the
// field (with its indices).
func Decode(m *Manifest, kind, apiVersion string, out any) error {
	if m.APIVersion() != apiVersion {
		return fmt.Errorf("apiVersion %q is not served; use %s", m.APIVersion(), apiVersion)
	}
	name := m.Key()
	strict, err := sigsjson.UnmarshalStrict(m.JSON, out)
	if err != nil {
		// encoding/json names the Go struct and type; say which field
		// of the manifest, with its indices, and what it must be.
		if mm := value.FindMismatch(m.Object, reflect.TypeOf(out).Elem()); mm != nil {
			return fmt.Errorf("%s %s: %w", kind, name, mm)
		}
		return fmt.Errorf("%s %s: %v", kind, name, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s %s: %s", kind, name, strings.Join(msgs, "; "))
	}
	return nil
}
