package patch

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/modwright/modwright/internal/value"
)

// Doc is a mutable JSON tree that journals every change so that a group of
// operations can be undone.
//
// Every change to the tree is one of five primitive writes, each journalled
// with what undoes it: storing into a slot of a slice's backing array (or
// the root), setting a map member, deleting a map member (journalled with
// what they overwrote), and inserting into or removing from an array the Doc
// owns (journalled as their inverse: the position, the removed element and
// the slice header from before). Inserting and removing shift the elements
// of the owned array in place, within its capacity: a removal shifts the
// shorter side (so removing the first or the last element moves nothing), an
// insertion the elements after it, and an insertion into a full array moves
// the elements to a new backing array of twice the capacity, journalled as a
// store of the old slice header, so the old array, never written again, is
// intact when it is put back. Many operations of a rule on one array of n
// elements thus cost O(n) memory in all (the copies double in size), instead
// of a copy of the array per operation. Because the journal is undone in
// reverse order, each undo finds the array exactly as its operation left it.
//
// A Doc never modifies the tree it was given: it is copy-on-write. Before
// changing a container (object or array), it replaces it, in its parent, by
// a shallow copy that the Doc owns, and so on up to the root; containers
// that no operation touched stay shared with the original tree. Diff relies
// on that sharing to skip unchanged subtrees without walking them. The
// containers the Doc owns are changed in place, so a slice or map obtained
// from Root() may change under later operations and rollbacks.
//
// A Doc is not safe for concurrent use.
type Doc struct {
	root    any
	journal []entry
	base    int  // journal positions released so far, so that marks stay monotonic
	strict  bool // RFC 6902 semantics instead of KubeMod's (ApplyRFC6902)
	// owned holds the identity of every container the Doc copied; only
	// those are changed in place. The references also keep the copies alive,
	// so an identity is never reused by another allocation while the Doc
	// lives. A few dozen is typical: searched linearly, then indexed.
	owned    []unsafe.Pointer
	ownedSet map[unsafe.Pointer]struct{}
	adopted  bool // the Doc owns the whole tree (NewOwnedDoc)
	// places are owned objects add and replace went to, where the next
	// operations under them start (see touched).
	places places[map[string]any]
	// version counts the changes and rollbacks: see Version.
	version uint64
	// lend, when set, lends the copies of maps (LendCopies).
	lend *value.Storage
}

// ownedLinear is how many owned identities are searched linearly before
// they are indexed in a map.
const ownedLinear = 32

// entry is one journalled write.
type entry struct {
	ptr     *any // the overwritten slot (slice element or root); nil for a map member
	m       map[string]any
	key     string
	old     any  // the overwritten value; for entryRemove, the removed element
	present bool // map members: whether key was present before
	kind    entryKind
	front   bool  // entryRemove: the elements before pos were shifted
	pos     int   // entryInsert, entryRemove: the index
	hdr     []any // entryInsert, entryRemove: the slot's slice before
}

// entryKind tells what undoes an entry.
type entryKind uint8

const (
	entrySet    entryKind = iota // put old back (or delete the member)
	entryInsert                  // remove the element at pos from hdr[:len(hdr)+1]
	entryRemove                  // put old back at pos in hdr
)

// slot is where a value lives: a pointer to a slice element or the root, or
// a map member.
type slot struct {
	ptr *any
	m   map[string]any
	key string
}

// NewDoc returns a Doc editing root. root is never modified (see Doc); it
// must not be modified by anyone else while the Doc is in use either.
func NewDoc(root any) *Doc {
	return &Doc{root: root}
}

// NewOwnedDoc returns a Doc that edits root in place: for trees nobody else
// holds (freshly decoded ones), where copy-on-write would only cost.
func NewOwnedDoc(root any) *Doc {
	return &Doc{root: root, adopted: true}
}

// Reset makes d a Doc editing root, as NewDoc(root) (owned false) or
// NewOwnedDoc(root) (owned true) would, keeping the storage of its journal
// and of the identities it owned for reuse: a caller editing many trees
// recycles its Docs. Nothing of the tree it edited before stays
// referenced; its Version goes on from where it was (versions never come
// back).
func (d *Doc) Reset(root any, owned bool) {
	clear(d.journal)
	clear(d.owned)
	v := d.version + 1
	*d = Doc{root: root, journal: d.journal[:0], owned: d.owned[:0], adopted: owned, version: v}
}

// LendCopies makes the maps the Doc copies before changing them come from
// s, as the maps of a tree decoded through s do (value.Storage.Clone),
// until the next Reset: whoever recycles s then takes back the copies
// with the tree, so must be done with the Doc's tree too. A copy members
// are removed from (by an operation or a rollback) is not taken back
// (value.Storage.Shrunk).
func (d *Doc) LendCopies(s *value.Storage) { d.lend = s }

func (d *Doc) isOwned(id unsafe.Pointer) bool {
	if d.ownedSet != nil {
		_, ok := d.ownedSet[id]
		return ok
	}
	for _, o := range d.owned {
		if o == id {
			return true
		}
	}
	return false
}

func (d *Doc) addOwned(id unsafe.Pointer) {
	if d.ownedSet != nil {
		d.ownedSet[id] = struct{}{}
		return
	}
	d.owned = append(d.owned, id)
	if len(d.owned) > ownedLinear {
		d.ownedSet = make(map[unsafe.Pointer]struct{}, 2*len(d.owned))
		for _, o := range d.owned {
			d.ownedSet[o] = struct{}{}
		}
	}
}

// Root returns the current tree. It is the live tree: later operations and
// rollbacks change it. It shares unchanged subtrees with the tree given to
// NewDoc, so treat it as read-only.
func (d *Doc) Root() any { return d.root }

// identity returns what tells containers apart: the map's or the backing
// array's address. Empty arrays have none (and are never changed in place).
func identity(v any) unsafe.Pointer {
	switch c := v.(type) {
	case map[string]any:
		// A map value is a pointer to the map: what
		// reflect.Value.UnsafePointer returns, without the reflection.
		return *(*unsafe.Pointer)(unsafe.Pointer(&c))
	case []any:
		if len(c) > 0 {
			return unsafe.Pointer(unsafe.SliceData(c))
		}
	}
	return nil
}

// Same reports whether a and b are the same container (not merely equal):
// a subtree a Doc left untouched is the same as in the original tree.
func Same(a, b any) bool {
	ia := identity(a)
	if ia == nil || ia != identity(b) {
		return false
	}
	if x, ok := a.([]any); ok {
		return len(x) == len(b.([]any))
	}
	return true
}

// own returns the container v, found in slot s, made safe to change in
// place: v itself when the Doc owns it (or it is not a container, or an
// empty array), else a shallow copy stored in s (journalled) and recorded as
// owned. s must be in an owned container, or be the root.
func (d *Doc) own(s slot, v any) any {
	if d.adopted {
		return v
	}
	id := identity(v)
	if id == nil || d.isOwned(id) {
		return v
	}
	var c any
	switch x := v.(type) {
	case map[string]any:
		// maps.Clone copies the table as it is, without rehashing every
		// member; a lent map takes them one by one, but is reused.
		c = d.lend.Clone(x)
	case []any:
		c = append(make([]any, 0, len(x)), x...)
	}
	d.addOwned(identity(c))
	d.set(s, c)
	return c
}

// Freeze returns the current tree and stops changing its containers in
// place: from now on the Doc copies a container before changing it, as it
// does those of the tree it was given, so the tree returned stays as it is
// while the Doc goes on (a Rollback to a mark taken before Freeze restores
// it in place, as it restores everything). Diff(frozen, Root()) then walks
// only the containers changed since: the rest is shared. It costs the
// copies the next writes make again.
func (d *Doc) Freeze() any {
	d.places.forget() // no longer owned
	clear(d.owned)
	d.owned = d.owned[:0]
	d.ownedSet = nil
	d.adopted = false
	return d.root
}

// Mark returns the current journal position, to pass to Rollback.
func (d *Doc) Mark() int { return d.base + len(d.journal) }

// Rollback undoes every change made since Mark returned mark, restoring the
// exact previous tree: the same values, and map members absent again where
// they were absent. Changes made permanent by Release are not undone, so a
// mark taken before the last Release rolls back to that Release. A mark at or
// beyond the current position does nothing.
func (d *Doc) Rollback(mark int) {
	n := mark - d.base
	if n < 0 {
		n = 0
	}
	if n >= len(d.journal) {
		return
	}
	d.places.forget()
	for i := len(d.journal) - 1; i >= n; i-- {
		e := &d.journal[i]
		switch {
		case e.kind == entryInsert:
			h := e.hdr
			n := len(h)
			x := h[:n+1]
			copy(x[e.pos:n], x[e.pos+1:])
			x[n] = nil
			e.store(h)
		case e.kind == entryRemove:
			h := e.hdr
			if e.front {
				copy(h[:e.pos], h[1:e.pos+1])
			} else {
				copy(h[e.pos+1:], h[e.pos:len(h)-1])
			}
			h[e.pos] = e.old
			e.store(h)
		case e.ptr != nil:
			*e.ptr = e.old
		case e.present:
			e.m[e.key] = e.old
		default:
			delete(e.m, e.key)
			d.lend.Shrunk(e.m)
		}
	}
	clear(d.journal[n:])
	d.journal = d.journal[:n]
	d.version++
}

// Version is a number that changes whenever the tree does (a write, a
// rollback) and never comes back: two reads of Root with the same Version
// see the same tree, though an owned container may have been changed in
// place between two versions (its identity says nothing).
func (d *Doc) Version() uint64 { return d.version }

// record journals one write.
func (d *Doc) record(e entry) {
	d.journal = append(d.journal, e)
	d.version++
}

// Release forgets the journal: every change so far becomes permanent. The
// journal's storage is kept for reuse.
func (d *Doc) Release() {
	d.base += len(d.journal)
	clear(d.journal)
	d.journal = d.journal[:0]
}

func (d *Doc) setPtr(p *any, v any) {
	d.record(entry{ptr: p, old: *p})
	*p = v
}

func (d *Doc) setMember(m map[string]any, k string, v any) {
	old, ok := m[k]
	d.record(entry{m: m, key: k, old: old, present: ok})
	m[k] = v
}

func (d *Doc) deleteMember(m map[string]any, k string, old any) {
	d.record(entry{m: m, key: k, old: old, present: true})
	delete(m, k)
	d.lend.Shrunk(m) // clearing it would keep the room it had
}

// store puts v in the entry's slot, without journalling (undo).
func (e *entry) store(v []any) { slot{ptr: e.ptr, m: e.m, key: e.key}.store(v) }

// store puts v in the slot, without journalling.
func (s slot) store(v []any) {
	if s.ptr != nil {
		*s.ptr = v
		return
	}
	s.m[s.key] = v
}

// ownsArray reports whether the Doc allocated the backing array of c, so
// that it may use c's spare capacity. Not even a Doc made by NewOwnedDoc
// assumes it for the arrays it was given: their spare capacity may be
// another slice's elements.
func (d *Doc) ownsArray(c []any) bool {
	return cap(c) > 0 && d.isOwned(unsafe.Pointer(unsafe.SliceData(c)))
}

// insert inserts v before index pos of c, the array in slot s: in place
// when the Doc allocated c and it has room, else into a new backing array
// of twice the capacity, which the Doc then owns.
func (d *Doc) insert(s slot, c []any, pos int, v any) {
	n := len(c)
	if n < cap(c) && d.ownsArray(c) {
		d.record(entry{ptr: s.ptr, m: s.m, key: s.key, kind: entryInsert, pos: pos, hdr: c})
		x := c[:n+1]
		copy(x[pos+1:], x[pos:n])
		x[pos] = v
		s.store(x)
		return
	}
	x := make([]any, n+1, max(2*n, 1))
	copy(x, c[:pos])
	x[pos] = v
	copy(x[pos+1:], c[pos:])
	d.addOwned(unsafe.Pointer(unsafe.SliceData(x)))
	d.set(s, x)
}

// removeAt removes the element at index pos of c, the array in slot s,
// which the Doc owns (or was given by NewOwnedDoc), shifting the shorter
// side in place.
func (d *Doc) removeAt(s slot, c []any, pos int) {
	n := len(c)
	front := pos < n-1-pos
	d.record(entry{ptr: s.ptr, m: s.m, key: s.key, old: c[pos], kind: entryRemove, front: front, pos: pos, hdr: c})
	var x []any
	if front {
		copy(c[1:pos+1], c[:pos])
		c[0] = nil
		x = c[1:]
		// The array now starts one element further: record that
		// identity too.
		if cap(x) > 0 && d.ownsArray(c) {
			if id := unsafe.Pointer(unsafe.SliceData(x)); !d.isOwned(id) {
				d.addOwned(id)
			}
		}
	} else {
		copy(c[pos:], c[pos+1:])
		c[n-1] = nil
		x = c[:n-1]
	}
	s.store(x)
}

func (d *Doc) set(s slot, v any) {
	if s.ptr != nil {
		d.setPtr(s.ptr, v)
		return
	}
	d.setMember(s.m, s.key, v)
}

// Apply applies one operation with KubeMod's semantics:
//
//   - add creates missing parents: a missing (or null) parent becomes an
//     array when the token after it is "0", "-" or "-1", and an object when
//     it is not an integer; any other integer token in the missing part is
//     ErrInvalidIndex (a new array can only be added to at index 0, "-" or
//     "-1"). On an object add sets the member. On an array "-" and "-1"
//     append, an index in [0, len] inserts before it, and an index i < -1
//     inserts at len+1+i, which must be in [0, len]. An intermediate array
//     token selects an existing element (negative counts from the end), or
//     appends a new one when it is "-" or equal to the length.
//   - replace requires the target to exist; a negative index counts from
//     the end.
//   - remove ignores a missing target, a missing parent, an out-of-range
//     index and a scalar on the way; a negative index counts from the end.
//
// Path "" replaces the whole document for add and replace; removing it is an
// error wrapping ErrInvalidPointer. An array token that is neither "-" nor a
// canonical integer is ErrInvalidIndex for every operation; traversing
// through a scalar is ErrNotContainer for add and replace. The value is deep
// copied. On error the document is unchanged and the error is an *OpError.
func (d *Doc) Apply(op Operation) error {
	mark := d.Mark()
	var err error
	switch op.Op {
	case Add:
		err = d.add(op)
	case Replace:
		err = d.replace(op)
	case Remove:
		err = d.remove(op)
	default:
		return opErr(op, ErrUnsupportedOp, fmt.Sprintf("%q", string(op.Op)))
	}
	if err != nil {
		// Undo the copies made on the way to the failure.
		d.Rollback(mark)
		return err
	}
	d.touched(op.Path)
	return nil
}

// touched forgets the places an operation at path may have replaced or
// moved: those at path and under it and, when path ends in an index (or
// what could be one) of an array whose elements shift, every place in that
// array. Every other write leaves the objects on a place's path where they
// were: the copies an operation makes replace containers the Doc did not
// own, and a place's path holds owned ones only.
func (d *Doc) touched(path Pointer) {
	d.places.forgetUnder(path)
	if n := len(path); n > 0 {
		if _, kind := parseIndex(path[n-1]); kind != idxInvalid {
			d.places.forgetUnder(path[:n-1])
		}
	}
}

// ApplyRFC6902 applies op as Apply does, with RFC 6902's semantics (those
// of the package's ApplyRFC6902) instead of KubeMod's: missing parents,
// a missing remove or replace target and an out-of-range or negative
// index are errors. On error the document is unchanged.
func (d *Doc) ApplyRFC6902(op Operation) error {
	was := d.strict
	d.strict = true
	defer func() { d.strict = was }()
	return d.Apply(op)
}

// Put sets the member or element at p to v, as add does, but without
// copying v: v is shared, and (like everything the Doc did not copy) never
// changed in place. Callers use it to put back subtrees of the original
// tree, which Diff then recognises as unchanged without walking them.
func (d *Doc) Put(p Pointer, v any) error {
	return d.Apply(Operation{Op: Add, Path: p, Value: shared{v}})
}

// shared wraps a value that add and replace store without copying.
type shared struct{ v any }

// copyValue returns what add and replace store for an operation's value.
func copyValue(v any) any {
	if s, ok := v.(shared); ok {
		return s.v
	}
	return value.DeepCopy(v)
}

// opErr is op's failure. The error holds a copy of op's path: errors are
// kept (a decision lists them) where the operation's storage is reused.
func opErr(op Operation, err error, detail string) error {
	return &OpError{Op: op.Op, Path: slices.Clone(op.Path), Err: err, Detail: detail}
}

// at renders the first i tokens of p, naming a position in messages.
func at(p Pointer, i int) string { return p[:i].display() }

func notContainer(op Operation, i int, v any) error {
	return opErr(op, ErrNotContainer, fmt.Sprintf("%s at %s", value.TypeName(v), at(op.Path, i)))
}

func badIndex(op Operation, i int) error {
	return opErr(op, ErrInvalidIndex, fmt.Sprintf("%q at %s", op.Path[i], at(op.Path, i)))
}

func outOfRange(op Operation, err error, i, length int) error {
	return opErr(op, err, fmt.Sprintf("index %s out of range for array of length %d at %s", op.Path[i], length, at(op.Path, i)))
}

func noMember(op Operation, i int) error {
	return opErr(op, ErrPathNotFound, fmt.Sprintf("member %q does not exist", op.Path[i]))
}

func (d *Doc) add(op Operation) error {
	path := op.Path
	if len(path) == 0 {
		d.setPtr(&d.root, copyValue(op.Value))
		return nil
	}
	if c, ok := d.places.find(path[:len(path)-1]); ok {
		d.setMember(c, path[len(path)-1], copyValue(op.Value))
		return nil
	}
	s := slot{ptr: &d.root}
	cur := d.own(s, d.root)
	for i, tok := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				d.places.remember(path[:i], c)
				d.setMember(c, tok, copyValue(op.Value))
				return nil
			}
			child, ok := c[tok]
			if !ok {
				if d.strict {
					return noMember(op, i)
				}
				sub, err := build(op, i+1)
				if err != nil {
					return err
				}
				d.setMember(c, tok, sub)
				return nil
			}
			s = slot{m: c, key: tok}
			cur = d.own(s, child)
		case []any:
			n, kind := parseIndex(tok)
			if kind == idxInvalid {
				return badIndex(op, i)
			}
			if last {
				pos, ok := insertPos(n, kind, len(c), d.strict)
				if !ok {
					return outOfRange(op, ErrInvalidIndex, i, len(c))
				}
				d.insert(s, c, pos, copyValue(op.Value))
				return nil
			}
			if kind == idxDash || n == len(c) {
				if d.strict {
					return outOfRange(op, ErrPathNotFound, i, len(c))
				}
				sub, err := build(op, i+1)
				if err != nil {
					return err
				}
				d.insert(s, c, len(c), sub)
				return nil
			}
			if n < 0 {
				if d.strict {
					return outOfRange(op, ErrInvalidIndex, i, len(c))
				}
				n += len(c)
			}
			if n < 0 || n >= len(c) {
				err := ErrInvalidIndex
				if d.strict {
					err = ErrPathNotFound
				}
				return outOfRange(op, err, i, len(c))
			}
			s = slot{ptr: &c[n]}
			cur = d.own(s, c[n])
		case nil:
			if d.strict {
				return notContainer(op, i, cur)
			}
			// A null parent counts as missing: replace it by the new
			// container.
			sub, err := build(op, i)
			if err != nil {
				return err
			}
			d.set(s, sub)
			return nil
		default:
			return notContainer(op, i, cur)
		}
	}
	panic("unreachable")
}

// insertPos returns where add inserts into an array of the given length for
// a parsed index token, and whether that position is valid.
func insertPos(n, kind, length int, strict bool) (int, bool) {
	switch {
	case kind == idxDash:
		return length, true
	case n >= 0:
		return n, n <= length
	case strict:
		return 0, false
	case n == -1:
		return length, true
	default:
		pos := length + 1 + n
		return pos, pos >= 0
	}
}

// build returns the subtree that add creates for the missing part
// op.Path[from:] of a path: a copy of the value wrapped, innermost first, in
// a one-element array for each token "-", "0" or "-1" and in a one-member
// object for every other token except other integers, which are
// ErrInvalidIndex: positive ones would need padding (KubeMod pads with
// nulls), negative ones below -1 have no position (KubeMod fails them too).
func build(op Operation, from int) (any, error) {
	for j := len(op.Path) - 1; j >= from; j-- {
		if n, kind := parseIndex(op.Path[j]); kind == idxNumber && n != 0 && n != -1 {
			return nil, opErr(op, ErrInvalidIndex, fmt.Sprintf("index %s in new array at %s (only 0, - and -1 can create an array)", op.Path[j], at(op.Path, j)))
		}
	}
	v := copyValue(op.Value)
	for j := len(op.Path) - 1; j >= from; j-- {
		tok := op.Path[j]
		if n, kind := parseIndex(tok); kind == idxDash || (kind == idxNumber && (n == 0 || n == -1)) {
			v = []any{v}
		} else {
			v = map[string]any{tok: v}
		}
	}
	return v, nil
}

func (d *Doc) replace(op Operation) error {
	path := op.Path
	if len(path) == 0 {
		d.setPtr(&d.root, copyValue(op.Value))
		return nil
	}
	if c, ok := d.places.find(path[:len(path)-1]); ok {
		tok := path[len(path)-1]
		if _, ok := c[tok]; !ok {
			return noMember(op, len(path)-1)
		}
		d.setMember(c, tok, copyValue(op.Value))
		return nil
	}
	cur := d.own(slot{ptr: &d.root}, d.root)
	for i, tok := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			child, ok := c[tok]
			if !ok {
				return noMember(op, i)
			}
			if last {
				d.places.remember(path[:i], c)
				d.setMember(c, tok, copyValue(op.Value))
				return nil
			}
			cur = d.own(slot{m: c, key: tok}, child)
		case []any:
			n, kind := parseIndex(tok)
			switch {
			case kind == idxInvalid:
				return badIndex(op, i)
			case kind == idxDash:
				return outOfRange(op, ErrPathNotFound, i, len(c))
			case n < 0 && d.strict:
				return outOfRange(op, ErrInvalidIndex, i, len(c))
			case n < 0:
				n += len(c)
			}
			if n < 0 || n >= len(c) {
				return outOfRange(op, ErrPathNotFound, i, len(c))
			}
			if last {
				d.setPtr(&c[n], copyValue(op.Value))
				return nil
			}
			cur = d.own(slot{ptr: &c[n]}, c[n])
		default:
			return notContainer(op, i, cur)
		}
	}
	panic("unreachable")
}

func (d *Doc) remove(op Operation) error {
	// A remove that finds nothing is not an error in KubeMod's semantics;
	// look first, so that such a no-op copies nothing.
	if found, err := d.removeWalk(op, true); err != nil || !found {
		return err
	}
	_, err := d.removeWalk(op, false)
	return err
}

// removeWalk finds op's target; unless dry, it removes it. found reports
// whether there was something to remove.
func (d *Doc) removeWalk(op Operation, dry bool) (found bool, err error) {
	path := op.Path
	if len(path) == 0 {
		return false, opErr(op, ErrInvalidPointer, "cannot remove the whole document")
	}
	s := slot{ptr: &d.root}
	cur := d.root
	if !dry {
		cur = d.own(s, cur)
	}
	for i, tok := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			child, ok := c[tok]
			if !ok {
				if d.strict {
					return false, noMember(op, i)
				}
				return false, nil
			}
			if last {
				if !dry {
					d.deleteMember(c, tok, child)
				}
				return true, nil
			}
			s, cur = slot{m: c, key: tok}, child
			if !dry {
				cur = d.own(s, cur)
			}
		case []any:
			n, kind := parseIndex(tok)
			switch {
			case kind == idxInvalid:
				return false, badIndex(op, i)
			case kind == idxNumber && n < 0 && d.strict:
				return false, outOfRange(op, ErrInvalidIndex, i, len(c))
			case kind == idxNumber && n < 0:
				n += len(c)
			}
			if kind == idxDash || n < 0 || n >= len(c) {
				if d.strict {
					return false, outOfRange(op, ErrPathNotFound, i, len(c))
				}
				return false, nil
			}
			if last {
				if !dry {
					d.removeAt(s, c, n)
				}
				return true, nil
			}
			s, cur = slot{ptr: &c[n]}, c[n]
			if !dry {
				cur = d.own(s, cur)
			}
		default:
			if d.strict {
				return false, notContainer(op, i, cur)
			}
			return false, nil
		}
	}
	panic("unreachable")
}

// ApplyRFC6902 applies ops with strict RFC 6902 semantics to a copy of doc
// (copy-on-write: doc is never modified, and the result shares what the
// operations did not touch) and returns the copy: only add, remove and replace; "-" appends in add;
// no negative indices; missing parents, missing remove and replace targets
// and out-of-range indices are errors. The first failing operation stops the
// application; its error wraps an *OpError.
func ApplyRFC6902(doc any, ops []Operation) (any, error) {
	d := &Doc{root: doc, strict: true}
	for i, op := range ops {
		if err := d.Apply(op); err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
		d.Release()
	}
	return d.root, nil
}

// expandLevels is how many levels Expand decodes one at a time.
const expandLevels = 16

// Expand decodes, in place, the value.Raw containers on the way to p (a
// tree value.DecodeLazy made): the Doc's operations walk decoded
// containers only. p's own value may stay Raw (an operation replaces or
// removes it whole, or adds beside it). The tree must be the Doc's own
// (NewOwnedDoc); decoding changes no JSON value, so nothing is journaled.
func (d *Doc) Expand(p Pointer) {
	if r, ok := d.root.(value.Raw); ok {
		d.root = value.Expand(r)
	}
	cur := d.root
	for i, tok := range p[:max(len(p)-1, 0)] {
		// Each level scans its text again: a path deeper than
		// expandLevels decodes the rest in full once (a tree's cost
		// stays linear in its text, whatever the path's depth).
		expand := value.Expand
		if len(p)-1-i > expandLevels {
			expand = value.ExpandAll
		}
		switch c := cur.(type) {
		case map[string]any:
			child, ok := c[tok]
			if !ok {
				return
			}
			if r, ok := child.(value.Raw); ok {
				child = expand(r)
				c[tok] = child
			}
			cur = child
		case []any:
			n, kind := parseIndex(tok)
			if kind != idxNumber {
				return
			}
			if n < 0 {
				n += len(c) // KubeMod's index from the end
			}
			if n < 0 || n >= len(c) {
				return
			}
			if r, ok := c[n].(value.Raw); ok {
				c[n] = expand(r)
			}
			cur = c[n]
		default:
			return
		}
	}
}
