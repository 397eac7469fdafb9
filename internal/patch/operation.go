package patch

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modwright/modwright/internal/value"
)

// OpType names a patch operation.
type OpType string

// The supported operations. RFC 6902's move, copy and test are not supported
// by Apply; Test is only carried, in a patch another applies (the API
// server: a test of the resourceVersion read, a mutate of an existing
// object).
const (
	Add     OpType = "add"
	Replace OpType = "replace"
	Remove  OpType = "remove"
	Test    OpType = "test"
)

// Sentinel errors. Errors returned by this package wrap one of them, so
// callers classify failures with errors.Is.
var (
	ErrInvalidPointer = errors.New("invalid JSON pointer")
	ErrPathNotFound   = errors.New("path not found")
	ErrInvalidIndex   = errors.New("invalid array index")
	ErrNotContainer   = errors.New("not an object or array") // traversing through a scalar
	ErrUnsupportedOp  = errors.New("unsupported operation")
)

// Operation is one JSON-patch operation.
type Operation struct {
	Op    OpType  `json:"op"`
	Path  Pointer `json:"path"`            // marshals/unmarshals as the escaped string
	Value any     `json:"value,omitempty"` // add/replace only
}

// hasValue reports whether op carries a value in its JSON form: always for
// add and replace (null included), never for remove.
func hasValue(op OpType, v any) bool {
	switch op {
	case Add, Replace, Test:
		return true
	case Remove:
		return false
	}
	return v != nil
}

// MarshalJSON renders o as {"op":…,"path":…,"value":…}. "value" is present
// for add and replace even when it is null, and never for remove.
func (o Operation) MarshalJSON() ([]byte, error) {
	return o.AppendJSON(nil)
}

// AppendJSON appends o's JSON form (as MarshalJSON renders it) to dst.
func (o *Operation) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"op":`...)
	dst = value.AppendString(dst, string(o.Op))
	dst = append(dst, `,"path":`...)
	dst = o.Path.appendJSON(dst)
	if hasValue(o.Op, o.Value) {
		dst = append(dst, `,"value":`...)
		var err error
		if dst, err = value.AppendJSON(dst, o.Value); err != nil {
			return nil, fmt.Errorf("value of %s %s: %w", o.Op, o.Path.display(), err)
		}
	}
	return append(dst, '}'), nil
}

// AppendPatch appends ops as a JSON patch document (an array) to dst.
func AppendPatch(dst []byte, ops []Operation) ([]byte, error) {
	dst = append(dst, '[')
	for i := range ops {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = ops[i].AppendJSON(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// UnmarshalJSON parses the JSON form of an operation. The op must be add,
// replace or remove (else the error wraps ErrUnsupportedOp), the path a valid
// JSON pointer (else ErrInvalidPointer), and add and replace must carry a
// "value" member. Numbers in the value become json.Number.
func (o *Operation) UnmarshalJSON(data []byte) error {
	var raw struct {
		Op    *string         `json:"op"`
		Path  *string         `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw.Op == nil {
		return errors.New(`patch operation: missing "op"`)
	}
	op := OpType(*raw.Op)
	switch op {
	case Add, Replace, Remove:
	default:
		return fmt.Errorf("patch operation: %w %q", ErrUnsupportedOp, *raw.Op)
	}
	if raw.Path == nil {
		return fmt.Errorf(`patch operation %s: missing "path"`, op)
	}
	path, err := ParsePointer(*raw.Path)
	if err != nil {
		return fmt.Errorf("patch operation %s: %w", op, err)
	}
	var v any
	switch {
	case raw.Value != nil:
		if op == Remove {
			break // ignored, as RFC 6902 ignores unknown members
		}
		if v, err = value.Decode(raw.Value); err != nil {
			return fmt.Errorf("patch operation %s %s: value: %w", op, path.display(), err)
		}
	case op != Remove:
		return fmt.Errorf(`patch operation %s %s: missing "value"`, op, path.display())
	}
	*o = Operation{Op: op, Path: path, Value: v}
	return nil
}

// String renders o for logs and traces: `add /metadata/labels/color "blue"`,
// `remove /spec/x`. The whole document is shown as "".
func (o Operation) String() string {
	s := string(o.Op) + " " + o.Path.display()
	if !hasValue(o.Op, o.Value) {
		return s
	}
	b, err := value.Encode(o.Value)
	if err != nil {
		return s + " " + fmt.Sprintf("%v", o.Value)
	}
	return s + " " + string(b)
}

// OpError describes a failed operation. errors.Is(err, ErrPathNotFound) and
// the like work through it.
type OpError struct {
	Op     OpType
	Path   Pointer
	Err    error  // one of the sentinel errors
	Detail string // what exactly went wrong and where; may be empty
}

// Error renders e as `replace /spec/x: path not found: member "x" does not
// exist`.
func (e *OpError) Error() string {
	msg := "failed"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	s := string(e.Op) + " " + e.Path.display() + ": " + msg
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel error.
func (e *OpError) Unwrap() error { return e.Err }
