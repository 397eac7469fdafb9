package value

// Lookup returns the value a path of object keys leads to in a tree:
// Lookup(obj, "metadata", "name") is obj.metadata.name. It reports false
// when a step is missing or is not an object; with no keys it returns v.
func Lookup(v any, keys ...string) (any, bool) {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
