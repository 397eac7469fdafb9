package patch

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/modwright/modwright/internal/value"
)

// Text is the canonical JSON text of an object (value.Canonical), edited in
// place by operations: what rules write into kubectl's last-applied
// configuration. The text stays canonical: after each operation it is what
// value.AppendJSON writes for the tree a Doc of the text would hold after
// Apply, with KubeMod's semantics (add makes missing parents; remove of
// what is not there does nothing; a negative index counts from the end).
//
// Apply refuses, the text unchanged, what it leaves to a Doc: parents to
// make through an index, or in place of a null; a new key AppendJSON would
// escape; a value it cannot encode; an operation that fails (replace of a
// missing member, an index out of range or not a number, a scalar on the
// way); every operation but add, replace and remove; and every operation
// once the operations since Reset have gone through textWork bytes (each
// may read the whole text: many operations on a large text are a Doc's,
// whose cost per operation is its path's once decoded). The caller then
// decodes the text (value.DecodeLazy) and goes on with a Doc, which
// answers as it does.
//
// The zero Text is empty; Reset gives it a text. Its buffers are kept
// from one Reset to the next.
type Text struct {
	buf   []byte
	saved []byte // Mark's copy
	val   []byte // the value being written
	// places are objects Apply went to, so that the next operations
	// under them start there (most write beside each other: labels):
	// each one's '{' and the member last written in it (textPlace).
	// Inserting or removing an element forgets them all (a path through
	// the array would name another element).
	places places[textPlace]
	work   int // what the operations since Reset may have read
}

// textPlace is a remembered object of a Text: obj is the offset of its
// '{'; member, when not 0, the offset of the opening quote of one of its
// members' keys, the one Apply last wrote. Keys are in order, so a key
// after that one is looked for from there: a rule's labels, each after
// the last, cost a step each rather than a walk over all of them.
type textPlace struct{ obj, member int }

// textKept is the largest buffer a Text keeps from one text to the next.
const textKept = 64 << 10

// textWork bounds what a Text's operations read, from one Reset to the
// next: about 2,000 operations on kubectl's configuration of a Deployment.
const textWork = 4 << 20

// Reset makes s, but for whitespace around it, the text: false when it is
// not the canonical text of an object (the Text is then empty).
func (t *Text) Reset(s string) bool {
	if cap(t.buf) > textKept || cap(t.saved) > textKept || cap(t.val) > textKept {
		*t = Text{} // one large text does not stay
	}
	t.buf, t.work = t.buf[:0], 0
	t.forget()
	if s = trimSpace(s); !value.Canonical(s) {
		return false
	}
	t.buf = append(t.buf, s...)
	return true
}

// trimSpace trims JSON's whitespace, which kubectl ends its last-applied
// configuration with.
func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// String returns the text (a copy).
func (t *Text) String() string { return string(t.buf) }

// Mark keeps the text as it is for Rollback.
func (t *Text) Mark() { t.saved = append(t.saved[:0], t.buf...) }

// Rollback makes the text what it was at the last Mark.
func (t *Text) Rollback() {
	t.buf = append(t.buf[:0], t.saved...)
	t.forget()
}

// Apply applies op to the text and reports true, or reports false and
// leaves the text unchanged (see Text).
func (t *Text) Apply(op Operation) bool {
	path := op.Path
	if len(path) == 0 || len(t.buf) == 0 || op.Op != Add && op.Op != Replace && op.Op != Remove {
		return false // the whole document, no text (Reset refused it), another operation
	}
	if t.work += len(t.buf); t.work > textWork {
		return false
	}
	c, start := 0, 0  // the '{' or '[' of the container the path goes through
	var pl *textPlace // the remembered object the last token is in
	if len(path) > 1 {
		if pl = t.places.at(path[:len(path)-1]); pl != nil {
			c, start = pl.obj, len(path)-1
		}
	}
	for i := start; i < len(path); i++ {
		tok := path[i]
		last := i == len(path)-1
		var from int
		if t.buf[c] == '[' {
			var ok bool
			if from, ok = t.index(c, tok, op, last); !ok || last || from < 0 {
				return ok
			}
		} else {
			hint := 0
			if last && pl != nil {
				hint = pl.member
			}
			at, vfrom, found := t.member(c, tok, hint)
			if last {
				key, ok := t.write(op, at, vfrom, found, tok)
				if ok && pl != nil {
					pl.member = key
				}
				return ok
			}
			if !found {
				switch op.Op {
				case Remove:
					return true // nothing to remove
				case Add:
					return t.build(op, i, at)
				}
				return false // replace of a missing member: an error
			}
			from = vfrom
		}
		if b := t.buf[from]; b != '{' && b != '[' {
			// null or a scalar on the way: nothing to remove; add makes
			// a null parent anew and fails on a scalar, as Doc does.
			return op.Op == Remove
		}
		c = from
		if i == len(path)-2 && t.buf[c] == '{' {
			pl = t.places.remember(path[:i+1], textPlace{obj: c})
		}
	}
	panic("unreachable")
}

// forget forgets every place (the text changed otherwise).
func (t *Text) forget() { t.places.forget() }

// moved moves the places from buf[at] on by d bytes.
func (t *Text) moved(at, d int) {
	t.places.each(func(p *textPlace) bool {
		if p.obj >= at {
			p.obj += d
		}
		if p.member >= at {
			p.member += d
		}
		return true
	})
}

// index does a step of op at the token tok of the array whose '[' is
// buf[arr]: the last step (ok true when done), or one on the way (from, the
// element's first byte; -1 with ok true: a remove that finds nothing). As
// Doc does, a negative index counts from the end, and add makes new
// elements only at the last step.
func (t *Text) index(arr int, tok string, op Operation, last bool) (from int, ok bool) {
	n, kind := parseIndex(tok)
	if kind == idxInvalid {
		return 0, false // an error, for every operation
	}
	if kind == idxDash || n < 0 || last && op.Op == Add {
		// The index counts from the end, or may append: the length.
		_, _, count := t.element(arr, -1)
		if last && op.Op == Add {
			pos, ok := insertPos(n, kind, count, false)
			if !ok || !t.encode(op.Value) {
				return 0, false
			}
			t.insertElement(arr, pos, count)
			return 0, true
		}
		if n += count; kind == idxDash || n < 0 {
			return -1, op.Op == Remove
		}
	}
	from, found, _ := t.element(arr, n)
	switch {
	case !found:
		// Nothing there: remove does nothing, add (on the way) and
		// replace fail or make parents, which Doc does.
		return -1, op.Op == Remove
	case !last:
		return from, true
	case op.Op == Remove:
		t.removeValue(from, value.SkipCanonical(t.buf, from))
		t.forget() // the elements after it moved
		return 0, true
	case !t.encode(op.Value):
		return 0, false
	}
	t.splice(from, value.SkipCanonical(t.buf, from), t.val)
	return 0, true
}

// element finds the element n (n >= 0; -1 counts them) of the array whose
// '[' is buf[arr]: its first byte, or, when there is no such element, the
// array's ']' and how many elements it has.
func (t *Text) element(arr, n int) (from int, found bool, count int) {
	buf := t.buf
	i := arr + 1
	if buf[i] == ']' {
		return i, false, 0
	}
	for ; ; count++ {
		if count == n {
			return i, true, count
		}
		end := value.SkipCanonical(buf, i)
		if buf[end] == ']' {
			return end, false, count + 1
		}
		i = end + 1
	}
}

// insertElement inserts t.val before the element pos of the array whose
// '[' is buf[arr] and which has count elements (pos == count: at its end).
func (t *Text) insertElement(arr, pos, count int) {
	t.forget() // the elements after it move
	v := t.val
	at, _, _ := t.element(arr, pos) // the element, or the ']'
	switch {
	case count == 0:
		t.open(at, len(v))
		copy(t.buf[at:], v)
	case pos == count:
		t.open(at, len(v)+1)
		t.buf[at] = ','
		copy(t.buf[at+1:], v)
	default:
		t.open(at, len(v)+1)
		copy(t.buf[at:], v)
		t.buf[at+len(v)] = ','
	}
}

// write does op's last step on the member tok of an object (see member):
// ok, and the offset of the quote of the member's key when the member is
// there after it (else 0).
func (t *Text) write(op Operation, at, from int, found bool, tok string) (key int, ok bool) {
	if op.Op == Remove {
		if found {
			t.removeValue(at, value.SkipCanonical(t.buf, from))
		}
		return 0, true
	}
	if !found && (op.Op == Replace || !value.PlainKey(tok)) {
		return 0, false
	}
	if !t.encode(op.Value) {
		return 0, false
	}
	if found {
		t.splice(from, value.SkipCanonical(t.buf, from), t.val)
		return at, true
	}
	return t.insertMember(at, tok, t.val), true
}

// build adds the member path[i], missing at at, with what add makes of the
// rest of the path: objects, when no token after it would make an array.
func (t *Text) build(op Operation, i, at int) bool {
	rest := op.Path[i+1:]
	if !value.PlainKey(op.Path[i]) {
		return false
	}
	for _, tok := range rest {
		if _, kind := parseIndex(tok); kind != idxInvalid || !value.PlainKey(tok) {
			return false
		}
	}
	if !t.encode(op.Value) {
		return false
	}
	// The value wrapped in an object per token after the member's:
	// {"a":{"b":value}}.
	n := len(t.val)
	for _, tok := range rest {
		n += len(tok) + 5 // {"":}
	}
	v := make([]byte, 0, n)
	for _, tok := range rest {
		v = append(append(append(v, `{"`...), tok...), `":`...)
	}
	v = append(v, t.val...)
	for range rest {
		v = append(v, '}')
	}
	t.insertMember(at, op.Path[i], v)
	return true
}

// encode writes op's value into t.val; false when AppendJSON refuses it.
func (t *Text) encode(v any) bool {
	if s, ok := v.(shared); ok {
		v = s.v
	}
	b, err := value.AppendJSON(t.val[:0], v)
	if err != nil {
		return false
	}
	t.val = b
	return true
}

// member finds the member key of the object whose '{' is buf[obj]: found,
// at is its key's quote and from its value's first byte; not found, at is
// where it goes (before the first key after it, or the object's '}').
// hint, when not 0, is the quote of one of the object's keys
// (textPlace.member): a key not before it is looked for from there.
func (t *Text) member(obj int, key string, hint int) (at, from int, found bool) {
	buf := t.buf
	i := obj + 1
	if buf[i] == '}' {
		return i, 0, false
	}
	kb := unsafe.Slice(unsafe.StringData(key), len(key)) // read only
	if hint > obj && bytes.Compare(keyAt(buf, hint), kb) <= 0 {
		i = hint // the key is not before the hinted member's
	}
	for {
		k := keyAt(buf, i)
		from = i + len(k) + 3 // past '":'
		if c := bytes.Compare(k, kb); c > 0 {
			return i, 0, false
		} else if c == 0 {
			return i, from, true
		}
		to := value.SkipCanonical(buf, from)
		if buf[to] == '}' {
			return to, 0, false
		}
		i = to + 1 // past ','
	}
}

// keyAt is the key whose opening quote is buf[i] (keys have no escape).
func keyAt(buf []byte, i int) []byte {
	k := buf[i+1:]
	return k[:bytes.IndexByte(k, '"')]
}

// insertMember inserts "key":v at at (see write) and returns the offset of
// its key's quote.
func (t *Text) insertMember(at int, key string, v []byte) int {
	first := t.buf[at-1] == '{' // no member before it
	last := t.buf[at] == '}'    // none after it
	n := len(key) + 3 + len(v)  // "key":v
	if !first || !last {
		n++ // a comma, before it or after
	}
	t.open(at, n)
	w := at
	if !first && last {
		t.buf[w] = ','
		w++
	}
	quote := w
	t.buf[w] = '"'
	w++
	w += copy(t.buf[w:], key)
	w += copy(t.buf[w:], `":`)
	w += copy(t.buf[w:], v)
	if !last {
		t.buf[w] = ','
	}
	return quote
}

// removeValue removes buf[from:to], a member (from its key's quote) or an
// element, and a comma next to it.
func (t *Text) removeValue(from, to int) {
	switch {
	case t.buf[to] == ',':
		to++
	case t.buf[from-1] == ',':
		from--
	}
	t.splice(from, to, nil)
}

// splice replaces buf[from:to] with v.
func (t *Text) splice(from, to int, v []byte) {
	t.places.each(func(p *textPlace) bool {
		if p.member >= from && p.member < to {
			p.member = 0 // the member replaced or removed
		}
		return p.obj < from || p.obj >= to // the objects replaced go
	})
	if d := len(v) - (to - from); d > 0 {
		t.open(to, d)
	} else if d < 0 {
		t.buf = append(t.buf[:to+d], t.buf[to:]...)
		t.moved(to, d)
	}
	copy(t.buf[from:], v)
}

// open makes n bytes of room at buf[at], moving what follows.
func (t *Text) open(at, n int) {
	l := len(t.buf)
	t.buf = slices.Grow(t.buf, n)[:l+n]
	copy(t.buf[at+n:], t.buf[at:l])
	t.moved(at, n)
}
