package patch

import (
	"errors"
	"fmt"
	"strconv"

	jsonpatchv4 "gopkg.in/evanphx/json-patch.v4"

	"github.com/modwright/modwright/internal/value"
)

// ApplyV4 applies JSON-patch operations (a decoded JSON list) to obj as
// gopkg.in/evanphx/json-patch.v4 does, the library kinitiras applies its
// policies' patches with (its replace of a missing object member adds
// it; a missing parent fails): on a copy-on-write Doc over obj, without
// encoding it, when v4 would apply every operation alike, else with v4
// itself. obj is not modified; the result shares what the operations did
// not touch.
func ApplyV4(ops []any, obj any) (any, error) {
	if len(ops) == 0 {
		return obj, nil
	}
	if next, ok, err := fastV4(ops, obj); ok {
		return next, err
	}
	return applyV4(ops, obj)
}

// applyV4 applies a program's patches as kinitiras does, with
// gopkg.in/evanphx/json-v4 (whose replace of a missing object member
// adds it).
func applyV4(ops []any, obj any) (any, error) {
	b, err := value.Encode(ops)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatchv4.DecodePatch(b)
	if err != nil {
		return nil, fmt.Errorf("patches: %w", err)
	}
	out, err := ApplyJSONPatchV4(p, mustEncode(obj))
	if err != nil {
		return nil, fmt.Errorf("patches: %w", err)
	}
	return value.Decode(out)
}

// fastV4 applies add, replace and remove operations to a
// copy-on-write document over obj, without encoding it, when json-patch v4
// (kinitiras') would apply them the same way; ok is false otherwise (the
// caller applies the list with v4).
func fastV4(ops []any, obj any) (any, bool, error) {
	list := make([]Operation, 0, len(ops))
	for _, o := range ops {
		m, _ := o.(map[string]any)
		op, _ := m["op"].(string)
		path, _ := m["path"].(string)
		switch OpType(op) {
		case Add, Replace, Remove:
		default:
			return nil, false, nil
		}
		ptr, err := ParsePointer(path)
		if err != nil {
			return nil, false, nil
		}
		list = append(list, Operation{Op: OpType(op), Path: ptr, Value: m["value"]})
	}
	d := NewDoc(obj)
	for _, op := range list {
		// The Doc is lenient where v4 fails (a missing parent, a missing
		// target of remove): only an operation v4 applies alike takes this
		// way; otherwise the list is applied with v4, which fails as
		// kinitiras' does.
		if !strictV4(d.Root(), op) {
			return nil, false, nil
		}
		if err := d.Apply(op); err != nil {
			return nil, false, nil
		}
	}
	return d.Root(), true, nil
}

// strictV4 reports whether json-patch v4 applies op to root as the Doc
// does: the parent exists (an object, or an array with the index in range
// or "-" for add); the target of a remove exists, a replace's too unless
// it is an object member (v4 adds it); no negative index.
func strictV4(root any, op Operation) bool {
	if len(op.Path) == 0 {
		return false
	}
	cur := root
	last := len(op.Path) - 1
	for i, tok := range op.Path {
		final := i == last
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if final {
				return ok || op.Op != Remove
			}
			if !ok {
				return false
			}
			cur = v
		case []any:
			if tok == "-" {
				return final && op.Op == Add
			}
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || strconv.Itoa(n) != tok {
				return false
			}
			if final {
				if op.Op == Add {
					return n <= len(c)
				}
				return n < len(c)
			}
			if n >= len(c) {
				return false
			}
			cur = c[n]
		default:
			return false
		}
	}
	return false
}

func mustEncode(v any) []byte {
	b, _ := value.Encode(v)
	return b
}

// MaxCopyBytes bounds how much the copy operations of one patch may add
// to a document, in bytes of its JSON text: a copy into its own subtree
// doubles the document, and forty of them exhaust any memory. Every JSON
// Patch application with copies is bounded by it (ApplyJSONPatchV4 for
// json-patch v4, the option AccumulatedCopySizeLimit for v5).
const MaxCopyBytes = 1 << 20

// ErrPanic is in the chain of the error of a JSON patch whose
// application panicked in json-patch v4.
var ErrPanic = errors.New("patch: json-patch panicked")

// ErrTooLarge is the error of a patch whose copies grow the document
// beyond MaxCopyBytes.
var ErrTooLarge = errors.New("patch: copy operations grow the document beyond the bound")

// ApplyJSONPatchV4 is p.Apply(doc) of gopkg.in/evanphx/json-patch.v4
// with the document's growth bounded by MaxCopyBytes: a patch holding a
// copy is applied one operation at a time (as v4 applies it: in order,
// the first failure failing the whole), and the document's size checked
// after each, so that no copy runs on a document already past the bound.
// v4's own limit is a package variable, which this package does not set.
//
// v4 panics on some operations (a test of the root without a value): a
// panic is returned as an error wrapping ErrPanic.
func ApplyJSONPatchV4(p jsonpatchv4.Patch, doc []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v", ErrPanic, r)
		}
	}()
	copies := false
	for _, op := range p {
		copies = copies || op.Kind() == "copy"
	}
	if !copies {
		return p.Apply(doc)
	}
	limit := len(doc) + MaxCopyBytes
	for i := range p {
		out, err := p[i : i+1].Apply(doc)
		if err != nil {
			return nil, err
		}
		if len(out) > limit {
			return nil, fmt.Errorf("%w: operation %d makes it %d bytes, more than %d above the original", ErrTooLarge, i, len(out), MaxCopyBytes)
		}
		doc = out
	}
	return doc, nil
}
