package webhook

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/patch"
)

// Bounds of the JSON patch the dragnet returns. A patch beyond them would
// make the API server fail the request anyway, with a message naming
// neither the rule nor the limit ("received undecodable patch in webhook
// response"), after carrying megabytes through the webhook call; the
// dragnet refuses it itself, as a failed evaluation (denied, or admitted
// unchanged under FailOpen), naming the operation and the Patch rules.
const (
	// MaxPatchDepth bounds how deep the patched object may nest: the
	// depth of an operation's path plus that of its value (an object or
	// array counts one level). It is the nesting limit of the decoders
	// the API server runs on the patch and on the patched object
	// (encoding/json's and sigs.k8s.io/json's maxNestingDepth), which
	// also bounds the patch document itself: the value nested in its
	// operation and its array.
	MaxPatchDepth = 10000
	// MaxPatchBytes bounds the encoded patch: 3 MiB, the API server's
	// default --max-request-body-bytes, the largest object a client may
	// send it (etcd stores at most 1.5 MiB). A larger patch cannot make a
	// storable object.
	MaxPatchBytes = 3 << 20
)

// patchBoundError says which bound the patch exceeds, and where.
type patchBoundError struct {
	op    int    // index of the operation
	what  string // e.g. "add /a/b"
	depth int    // depth reached (depth bound), else 0
	size  int    // bytes encoded (size bound), else 0
}

func (e *patchBoundError) Error() string {
	if e.depth > 0 {
		return fmt.Sprintf("operation %d (%s) nests the object or the patch more than %d levels deep (the API server's JSON nesting limit)", e.op, e.what, MaxPatchDepth)
	}
	return fmt.Sprintf("the patch exceeds %d bytes (the API server's request size limit) at operation %d (%s)", MaxPatchBytes, e.op, e.what)
}

// appendBoundedPatch encodes ops as a JSON patch document, as
// patch.AppendPatch does, and checks each operation against MaxPatchDepth
// and the whole against MaxPatchBytes, stopping at the first one exceeded.
func appendBoundedPatch(dst []byte, ops []patch.Operation) ([]byte, *patchBoundError, error) {
	start := len(dst)
	dst = append(dst, '[')
	for i := range ops {
		if i > 0 {
			dst = append(dst, ',')
		}
		opStart := len(dst)
		var err error
		if dst, err = ops[i].AppendJSON(dst); err != nil {
			return nil, nil, err
		}
		// The operation object nests at depth 2 of the patch; its value at
		// 3 and below, which is the value's own depth plus 2. A scalar's
		// operation is not scanned for it (its text can be long: the
		// last-applied configuration).
		nesting := 2
		if !scalar(ops[i].Value) {
			nesting = 1 + jsonDepth(dst[opStart:])
		}
		valueDepth := nesting - 2
		if nesting > MaxPatchDepth || len(ops[i].Path)+valueDepth > MaxPatchDepth {
			return nil, &patchBoundError{op: i, what: describeOp(ops[i]), depth: max(nesting, len(ops[i].Path)+valueDepth)}, nil
		}
		if len(dst)-start+1 > MaxPatchBytes {
			return nil, &patchBoundError{op: i, what: describeOp(ops[i]), size: len(dst) - start + 1}, nil
		}
	}
	return append(dst, ']'), nil, nil
}

// scalar reports whether v encodes as a JSON scalar (or is absent).
func scalar(v any) bool {
	switch v.(type) {
	case nil, string, bool, json.Number, float64, int, int64:
		return true
	}
	return false
}

// jsonDepth is the deepest nesting of arrays and objects in the JSON text b
// (0 for a scalar), which must be valid.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > deepest {
				deepest = depth
			}
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// describeOp names an operation for a message, its path shortened.
func describeOp(op patch.Operation) string {
	return truncate(string(op.Op)+" "+op.Path.String(), 120)
}

// patchRules lists the Patch rules that applied.
func patchRules(dec *engine.Decision) string {
	keys := make([]string, len(dec.Applied))
	for i, r := range dec.Applied {
		keys[i] = r.Key
	}
	return strings.Join(keys, ", ")
}
