package jsonpath

// PathOf is the full path of a node Select returned from root: object
// keys as strings and array indices as ints, root first. The query's
// names and indices are its own steps (a negative index resolved against
// root), each capturing step's place holds the node's key for it, a '..'
// key's relative path spliced in. ok is false for a computed expression,
// or when keys are not the keys of a node of root.
func (e *Expr) PathOf(root any, keys []any) (path []any, ok bool) {
	if e.path == nil {
		return nil, false
	}
	v := root
	k := 0
	for i := range e.path.steps {
		st := &e.path.steps[i]
		var key any
		switch st.kind {
		case sName:
			key = st.name
		case sIndex:
			a, isList := v.([]any)
			if !isList {
				return nil, false
			}
			j := index(st.index, len(a))
			if j < 0 {
				return nil, false
			}
			key = j
		case sDescent:
			if k >= len(keys) {
				return nil, false
			}
			d, isDescent := keys[k].(Descent)
			if !isDescent {
				return nil, false
			}
			k++
			for _, step := range d {
				if v, ok = child(v, step); !ok {
					return nil, false
				}
				path = append(path, step)
			}
			continue
		default:
			if k >= len(keys) {
				return nil, false
			}
			key = keys[k]
			k++
		}
		if v, ok = child(v, key); !ok {
			return nil, false
		}
		path = append(path, key)
	}
	return path, k == len(keys)
}

// child is v's member named by key (a string of an object, an int of
// an array).
func child(v, key any) (any, bool) {
	switch key := key.(type) {
	case string:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		c, ok := m[key]
		return c, ok
	case int:
		a, ok := v.([]any)
		if !ok || key < 0 || key >= len(a) {
			return nil, false
		}
		return a[key], true
	}
	return nil, false
}

// AnyMember stands, in a Pattern, for a step that selects members it
// does not name: [*], .*, a filter, a slice, a union.
type AnyMember struct{}

// Pattern is the query's path as far as its text says it: a name as a
// string, a non-negative index as an int, any other selecting step as
// AnyMember. ok is false for a computed expression, a '..' step and a
// negative index (where the path depends on the value).
func (e *Expr) Pattern() (pattern []any, ok bool) {
	if e.path == nil {
		return nil, false
	}
	for i := range e.path.steps {
		st := &e.path.steps[i]
		switch st.kind {
		case sName:
			pattern = append(pattern, st.name)
		case sIndex:
			if st.index < 0 {
				return nil, false
			}
			pattern = append(pattern, st.index)
		case sDescent:
			return nil, false
		default:
			pattern = append(pattern, AnyMember{})
		}
	}
	return pattern, true
}
