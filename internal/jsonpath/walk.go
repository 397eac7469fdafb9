package jsonpath

import (
	"errors"
	"fmt"
	"slices"
)

type sinkMode uint8

const (
	modeValues sinkMode = iota // collect values
	modeNodes                  // collect nodes with their captured keys
	modeCount                  // count values
	modeExists                 // stop at the first value
)

// errStop ends a walk in modeExists at the first value.
var errStop = errors.New("stop")

// descentRef stands in the capture stack for the relative path of an active
// '..' step, kept in sink.dpaths; it is materialized as a Descent on emit.
type descentRef int

// sink receives the values a walk selects.
type sink struct {
	mode  sinkMode
	n     int // values emitted
	vals  []any
	nodes []Node
	keys  []any // capture stack (modeNodes)
	arena []any // where the nodes' keys are copied (modeNodes)
	// dpaths are the relative paths of the active '..' steps, and dsnap
	// their materialized Descents, shared by the nodes emitted while a path
	// stays the same; nil when dpaths[d] changed since (modeNodes).
	dpaths [][]any
	dsnap  []Descent
	nkeys  int // captured keys allocated (modeNodes)
}

func (s *sink) emit(v any) error {
	switch s.mode {
	case modeValues:
		if s.n++; s.n > MaxValues {
			return limitErr("values", MaxValues)
		}
		if cap(s.vals) == 0 {
			s.vals = make([]any, 0, 4)
		}
		s.vals = append(s.vals, v)
	case modeNodes:
		if s.n++; s.n > MaxValues {
			return limitErr("values", MaxValues)
		}
		keys, err := s.snapshot()
		if err != nil {
			return err
		}
		s.nodes = append(s.nodes, Node{Value: v, Keys: keys})
	case modeCount:
		s.n++
	case modeExists:
		s.n++
		return errStop
	}
	return nil
}

// snapshot copies the capture stack for a node, materializing the paths of
// '..' captures (once per path: the nodes found while it stays the same
// share it).
func (s *sink) snapshot() ([]any, error) {
	if len(s.keys) == 0 {
		return nil, nil
	}
	start := len(s.arena)
	s.arena = append(s.arena, s.keys...)
	k := s.arena[start:len(s.arena):len(s.arena)]
	s.nkeys += len(k)
	for i, x := range s.keys {
		if d, ok := x.(descentRef); ok {
			if s.dsnap[d] == nil {
				s.dsnap[d] = append(make(Descent, 0, len(s.dpaths[d])), s.dpaths[d]...)
				s.nkeys += len(s.dpaths[d])
			}
			k[i] = s.dsnap[d]
		} else {
			k[i] = x
		}
	}
	if s.nkeys > MaxKeys {
		return nil, limitErr("captured keys", MaxKeys)
	}
	return k, nil
}

// lookup follows a definite path (name and index steps only).
func lookup(steps []step, v any) (any, bool) {
	for i := range steps {
		st := &steps[i]
		switch st.kind {
		case sName:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[st.name]; !ok {
				return nil, false
			}
		case sIndex:
			a, ok := v.([]any)
			if !ok {
				return nil, false
			}
			j := index(st.index, len(a))
			if j < 0 {
				return nil, false
			}
			v = a[j]
		default:
			return nil, false
		}
	}
	return v, true
}

// index resolves a possibly negative index into an array of length n; -1
// when out of range.
func index(i, n int) int {
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return -1
	}
	return i
}

// walk applies steps to v and emits what they select into s.
func (ev *evaluator) walk(steps []step, v any, s *sink) error {
	for len(steps) > 0 {
		st := &steps[0]
		steps = steps[1:]
		switch st.kind {
		case sName:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			if v, ok = m[st.name]; !ok {
				return nil
			}
		case sIndex:
			a, ok := v.([]any)
			if !ok {
				return nil
			}
			j := index(st.index, len(a))
			if j < 0 {
				return nil
			}
			v = a[j]
		default:
			return ev.branch(st, steps, v, s)
		}
	}
	return s.emit(v)
}

// visitIndex walks rest from the child at index i, capturing i.
func (ev *evaluator) visitIndex(rest []step, child any, i int, s *sink) error {
	if s.mode != modeNodes {
		return ev.walk(rest, child, s)
	}
	s.keys = append(s.keys, i)
	err := ev.walk(rest, child, s)
	s.keys = s.keys[:len(s.keys)-1]
	return err
}

// visitKey walks rest from the member with key k, capturing k.
func (ev *evaluator) visitKey(rest []step, child any, k string, s *sink) error {
	if s.mode != modeNodes {
		return ev.walk(rest, child, s)
	}
	s.keys = append(s.keys, k)
	err := ev.walk(rest, child, s)
	s.keys = s.keys[:len(s.keys)-1]
	return err
}

// sortedKeys returns the keys of m in ascending order, using buf when it is
// large enough.
func sortedKeys(m map[string]any, buf []string) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// branch applies a step that may select several children.
func (ev *evaluator) branch(st *step, rest []step, v any, s *sink) error {
	switch st.kind {
	case sWildcard, sFilter:
		switch c := v.(type) {
		case []any:
			for i, e := range c {
				if err := ev.tick(); err != nil {
					return err
				}
				if st.kind == sFilter {
					if ok, err := ev.test(st, e); err != nil || !ok {
						if err != nil {
							return err
						}
						continue
					}
				}
				if err := ev.visitIndex(rest, e, i, s); err != nil {
					return err
				}
			}
		case map[string]any:
			var buf [16]string
			for _, k := range sortedKeys(c, buf[:]) {
				if err := ev.tick(); err != nil {
					return err
				}
				e := c[k]
				if st.kind == sFilter {
					if ok, err := ev.test(st, e); err != nil || !ok {
						if err != nil {
							return err
						}
						continue
					}
				}
				if err := ev.visitKey(rest, e, k, s); err != nil {
					return err
				}
			}
		}
	case sUnion:
		for _, sel := range st.union {
			if err := ev.tick(); err != nil {
				return err
			}
			if sel.isIndex {
				a, ok := v.([]any)
				if !ok {
					continue
				}
				j := index(sel.index, len(a))
				if j < 0 {
					continue
				}
				if err := ev.visitIndex(rest, a[j], j, s); err != nil {
					return err
				}
				continue
			}
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			e, ok := m[sel.name]
			if !ok {
				continue
			}
			if err := ev.visitKey(rest, e, sel.name, s); err != nil {
				return err
			}
		}
	case sSlice:
		a, ok := v.([]any)
		if !ok {
			return nil
		}
		start, end, stp := sliceBounds(&st.slice, len(a))
		if stp > 0 {
			for i := start; i < end; i += stp {
				if err := ev.tick(); err != nil {
					return err
				}
				if err := ev.visitIndex(rest, a[i], i, s); err != nil {
					return err
				}
			}
		} else {
			for i := start; i > end; i += stp {
				if err := ev.tick(); err != nil {
					return err
				}
				if err := ev.visitIndex(rest, a[i], i, s); err != nil {
					return err
				}
			}
		}
	case sDescent:
		return ev.descend(st, rest, v, s)
	}
	return nil
}

// sliceBounds resolves a slice against an array of length n, Python style.
// The step is clamped to [-(n+1), n+1] so that no index arithmetic
// overflows.
func sliceBounds(sp *sliceSpec, n int) (start, end, stp int) {
	stp = 1
	if sp.hasStep {
		stp = sp.step
	}
	if stp > n {
		stp = n + 1
	} else if stp < -n-1 {
		stp = -n - 1
	}
	clamp := func(i, lo, hi int) int {
		if i < 0 {
			i += n
		}
		return max(lo, min(i, hi))
	}
	if stp > 0 {
		start, end = 0, n
		if sp.hasStart {
			start = clamp(sp.start, 0, n)
		}
		if sp.hasEnd {
			end = clamp(sp.end, 0, n)
		}
		return start, end, stp
	}
	start, end = n-1, -1
	if sp.hasStart {
		start = clamp(sp.start, -1, n-1)
	}
	if sp.hasEnd {
		end = clamp(sp.end, -1, n-1)
	}
	return start, end, stp
}

// test evaluates a filter with '@' bound to e.
func (ev *evaluator) test(st *step, e any) (bool, error) {
	saved := ev.cur
	ev.cur = e
	v, ok, err := ev.eval(st.filter)
	ev.cur = saved
	if err != nil || !ok {
		return false, err
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, evalErr(st.pos, "a filter must yield a boolean, got %s", typeOf(v, ok))
	}
	return b, nil
}

// descend applies rest to v and to every descendant of v, pre-order.
func (ev *evaluator) descend(st *step, rest []step, v any, s *sink) error {
	if s.mode != modeNodes {
		return ev.descendRec(st, rest, v, s, -1)
	}
	d := len(s.dpaths)
	s.dpaths = append(s.dpaths, nil)
	s.dsnap = append(s.dsnap, nil)
	s.keys = append(s.keys, descentRef(d))
	err := ev.descendRec(st, rest, v, s, d)
	s.keys = s.keys[:len(s.keys)-1]
	s.dpaths = s.dpaths[:d]
	s.dsnap = s.dsnap[:d]
	return err
}

// descendRec is descend below the current level. ev.depth counts the levels
// of every '..' step active in the evaluation, so that nested descents
// (through filters) cannot exhaust the stack together either.
func (ev *evaluator) descendRec(st *step, rest []step, v any, s *sink, d int) error {
	if ev.depth > maxTreeDepth {
		return fmt.Errorf("%w: recursive descent at column %d goes deeper than %d levels", ErrTooMuchWork, st.pos+1, maxTreeDepth)
	}
	if err := ev.tick(); err != nil {
		return err
	}
	if err := ev.walk(rest, v, s); err != nil {
		return err
	}
	ev.depth++
	defer func() { ev.depth-- }()
	switch c := v.(type) {
	case []any:
		for i, e := range c {
			if d >= 0 {
				s.dpaths[d] = append(s.dpaths[d], i)
				s.dsnap[d] = nil
			}
			err := ev.descendRec(st, rest, e, s, d)
			if d >= 0 {
				s.dpaths[d] = s.dpaths[d][:len(s.dpaths[d])-1]
				s.dsnap[d] = nil
			}
			if err != nil {
				return err
			}
		}
	case map[string]any:
		var buf [16]string
		for _, k := range sortedKeys(c, buf[:]) {
			if d >= 0 {
				s.dpaths[d] = append(s.dpaths[d], k)
				s.dsnap[d] = nil
			}
			err := ev.descendRec(st, rest, c[k], s, d)
			if d >= 0 {
				s.dpaths[d] = s.dpaths[d][:len(s.dpaths[d])-1]
				s.dsnap[d] = nil
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
