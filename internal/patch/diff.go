package patch

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/modwright/modwright/internal/value"
)

// Diff returns an RFC 6902 patch that turns original into modified, using
// standard RFC semantics (no KubeMod extensions). Neither input is modified,
// and the values in the returned operations share nothing with modified.
//
// Objects are compared member by member: a removed member is a remove, an
// added one an add, a changed one a recursive diff when both sides are
// objects or both are arrays and a replace otherwise. The operations on
// removed and changed members come first, in key order, then the adds, in key
// order, so the output is deterministic. Arrays are
// trimmed of their common prefix and suffix; what remains is diffed element
// by element where the two sides overlap, then the surplus is removed
// (highest index first) or added (in increasing index order). When a single
// replace of the whole array encodes smaller than those operations, it is
// used instead. Numbers are compared by value, so 1 and 1.0 are equal. When
// the two roots differ in type the result is one replace of "".
func Diff(original, modified any) []Operation {
	var d Differ
	return d.Diff(original, modified)
}

// A Differ computes Diffs one at a time, keeping its working storage from
// one to the next (a caller diffing many trees recycles one): nothing of
// the trees it compared stays referenced. The zero value is ready to use.
type Differ struct{ d differ }

// Diff is the package's Diff.
func (x *Differ) Diff(original, modified any) []Operation {
	d := x.start()
	d.diff(original, modified)
	return x.result()
}

// OpStorage holds the operations of a diff and their paths' tokens, for a
// caller that reuses it from one diff to the next (DiffTo): the operations
// a diff gives from it are valid until it is used again or cleared. The
// zero value is ready to use.
type OpStorage struct {
	ops  []Operation
	toks []string
}

// opStorageKept bounds the tokens an OpStorage keeps the storage of once
// cleared (a diff of thousands of operations is better not kept).
const opStorageKept = 4096

// Clear drops what the operations last given refer to (the trees' values,
// their paths), keeping the storage for the next diff unless it is large.
func (st *OpStorage) Clear() {
	if cap(st.toks) > opStorageKept || cap(st.ops) > opStorageKept {
		*st = OpStorage{}
		return
	}
	clear(st.ops[:cap(st.ops)])
	clear(st.toks[:cap(st.toks)])
	st.ops, st.toks = st.ops[:0], st.toks[:0]
}

// DiffTo is Diff giving the operations in st's storage (grown when short)
// when st is not nil.
func (x *Differ) DiffTo(st *OpStorage, original, modified any) []Operation {
	d := x.start()
	d.diff(original, modified)
	return x.resultTo(st)
}

// start readies the working storage.
func (x *Differ) start() *differ {
	d := &x.d
	if d.path == nil {
		d.path = d.pathBuf[:0]
		d.groups = d.groupBuf[:0]
		d.sizes = d.sizeBuf[:0]
		d.keys = d.keyBuf[:0]
	}
	return d
}

// result is the operations found, copied out of the trees, the working
// storage emptied.
func (x *Differ) result() []Operation { return x.resultTo(nil) }

// resultTo is result, in st's storage when st is not nil.
func (x *Differ) resultTo(st *OpStorage) []Operation {
	d := &x.d
	// The operations, their paths' tokens and their values are in the
	// working storage until now: the result gets them in one array of its
	// size and their paths in another, and the values that are subtrees
	// of modified copied, only here so that a discarded operation costs
	// no copy.
	var ops []Operation
	if len(d.ops) > 0 {
		n := 0
		for i := range d.ops {
			n += len(d.ops[i].Path)
		}
		var toks []string
		if st != nil && cap(st.ops) >= len(d.ops) && cap(st.toks) >= n {
			ops, toks = st.ops[:len(d.ops)], st.toks[:0]
		} else {
			ops, toks = make([]Operation, len(d.ops)), make([]string, 0, n)
		}
		if st != nil {
			st.ops, st.toks = ops, toks[:n]
		}
		for i, op := range d.ops {
			from := len(toks)
			toks = append(toks, op.Path...)
			op.Path = toks[from:len(toks):len(toks)]
			switch op.Value.(type) {
			case map[string]any, []any:
				op.Value = value.DeepCopy(op.Value)
			}
			ops[i] = op
		}
	}
	// The result is the caller's; the stacks are empty again (each level
	// pops what it pushed) and hold no key or value of the trees.
	clear(d.ops)
	clear(d.toks)
	d.ops, d.toks = d.ops[:0], d.toks[:0]
	clear(d.path[:cap(d.path)])
	clear(d.keys[:cap(d.keys)])
	clear(d.groups[:cap(d.groups)])
	d.path, d.keys, d.groups, d.sizes = d.path[:0], d.keys[:0], d.groups[:0], d.sizes[:0]
	return ops
}

// DiffPaths is Diff(original, modified) where modified is original with
// only what lies at or below paths changed, every other container shared
// (a Doc's copy-on-write of a frozen tree leaves it so): it walks the
// objects along paths only, where Diff walks every member of them, and
// diffs as Diff does the member a path ends at and the first array on
// the way (whose operations Diff may give as one replace of the array).
// The operations are Diff's, in Diff's order. A path of the whole
// document diffs it whole.
func (x *Differ) DiffPaths(original, modified any, paths []Pointer) []Operation {
	d := x.start()
	along := d.along[:0]
	for i := range paths {
		along = append(along, i)
	}
	d.diffAlong(original, modified, paths, along)
	d.along = along[:0]
	return x.result()
}

// diffAlong diffs a and b, at d.path, along paths[i] for each i of along
// (the paths through here). It reorders along: each level sorts its part
// by the member its paths name there, so that every path is looked at
// once per level it goes through.
func (d *differ) diffAlong(a, b any, paths []Pointer, along []int) {
	depth := len(d.path)
	x, ok := a.(map[string]any)
	y, ok2 := b.(map[string]any)
	if !ok || !ok2 || Same(a, b) {
		d.diff(a, b)
		return
	}
	for _, i := range along {
		if len(paths[i]) == depth { // a path ends here: all of it
			d.diffObject(x, y)
			return
		}
	}
	slices.SortFunc(along, func(i, j int) int { return strings.Compare(paths[i][depth], paths[j][depth]) })
	// As diffObject: the removed and changed members first, in key order,
	// then the added ones. The runs of one member stay where they are (a
	// level below reorders only its own run).
	for run := along; len(run) > 0; {
		k, n := paths[run[0]][depth], 1
		for n < len(run) && paths[run[n]][depth] == k {
			n++
		}
		sub := run[:n]
		run = run[n:]
		xv, had := x[k]
		if !had {
			continue
		}
		yv, has := y[k]
		if !has {
			d.emit(Remove, k, true, nil)
			continue
		}
		d.path = append(d.path, k)
		d.diffAlong(xv, yv, paths, sub)
		d.path = d.path[:len(d.path)-1]
	}
	for i, prev := range along {
		k := paths[prev][depth]
		if i > 0 && paths[along[i-1]][depth] == k {
			continue
		}
		if _, had := x[k]; had {
			continue
		}
		if yv, has := y[k]; has {
			d.emit(Add, k, true, yv)
		}
	}
}

type differ struct {
	path  []string    // tokens of the current position
	ops   []Operation // result so far (working storage: see result)
	toks  []string    // the tokens of ops' paths
	sizes []int       // estimated encoded size of each op (0 outside arrays)
	// arrays counts the arrays being diffed around the current position:
	// only there are sizes compared (see diffArray), so outside any array
	// they are not computed.
	arrays int
	keys   []string // stack of added object keys, shared by all levels

	along        []int   // DiffPaths' path indices, reordered level by level
	groups       []group // stack of member groups, shared by all levels
	scratch      []Operation
	scratchSizes []int

	// Initial storage, so that common cases allocate only the result.
	pathBuf  [16]string
	groupBuf [16]group
	sizeBuf  [32]int
	keyBuf   [8]string
}

// Estimated sizes of the fixed parts of an encoded operation.
const (
	opOverhead     = len(`{"op":"replace","path":"","value":}`)
	addOverhead    = len(`{"op":"add","path":"","value":}`)
	removeOverhead = len(`{"op":"remove","path":""}`)
)

func (d *differ) emit(op OpType, extra string, hasExtra bool, v any) {
	// The path's tokens go into the working storage (result copies them
	// out): no allocation per operation.
	from := len(d.toks)
	d.toks = append(d.toks, d.path...)
	if hasExtra {
		d.toks = append(d.toks, extra)
	}
	p := Pointer(d.toks[from:len(d.toks):len(d.toks)])
	size := 0
	if d.arrays > 0 {
		size = opSize(op, p, v)
	}
	d.ops = append(d.ops, Operation{Op: op, Path: p, Value: v})
	d.sizes = append(d.sizes, size)
}

// opSize estimates the encoded size of an operation, as Diff weighs the
// operations in an array against one replace of it.
func opSize(op OpType, p Pointer, v any) int {
	switch op {
	case Remove:
		return pathSize(p) + removeOverhead
	case Add:
		return pathSize(p) + addOverhead + sizeOf(v, -1)
	}
	return pathSize(p) + opOverhead + sizeOf(v, -1)
}

// MemberChanges is the first half of the difference standard JSON Patch
// operations make to root, taken without Doc.Freeze and Diff (which copy
// and walk the containers on the way) when it can be read off them: each
// adds, replaces or removes a member of an object reached through objects
// and array elements (by their index: the arrays keep their length),
// where it is not an object or array put in place of one of the same
// (Diff would go into both), and no two touch the same or nested paths
// (at most maxChanges, none deeper than maxChangeDepth). It records the member each operation finds (in
// buf), and is false when the operations are not such; once they applied,
// DiffChanges gives the operations Diff(before, after) would.
func MemberChanges(root any, ops []Operation, buf []Change) ([]Change, bool) {
	if len(ops) > maxChanges {
		return buf, false
	}
	for i, op := range ops {
		if len(op.Path) == 0 || len(op.Path) > maxChangeDepth {
			return buf, false
		}
		switch op.Op {
		case Add, Replace, Remove:
		default:
			return buf, false
		}
		for _, prev := range ops[:i] {
			if nestedPaths(prev.Path, op.Path) {
				return buf, false
			}
		}
		at := root
		var arrays uint16
		for i, tok := range op.Path[:len(op.Path)-1] {
			switch t := at.(type) {
			case map[string]any:
				at = t[tok]
			case []any:
				n, ok := arrayIndex(tok, len(t))
				if !ok {
					return buf, false
				}
				at, arrays = t[n], arrays|1<<i
			default:
				return buf, false // a missing parent on the way
			}
		}
		m, ok := at.(map[string]any)
		if !ok {
			return buf, false // an array's element: its length may change
		}
		old, had := m[op.Path[len(op.Path)-1]]
		if had && op.Op != Remove && sameShape(old, op.Value) {
			return buf, false // two objects or two arrays: Diff goes into them
		}
		buf = append(buf, Change{Path: op.Path, Old: old, New: op.Value, Had: had, Has: op.Op != Remove, arrays: arrays})
	}
	return buf, true
}

// arrayIndex is tok as the index of an element of an array of n, as Diff
// writes one (decimal, no leading zero).
func arrayIndex(tok string, n int) (int, bool) {
	if tok == "" || len(tok) > 1 && tok[0] == '0' {
		return 0, false
	}
	i := 0
	for j := 0; j < len(tok); j++ {
		c := tok[j]
		if c < '0' || c > '9' || i > n {
			return 0, false
		}
		i = i*10 + int(c-'0')
	}
	return i, i < n
}

// sameShape reports whether a and b are both objects or both arrays.
func sameShape(a, b any) bool {
	switch a.(type) {
	case map[string]any:
		_, ok := b.(map[string]any)
		return ok
	case []any:
		_, ok := b.([]any)
		return ok
	}
	return false
}

// maxChanges bounds the operations MemberChanges compares pairwise, and
// maxChangeDepth their paths (the arrays on them DiffChanges weighs: a
// Kubernetes object's deepest usual path has a dozen tokens).
const (
	maxChanges     = 16
	maxChangeDepth = 16
)

// nestedPaths reports whether one of a and b is a prefix of the other (or they
// are equal).
func nestedPaths(a, b Pointer) bool {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A Change is what an operation did to one object member, as
// MemberChanges found it: its path, the value it had (Had false: absent)
// and the one it has (Has false: removed).
type Change struct {
	Path     Pointer
	Old, New any
	Had, Has bool
	// arrays has bit i set where Path[:i] is an array (MemberChanges
	// takes no path longer than maxChangeDepth).
	arrays uint16
}

// DiffChanges is Diff(before, after) without before, where after is before
// with only the object members of changes, MemberChanges', changed as they
// say: each a member of an object reached through objects and arrays (an
// element by its index, the array's length the same), none nested in
// another, none an object or array in place of one (Diff would go into
// both). It gives
// Diff's operations, in another order, which makes no difference to a
// document they are applied to, as no two share a path: a member added,
// changed or removed (none where the value stays equal), and for an array
// on the way one replace of it instead of the operations in it where Diff
// chooses so (that is smaller), the deepest first.
func DiffChanges(after any, changes []Change) []Operation {
	return DiffChangesTo(nil, after, changes)
}

// DiffChangesTo is DiffChanges giving the operations in dst's storage
// (from dst[0]; grown when short), for a caller that reuses it once done
// with them.
func DiffChangesTo(dst []Operation, after any, changes []Change) []Operation {
	ops := dst[:0]
	if cap(ops) < len(changes) {
		ops = make([]Operation, 0, len(changes))
	}
	var sizes []int      // as Diff weighs ops[i]: only in an array (made with the first)
	var arrays []Pointer // those on the way, each once
	for _, c := range changes {
		op := Operation{Path: c.Path, Value: c.New}
		switch {
		case c.Had && !c.Has:
			op.Op, op.Value = Remove, nil
		case !c.Had && c.Has:
			op.Op = Add
		case c.Had && c.Has && !value.Equal(c.Old, c.New):
			op.Op = Replace
		default:
			continue
		}
		in := c.arrays != 0
		for i := range c.Path {
			if c.arrays&(1<<i) != 0 && !slices.ContainsFunc(arrays, func(a Pointer) bool { return slices.Equal(a, c.Path[:i]) }) {
				arrays = append(arrays, c.Path[:i])
			}
		}
		if in && sizes == nil {
			sizes = make([]int, len(ops), len(changes))
		}
		if sizes != nil {
			size := 0
			if in {
				size = opSize(op.Op, op.Path, op.Value)
			}
			sizes = append(sizes, size)
		}
		ops = append(ops, op)
	}
	// Each array, the deepest first: its operations (those not merged
	// already: Op "") against one replace of it.
	slices.SortStableFunc(arrays, func(a, b Pointer) int { return len(b) - len(a) })
	for _, a := range arrays {
		under := func(p Pointer) bool { return len(p) > len(a) && slices.Equal(p[:len(a)], a) }
		cost, n := 0, 0
		for i, op := range ops {
			if op.Op != "" && under(op.Path) {
				cost += sizes[i]
				n++
			}
		}
		arr := lookupPath(after, a)
		if limit := cost - opOverhead - pathSize(a) - 1; n == 0 || limit < 0 || sizeOf(arr, limit) < 0 {
			continue
		}
		for i := range ops {
			if under(ops[i].Path) {
				ops[i].Op = ""
			}
		}
		size := 0
		if slices.ContainsFunc(arrays, func(b Pointer) bool { return len(b) < len(a) && slices.Equal(a[:len(b)], b) }) {
			size = opSize(Replace, a, arr) // weighed in the array around it
		}
		ops = append(ops, Operation{Op: Replace, Path: a, Value: arr})
		sizes = append(sizes, size)
	}
	out := ops[:0]
	for _, op := range ops {
		if op.Op == "" {
			continue
		}
		switch op.Value.(type) {
		case map[string]any, []any:
			op.Value = value.DeepCopy(op.Value)
		}
		out = append(out, op)
	}
	clear(ops[len(out):])
	return out
}

// lookupPath is the value at p in root, which holds it.
func lookupPath(root any, p Pointer) any {
	for _, tok := range p {
		switch t := root.(type) {
		case map[string]any:
			root = t[tok]
		case []any:
			n, _ := strconv.Atoi(tok)
			root = t[n]
		}
	}
	return root
}

func (d *differ) diff(a, b any) {
	if Same(a, b) { // a subtree a Doc did not touch
		return
	}
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			d.diffObject(x, y)
			return
		}
	case []any:
		if y, ok := b.([]any); ok {
			d.diffArray(x, y)
			return
		}
	}
	if !value.Equal(a, b) {
		d.emit(Replace, "", false, b)
	}
}

// equal is value.Equal, short-cut for shared containers at every level: a
// changed element of an array (compared when the array's common ends are
// trimmed) is walked only along what changed in it, not through the
// subtrees it still shares.
func equal(a, b any) bool { return value.EqualSharing(a, b, Same) }

func (d *differ) diffObject(x, y map[string]any) {
	// Removed and changed members. They are visited in map order, each
	// member's operations forming one contiguous group, and the groups are
	// then put in key order: cheaper than sorting every key when most
	// members are unchanged.
	g0 := len(d.groups)
	removed := 0
	for k, xv := range x {
		from := len(d.ops)
		if yv, ok := y[k]; !ok {
			d.emit(Remove, k, true, nil)
			removed++
		} else {
			d.path = append(d.path, k)
			d.diff(xv, yv)
			d.path = d.path[:len(d.path)-1]
		}
		if len(d.ops) > from {
			d.groups = append(d.groups, group{key: k, from: from, to: len(d.ops)})
		}
	}
	if len(d.groups)-g0 > 1 {
		d.sortGroups(d.groups[g0:])
	}
	d.groups = d.groups[:g0]
	// Added members, in key order.
	if len(y) > len(x)-removed {
		k0 := len(d.keys)
		for k := range y {
			if _, ok := x[k]; !ok {
				d.keys = append(d.keys, k)
			}
		}
		slices.Sort(d.keys[k0:])
		for _, k := range d.keys[k0:] {
			d.emit(Add, k, true, y[k])
		}
		d.keys = d.keys[:k0]
	}
}

// group is the run d.ops[from:to] of operations on one object member.
type group struct {
	key      string
	from, to int
}

func compareGroups(a, b group) int { return strings.Compare(a.key, b.key) }

// sortGroups reorders the operations of gs, consecutive groups emitted in
// that order, so that the groups follow each other in key order.
func (d *differ) sortGroups(gs []group) {
	if slices.IsSortedFunc(gs, compareGroups) {
		return
	}
	from, to := gs[0].from, gs[len(gs)-1].to
	d.scratch = append(d.scratch[:0], d.ops[from:to]...)
	d.scratchSizes = append(d.scratchSizes[:0], d.sizes[from:to]...)
	slices.SortFunc(gs, compareGroups)
	i := from
	for _, g := range gs {
		copy(d.sizes[i:], d.scratchSizes[g.from-from:g.to-from])
		i += copy(d.ops[i:], d.scratch[g.from-from:g.to-from])
	}
	clear(d.scratch)
}

func (d *differ) diffArray(x, y []any) {
	p := 0
	for p < len(x) && p < len(y) && equal(x[p], y[p]) {
		p++
	}
	s := 0
	for s < len(x)-p && s < len(y)-p && equal(x[len(x)-1-s], y[len(y)-1-s]) {
		s++
	}
	xm, ym := x[p:len(x)-s], y[p:len(y)-s]
	if len(xm) == 0 && len(ym) == 0 {
		return
	}
	start := len(d.ops)
	d.arrays++
	n := min(len(xm), len(ym))
	for i := 0; i < n; i++ {
		d.path = append(d.path, strconv.Itoa(p+i))
		d.diff(xm[i], ym[i])
		d.path = d.path[:len(d.path)-1]
	}
	for i := len(xm) - 1; i >= n; i-- {
		d.emit(Remove, strconv.Itoa(p+i), true, nil)
	}
	for i := n; i < len(ym); i++ {
		d.emit(Add, strconv.Itoa(p+i), true, ym[i])
	}
	d.arrays--
	// One replace of the whole array instead, when that is smaller.
	cost := 0
	for _, c := range d.sizes[start:] {
		cost += c
	}
	if limit := cost - opOverhead - pathSize(d.path) - 1; limit >= 0 && sizeOf(y, limit) >= 0 {
		clear(d.ops[start:])
		d.ops = d.ops[:start]
		d.sizes = d.sizes[:start]
		d.emit(Replace, "", false, y)
	}
}

// pathSize estimates the encoded size of a pointer (escapes ignored).
func pathSize(p []string) int {
	n := 0
	for _, t := range p {
		n += 1 + len(t)
	}
	return n
}

// sizeOf estimates the size of v encoded as compact JSON. With limit >= 0
// it gives up and returns -1 as soon as the size exceeds limit.
func sizeOf(v any, limit int) int {
	n := 0
	if !addSize(v, &n, limit) {
		return -1
	}
	return n
}

func addSize(v any, n *int, limit int) bool {
	switch t := v.(type) {
	case nil:
		*n += 4
	case bool:
		*n += 5
	case string:
		*n += stringSize(t)
	case json.Number:
		*n += len(t)
	case map[string]any:
		*n += 2 + len(t)
		for k, e := range t {
			*n += stringSize(k)
			if limit >= 0 && *n > limit {
				return false
			}
			if !addSize(e, n, limit) {
				return false
			}
		}
	case []any:
		*n += 2 + len(t)
		for _, e := range t {
			if !addSize(e, n, limit) {
				return false
			}
		}
	default:
		*n += 8 // other number representations
	}
	return limit < 0 || *n <= limit
}

func stringSize(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			n++
		} else if c < 0x20 {
			n += 5
		}
	}
	return n
}
