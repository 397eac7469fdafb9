package pattern

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/modwright/modwright/internal/lang"
)

// Failure is why an object does not match a pattern.
type Failure struct {
	// Skip: a conditional or global anchor did not hold, so the pattern
	// does not apply to the object (Kyverno's rule result "skip").
	Skip bool
	// Path is where the object failed ("/spec/containers/0/image/"); ""
	// when the failure is not at a place of the object (an anchored key
	// the object never has, lists of different lengths): Kyverno's rule
	// result "error".
	Path string
	// Msg is Kyverno's description of the failure.
	Msg string
}

func (f *Failure) Error() string { return f.Msg }

// The messages Kyverno's anchor failures start with.
const (
	negationMsg    = "negation anchor matched in resource"
	conditionalMsg = "conditional anchor mismatch"
	globalMsg      = "global anchor mismatch"
)

type errKind uint8

const (
	plainErr errKind = iota
	condErr
	globalErr
	negErr
)

// merr is a failure on the way up. Kyverno tells an anchor's failure
// from others by its type and, once wrapped, by its text; so does this.
type merr struct {
	kind     errKind
	msg      string
	combined bool // several skips of one level joined
}

func (e *merr) skip() bool {
	switch e.kind {
	case condErr, globalErr:
		return true
	case negErr:
		return false
	}
	return strings.Contains(e.msg, conditionalMsg) || strings.Contains(e.msg, globalMsg)
}

func (e *merr) negation() bool {
	switch e.kind {
	case negErr:
		return true
	case condErr, globalErr:
		return false
	}
	return strings.Contains(e.msg, negationMsg)
}

func plain(format string, args ...any) *merr {
	return &merr{msg: fmt.Sprintf(format, args...)}
}

func combine(errs []*merr) *merr {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.msg
	}
	return &merr{msg: strings.Join(msgs, "; "), combined: true}
}

// matcher is the state of one Match: which anchored keys the object had
// somewhere (Kyverno's anchor map, keyed by the key as written).
type matcher struct {
	seen map[string]bool
}

// Match checks obj (a JSON tree: maps, lists, strings, json.Number or
// Go numbers, booleans, nil) against the pattern: nil when it matches.
func (p *Pattern) Match(obj any) *Failure {
	m := &matcher{}
	path, err := m.element(obj, p.root, "/")
	switch {
	case err == nil:
		return nil
	case err.skip():
		return &Failure{Skip: true, Msg: err.msg}
	case err.negation():
		return &Failure{Path: path, Msg: err.msg}
	case m.keysMissing():
		return &Failure{Msg: err.msg}
	}
	return &Failure{Path: path, Msg: err.msg}
}

func (m *matcher) keysMissing() bool {
	for raw, seen := range m.seen {
		if a, _ := parseKey(raw); !seen && a != negation {
			return true
		}
	}
	return false
}

func (m *matcher) element(res any, n node, path string) (string, *merr) {
	switch t := n.(type) {
	case *mapNode:
		rm, ok := res.(map[string]any)
		if !ok {
			return path, plain("pattern and resource have different structures. Path: %s. Expected map[string]interface {}, found %s", path, typeName(res))
		}
		m.check(t, rm)
		return m.mapMatch(rm, t, path)
	case *listNode:
		rl, ok := res.([]any)
		if !ok {
			return path, plain("validation rule failed at path %s, resource does not satisfy the expected overlay pattern", path)
		}
		return m.list(rl, t, path)
	case *leaf:
		if rl, ok := res.([]any); ok {
			for _, e := range rl {
				if !t.match(e) {
					return path, plain("resource value '%v' does not match '%v' at path %s", text(res), text(t.v), path)
				}
			}
			return "", nil
		}
		if !t.match(res) {
			return path, plain("resource value '%v' does not match '%v' at path %s", text(res), text(t.v), path)
		}
	}
	return "", nil
}

// check records which conditional, existence and negation keys the
// object has.
func (m *matcher) check(t *mapNode, rm map[string]any) {
	for _, e := range t.checked {
		if m.seen[e.raw] {
			continue
		}
		if m.seen == nil {
			m.seen = map[string]bool{}
		}
		_, has := rm[e.key]
		m.seen[e.raw] = has
	}
}

func (m *matcher) mapMatch(rm map[string]any, t *mapNode, path string) (string, *merr) {
	anchors, rest := t.anchors, t.rest
	if t.wild {
		anchors, rest = expand(t, rm)
	}
	var skips []*merr
	applied := 0
	for _, e := range anchors {
		hp, err := m.handle(e, rm, path)
		if err == nil {
			applied++
			continue
		}
		if err.skip() {
			skips = append(skips, err)
			continue
		}
		if !directSkip(skips) {
			return hp, err
		}
	}
	if len(skips) > 0 && (applied == 0 || directSkip(skips)) {
		return path, combine(skips)
	}
	for _, e := range rest {
		if hp, err := m.handle(e, rm, path); err != nil {
			return hp, err
		}
	}
	return "", nil
}

// directSkip: one of skips is an anchor of this level (not a skip
// passed up from below), which makes the level's other failures moot.
func directSkip(skips []*merr) bool {
	for _, s := range skips {
		if !s.combined {
			return true
		}
	}
	return false
}

func (m *matcher) handle(e *entry, rm map[string]any, path string) (string, *merr) {
	cur := path + e.key + "/"
	v, has := rm[e.key]
	switch e.anchor {
	case negation:
		if has {
			return cur, &merr{kind: negErr, msg: negationMsg + ": " + cur + " is not allowed"}
		}
		return "", nil
	case equality:
		if has {
			if hp, err := m.element(v, e.val, cur); err != nil {
				return hp, err
			}
		}
		return "", nil
	case condition:
		if !has {
			return cur, &merr{kind: condErr, msg: conditionalMsg + ": conditional anchor key doesn't exist in the resource"}
		}
		if hp, err := m.element(v, e.val, cur); err != nil {
			return hp, &merr{kind: condErr, msg: conditionalMsg + ": " + err.msg}
		}
		return "", nil
	case global:
		if has {
			if hp, err := m.element(v, e.val, cur); err != nil {
				return hp, &merr{kind: globalErr, msg: globalMsg + ": " + err.msg}
			}
		}
		return "", nil
	case existence:
		if has {
			return m.exists(v, e, cur)
		}
		return "", nil
	}
	// A plain key (and an add-if-absent one, looked up as written).
	cur = path + e.raw + "/"
	v = rm[e.raw]
	if e.star {
		if v != nil {
			return "", nil
		}
		return path, plain("%s/%s not found", path, e.raw)
	}
	return m.element(v, e.val, cur)
}

// exists: each map of the pattern's list matches some element of the
// object's list.
func (m *matcher) exists(v any, e *entry, cur string) (string, *merr) {
	rl, ok := v.([]any)
	if !ok {
		return cur, plain("invalid resource type %s: Existence ^ () anchor can be used only on list/array type resource", typeName(v))
	}
	pl, ok := e.val.(*listNode)
	if !ok {
		return cur, plain("invalid pattern type: Pattern has to be of list to compare against resource")
	}
	for _, pe := range pl.elems {
		pm, ok := pe.(*mapNode)
		if !ok {
			return cur, plain("invalid pattern type: Pattern has to be of type map to compare against items in resource")
		}
		found := false
		for i, re := range rl {
			if _, err := m.element(re, pm, cur+strconv.Itoa(i)+"/"); err == nil {
				found = true
				break
			}
		}
		if !found {
			return cur, plain("existence anchor validation failed at path %s", cur)
		}
	}
	return "", nil
}

func (m *matcher) list(rl []any, ln *listNode, path string) (string, *merr) {
	if len(ln.elems) == 0 {
		return path, plain("pattern Array empty")
	}
	switch first := ln.elems[0].(type) {
	case *mapNode:
		// Every element against the first map (whose anchors decide
		// for the whole list).
		return m.each(len(rl), path, func(i int, p string) (string, *merr) { return m.element(rl[i], first, p) })
	case *leaf:
		return m.element(rl, first, path)
	}
	if len(rl) < len(ln.elems) {
		return "", plain("validate Array failed, array length mismatch, resource Array len is %d and pattern Array len is %d", len(rl), len(ln.elems))
	}
	return m.each(len(ln.elems), path, func(i int, p string) (string, *merr) { return m.element(rl[i], ln.elems[i], p) })
}

// each runs n element checks: the first failure that is not a skip
// fails; when every element skipped, the list skips.
func (m *matcher) each(n int, path string, check func(i int, p string) (string, *merr)) (string, *merr) {
	var skips []*merr
	applied := 0
	for i := range n {
		rp, err := check(i, path+strconv.Itoa(i)+"/")
		if err == nil {
			applied++
			continue
		}
		if err.skip() {
			skips = append(skips, err)
			continue
		}
		return rp, err
	}
	if applied == 0 && len(skips) > 0 {
		return path, combine(skips)
	}
	return "", nil
}

// expand resolves the wildcard keys of a labels or annotations pattern
// against the object's keys (the first in sorted order whose value is a
// string); a key that matches none stays as written. Entries whose
// pattern is not a string are left out, as Kyverno does.
func expand(t *mapNode, rm map[string]any) (anchors, rest []*entry) {
	var keys []string
	for k, v := range rm {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var all []*entry
	for _, group := range [][]*entry{t.anchors, t.rest} {
		for _, e := range group {
			if l, ok := e.val.(*leaf); !ok || l.str == nil {
				continue
			}
			if e.wild {
				for _, k := range keys {
					if lang.MatchWildcard(e.key, k) {
						c := *e
						c.key, c.raw = k, rewrite(e.raw, e.key, k)
						e = &c
						break
					}
				}
			}
			all = append(all, e)
		}
	}
	slices.SortFunc(all, func(a, b *entry) int { return strings.Compare(a.raw, b.raw) })
	var front []*entry
	for _, e := range all {
		switch e.anchor {
		case condition, equality, existence, negation:
			anchors = append(anchors, e)
		case global:
			front = append(front, e)
		default:
			rest = append(rest, e)
		}
	}
	slices.Reverse(front)
	return anchors, append(front, rest...)
}

// rewrite replaces the key inside an anchored key as written.
func rewrite(raw, key, with string) string {
	if raw == key {
		return with
	}
	i := strings.LastIndex(raw, "("+key+")")
	if i < 0 {
		return with
	}
	return raw[:i] + "(" + with + ")"
}

// match is Kyverno's test of a scalar of the object against a scalar of
// the pattern.
func (l *leaf) match(v any) bool {
	switch p := l.v.(type) {
	case bool:
		b, ok := v.(bool)
		return ok && b == p
	case float64:
		switch t := scalar(v).(type) {
		case int64:
			return p == math.Trunc(p) && int64(p) == t
		case float64:
			return t == p
		case string:
			f, err := strconv.ParseFloat(t, 64)
			return err == nil && f == p
		}
		return false
	case nil:
		switch t := scalar(v).(type) {
		case nil:
			return true
		case int64:
			return t == 0
		case float64:
			return t == 0
		case string:
			return t == ""
		case bool:
			return !t
		}
		return false
	}
	return l.str.match(v)
}

// scalar is a value of the object with its number as Kubernetes'
// unstructured objects hold it: int64 when integral, else float64.
func scalar(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case int:
		return int64(t)
	case int32:
		return int64(t)
	case float32:
		return float64(t)
	}
	return v
}

func typeName(v any) string {
	switch scalar(v).(type) {
	case nil:
		return "<nil>"
	case map[string]any:
		return "map[string]interface {}"
	case []any:
		return "[]interface {}"
	}
	return fmt.Sprintf("%T", scalar(v))
}

func text(v any) any {
	if v == nil {
		return "<nil>"
	}
	return scalar(v)
}
