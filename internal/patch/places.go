package patch

import "slices"

// places remembers the last few objects an editor went to, by their path,
// so that the next operations under the same object start there instead
// of at the root: most operations of a review write beside each other (a
// rule's labels, the same field of a container written by one rule after
// another). The editor forgets a place whenever a change may have moved
// or replaced what its path leads to (Doc.touched, Text.forget). The zero
// value remembers nothing.
type places[T any] struct {
	p    [4]place[T]
	next int
}

// place is one remembered object: the tokens of its path and what the
// editor keeps of it (a Doc, the object itself; a Text, its offset).
type place[T any] struct {
	toks [8]string
	n    int
	ok   bool
	v    T
}

// find returns what was remembered at path (not the root's: that needs no
// walk).
func (ps *places[T]) find(path Pointer) (v T, ok bool) {
	if p := ps.at(path); p != nil {
		return *p, true
	}
	return v, false
}

// at is find's: what was remembered at path, to change in place (nil
// when nothing is).
func (ps *places[T]) at(path Pointer) *T {
	if len(path) == 0 {
		return nil
	}
	for i := range ps.p {
		if p := &ps.p[i]; p.ok && p.n == len(path) && slices.Equal(p.toks[:p.n], path) {
			return &p.v
		}
	}
	return nil
}

// remember keeps v at path, in place of the oldest place, and returns
// where it keeps it (nil: a path longer than a place holds, or the
// root's, is not kept).
func (ps *places[T]) remember(path Pointer, v T) *T {
	p := &ps.p[ps.next]
	if len(path) == 0 || len(path) > len(p.toks) {
		return nil
	}
	p.n = copy(p.toks[:], path)
	p.ok, p.v = true, v
	ps.next = (ps.next + 1) % len(ps.p)
	return &p.v
}

// forget forgets every place.
func (ps *places[T]) forget() { *ps = places[T]{} }

// forgetUnder forgets the places whose path starts with prefix (the
// object at prefix and everything in it).
func (ps *places[T]) forgetUnder(prefix Pointer) {
	for i := range ps.p {
		if p := &ps.p[i]; p.ok && p.n >= len(prefix) && slices.Equal(p.toks[:len(prefix)], prefix) {
			*p = place[T]{}
		}
	}
}

// each calls f with what every remembered place keeps; f may change it,
// or return false to forget the place.
func (ps *places[T]) each(f func(v *T) bool) {
	for i := range ps.p {
		if p := &ps.p[i]; p.ok && !f(&p.v) {
			*p = place[T]{}
		}
	}
}
