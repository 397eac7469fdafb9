package pattern

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modwright/modwright/internal/lang"
)

// Bounds of a pattern (a pattern from a rule, or one built at request time
// from substituted variables).
const (
	MaxDepth = 64
	MaxNodes = 1 << 16
)

// ErrTooLarge is in the chain of Compile's error for a pattern deeper or
// larger than the bounds.
var ErrTooLarge = fmt.Errorf("pattern too large: %w", lang.ErrLimit)

// anchor is the modifier of a pattern key.
type anchor uint8

const (
	plainKey    anchor = iota
	condition          // (k)
	global             // <(k)
	negation           // X(k)
	addIfAbsent        // +(k): a mutation anchor; a plain key here
	equality           // =(k)
	existence          // ^(k)
)

var reAnchor = regexp.MustCompile(`^([+<=X^])?\((.+)\)$`)

// parseKey parses an anchored key ("=(name)"): its anchor and its key.
func parseKey(raw string) (anchor, string) {
	m := reAnchor.FindStringSubmatch(strings.TrimSpace(raw))
	if m == nil {
		return plainKey, raw
	}
	switch m[1] {
	case "<":
		return global, m[2]
	case "X":
		return negation, m[2]
	case "+":
		return addIfAbsent, m[2]
	case "=":
		return equality, m[2]
	case "^":
		return existence, m[2]
	}
	return condition, m[2]
}

// ParseAnchor parses an anchored key as Kyverno writes it ("+(name)"):
// its modifier ("" for a conditional anchor, else one of + < = X ^) and
// its key; ok is false for a plain key. Kyverno's mutation overlays, which
// are not patterns, read their anchors with it.
func ParseAnchor(raw string) (modifier, key string, ok bool) {
	m := reAnchor.FindStringSubmatch(strings.TrimSpace(raw))
	if m == nil {
		return "", raw, false
	}
	return m[1], m[2], true
}

// Pattern is a compiled pattern. It is immutable and safe for concurrent
// use.
type Pattern struct {
	root node
	src  any
}

// node is *mapNode, *listNode or *leaf.
type node any

type mapNode struct {
	anchors []*entry // conditional, equality, existence, negation: sorted
	rest    []*entry // the others, in Kyverno's order
	checked []*entry // conditional, existence and negation keys (missing-anchor bookkeeping)
	// wild: a metadata.labels or metadata.annotations map whose keys hold
	// wildcards, matched against the object's keys.
	wild bool
}

type entry struct {
	raw    string // as written: "=(name)"
	key    string // "name"
	anchor anchor
	star   bool // the value is the string "*"
	val    node
	wild   bool // the key holds "*" or "?"
}

type listNode struct{ elems []node }

type leaf struct {
	v   any // nil, bool, float64 or string
	str *strPattern
}

// Compile compiles a pattern (the JSON tree of a validate.pattern: maps,
// lists, strings, numbers as json.Number or float64, booleans, null).
func Compile(p any) (*Pattern, error) {
	c := &compiler{}
	n, err := c.node(p, 0, plainMap)
	if err != nil {
		return nil, err
	}
	return &Pattern{root: n, src: p}, nil
}

// Source is the pattern as compiled.
func (p *Pattern) Source() any { return p.src }

type compiler struct{ nodes int }

// where is what a map is to the metadata wildcards.
type where uint8

const (
	plainMap where = iota
	metadataMap
	labelsMap // metadata.labels or metadata.annotations
)

func (c *compiler) node(p any, depth int, w where) (node, error) {
	c.nodes++
	if depth > MaxDepth || c.nodes > MaxNodes {
		return nil, ErrTooLarge
	}
	switch t := p.(type) {
	case map[string]any:
		return c.mapNode(t, depth, w)
	case []any:
		ln := &listNode{elems: make([]node, 0, len(t))}
		for _, e := range t {
			n, err := c.node(e, depth+1, plainMap)
			if err != nil {
				return nil, err
			}
			ln.elems = append(ln.elems, n)
		}
		return ln, nil
	case string:
		return &leaf{v: t, str: compileString(t)}, nil
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", t, err)
		}
		return &leaf{v: f}, nil
	case float64:
		return &leaf{v: t}, nil
	case int64:
		return &leaf{v: float64(t)}, nil
	case int:
		return &leaf{v: float64(t)}, nil
	case bool, nil:
		return &leaf{v: t}, nil
	}
	return nil, fmt.Errorf("unsupported pattern value of type %T", p)
}

func (c *compiler) mapNode(m map[string]any, depth int, w where) (*mapNode, error) {
	mn := &mapNode{wild: w == labelsMap}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var front, back []*entry
	for _, raw := range keys {
		a, key := parseKey(raw)
		// The labels and annotations under a metadata key match by
		// wildcard keys.
		cw := plainMap
		switch {
		case key == "metadata":
			cw = metadataMap
		case w == metadataMap && (key == "labels" || key == "annotations"):
			cw = labelsMap
		}
		e := &entry{raw: raw, key: key, anchor: a, wild: mn.wild && strings.ContainsAny(key, "*?")}
		if s, ok := m[raw].(string); ok && s == "*" {
			e.star = true
		}
		n, err := c.node(m[raw], depth+1, cw)
		if err != nil {
			return nil, err
		}
		e.val = n
		switch a {
		case condition, equality, existence, negation:
			mn.anchors = append(mn.anchors, e)
		default:
			if a == global || hasAnchors(m[raw]) {
				front = append(front, e)
			} else {
				back = append(back, e)
			}
		}
		if a == condition || a == existence || a == negation {
			mn.checked = append(mn.checked, e)
		}
	}
	slices.Reverse(front) // Kyverno pushes each to the front of the list
	mn.rest = append(front, back...)
	return mn, nil
}

// hasAnchors reports whether a pattern holds an anchored key at any depth
// (add-if-absent aside).
func hasAnchors(p any) bool {
	switch t := p.(type) {
	case map[string]any:
		for k, v := range t {
			if a, _ := parseKey(k); a != plainKey && a != addIfAbsent {
				return true
			}
			if hasAnchors(v) {
				return true
			}
		}
	case []any:
		for _, v := range t {
			if hasAnchors(v) {
				return true
			}
		}
	}
	return false
}
