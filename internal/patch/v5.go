package patch

import (
	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/modwright/modwright/internal/value"
)

// ApplyJSONPatchLenient applies p (github.com/evanphx/json-patch/v5) to
// the value tree obj, not modified, with the lenient options Kyverno
// applies its patchesJson6902 with: negative list indices, a remove of a
// missing path does nothing, an add creates the missing parents. Copies
// are bounded by MaxCopyBytes (one into its own subtree doubles the
// document). The result is a new tree.
func ApplyJSONPatchLenient(p jsonpatch.Patch, obj any) (any, error) {
	doc, err := value.Encode(obj)
	if err != nil {
		return nil, err
	}
	out, err := p.ApplyWithOptions(doc, &jsonpatch.ApplyOptions{SupportNegativeIndices: true, AllowMissingPathOnRemove: true,
		EnsurePathExistsOnAdd: true, AccumulatedCopySizeLimit: MaxCopyBytes})
	if err != nil {
		return nil, err
	}
	return value.Decode(out)
}
