package lang

// Lazy is an object whose members are computed on first read (a Policy's
// `variables`). A language binds a Lazy found among an Activation's values
// as an object whose members it reads through Member; the implementation
// computes (and caches) each member. It is used by one evaluation at a
// time unless its implementation says otherwise.
type Lazy interface {
	// Member returns the member name: ok is false when there is no such
	// member; err is the error computing it failed with (kept in the chain
	// of the evaluation's error, so errors.Is(err, ErrLimit) still holds).
	Member(name string) (v any, ok bool, err error)
	// Names returns all member names, in order.
	Names() []string
}

// LazyFunc is a Lazy over an ordered list of names and a function that
// computes a member; it does not cache (wrap the function to cache).
type LazyFunc struct {
	Keys []string
	Get  func(name string) (any, error)
}

var _ Lazy = (*LazyFunc)(nil)

// Member calls Get when name is among Keys.
func (l *LazyFunc) Member(name string) (any, bool, error) {
	for _, k := range l.Keys {
		if k == name {
			v, err := l.Get(name)
			return v, true, err
		}
	}
	return nil, false, nil
}

// Names returns Keys.
func (l *LazyFunc) Names() []string { return l.Keys }
