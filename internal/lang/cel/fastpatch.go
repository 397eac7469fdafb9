package cel

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/value"
)

// The fast path of a JSONPatch mutation. The apiserver's way (applyJSONPatch)
// encodes the object, applies the patch with json-patch v4 on its text, and
// for a built-in kind decodes the result strictly into the Go type: about
// 300 µs on a 3 KB Deployment. When every operation is an add, a replace or
// a remove that RFC 6902 applies to the decoded object as it is, json-patch
// v4 gives the same result (it differs only where RFC 6902 fails: a
// replace of a missing member), so the patch is applied to the tree
// (patch.ApplyRFC6902, copy-on-write); and for a built-in kind each value
// written is decoded strictly into the Go type of the field it lands in,
// which is what the whole object's strict decode checks of the parts the
// patch changed. Anything else (another operation, a failure, a path the Go
// type does not know, a custom-decoded type on the way) takes the
// apiserver's way, which also gives its exact errors.

// fastOp turns one JSONPatch into a patch.Operation for the fast path;
// ok is false when the operation is not an add, replace or remove, or its
// path is not a JSON pointer.
func fastOp(op, path string, val any) (patch.Operation, bool) {
	var o patch.Operation
	switch op {
	case "add":
		o.Op = patch.Add
	case "replace":
		o.Op = patch.Replace
	case "remove":
		o.Op = patch.Remove
	case "test":
		o.Op = opTest
	default:
		return o, false
	}
	p, err := patch.ParsePointer(path)
	if err != nil || len(p) == 0 {
		return o, false
	}
	o.Path, o.Value = p, val
	return o, true
}

// opTest marks a test operation among the fast path's operations (package
// patch applies none).
const opTest patch.OpType = "test"

// applyFast applies ops to obj on the fast path; ok is false when the
// apiserver's way must decide. A test passes on the fast path only when
// the value is there and equal, and (for a built-in kind) the field is of
// a plain type, whose Go form is its JSON: a test that fails is the
// apiserver's way's to decide (the patch is then not applied).
func applyFast(ops []patch.Operation, obj map[string]any, gvk schema.GroupVersionKind, builtin bool, types *goTypes) (map[string]any, bool) {
	var goType reflect.Type
	if builtin {
		t, ok := scheme.Scheme.AllKnownTypes()[gvk]
		if !ok {
			return nil, false
		}
		goType = t
	}
	cur := any(obj)
	for start := 0; start < len(ops); {
		if ops[start].Op == opTest {
			if !testHolds(cur, ops[start], nil, goType, types) {
				return nil, false
			}
			start++
			continue
		}
		end := start
		for end < len(ops) && ops[end].Op != opTest {
			end++
		}
		out, err := patch.ApplyRFC6902(cur, ops[start:end])
		if err != nil {
			return nil, false
		}
		cur, start = out, end
	}
	res, ok := cur.(map[string]any)
	if !ok {
		return nil, false
	}
	if builtin && !fitTypes(ops, nil, goType, types) {
		return nil, false
	}
	return res, true
}

// fitTypes reports whether each edit of ops (tests aside) fits the Go type
// t of a built-in kind: the path of a remove is one t has, the value of an
// add or a replace decodes strictly into its field's type. memos, when
// given, holds each operation's memo (typeMemo).
func fitTypes(ops []patch.Operation, memos []*typeMemo, t reflect.Type, types *goTypes) bool {
	for i, op := range ops {
		var memo *typeMemo
		if memos != nil {
			memo = memos[i]
		}
		switch {
		case op.Op == opTest:
		case op.Op == patch.Remove:
			if _, ok := memo.typeAt(types, t, op.Path); !ok {
				return false
			}
		case !fitsType(t, op.Path, memo, op.Value, types):
			return false
		}
	}
	return true
}

// typeMemo remembers typeAt's answer for an operation whose path is the
// same at every evaluation (a literal of a JSONPatch taken apart,
// patchplan.go), for the Go type last asked: the walk, a lookup per
// segment, was a twentieth of a matching Policy's evaluation. A nil
// *typeMemo remembers nothing. It is safe for concurrent use.
type typeMemo struct{ last atomic.Pointer[typeAnswer] }

type typeAnswer struct {
	t, ft reflect.Type
	ok    bool
}

// typeAt is types.typeAt(t, path), remembered.
func (m *typeMemo) typeAt(types *goTypes, t reflect.Type, path patch.Pointer) (reflect.Type, bool) {
	if m == nil {
		return types.typeAt(t, path)
	}
	if a := m.last.Load(); a != nil && a.t == t {
		return a.ft, a.ok
	}
	ft, ok := types.typeAt(t, path)
	m.last.Store(&typeAnswer{t: t, ft: ft, ok: ok})
	return ft, ok
}

// Patched is a JSONPatch mutation's result, evaluated and not yet
// applied (Mutation.EvalJSONPatch): a caller holding the object in a
// journaled document applies its Edits there, and only when they do not
// apply calls Apply.
type Patched struct {
	jp    jsonPatch
	obj   map[string]any
	types *goTypes
}

// PatchStorage is storage for the operations of EvalJSONPatch's results
// that a caller keeps from one to the next (Patched.Recycle), instead of
// their being allocated for each. The zero value is ready to use.
type PatchStorage struct {
	natives []patchOp
	fastOps []patch.Operation
}

// patchStorageKept bounds the operations a PatchStorage keeps the storage
// of (a patch built over an object's list can have thousands).
const patchStorageKept = 256

// EvalJSONPatch evaluates a JSONPatch mutation over in, for obj, without
// applying it (Apply applies it as Mutation.Apply does). The operations
// are gathered into st's storage when st is not nil (see Recycle).
func (m *Mutation) EvalJSONPatch(ctx context.Context, in *lang.Activation, obj map[string]any, st *PatchStorage) (Patched, uint64, error) {
	if m.kind != JSONPatch {
		return Patched{}, 0, fmt.Errorf("cel: EvalJSONPatch of a %s mutation", m.kind)
	}
	jp, cost, err := m.gather(ctx, in, st)
	if err != nil {
		return Patched{}, cost, err
	}
	return Patched{jp: jp, obj: obj, types: m.types}, cost, nil
}

// Recycle gives p's storage to st, for the next EvalJSONPatch: p, and the
// operations its Edits returned, must not be used after. What Apply
// returned and the errors are the caller's still (the operations' values
// are not cleared, only the storage's references to them).
func (p *Patched) Recycle(st *PatchStorage) {
	n, f := p.jp.natives, p.jp.fastOps
	*p = Patched{}
	if cap(n) > patchStorageKept || cap(f) > patchStorageKept {
		return
	}
	clear(n[:cap(n)])
	clear(f[:cap(f)])
	st.natives, st.fastOps = n[:0], f[:0]
}

// Edits are the patch's operations when the fast path takes them as they
// are, before they are applied: tests first, each holding on the object
// (dropped from ops), then adds, replaces and removes with JSON pointers
// (no other operation), for a built-in kind each fitting its field's Go
// type. Applied to the object in order with RFC 6902's semantics
// (patch.Doc's strict mode) they give what Apply gives; where one does not
// apply, Apply decides (the apiserver's way, with its errors). ok is false
// when Apply must decide.
func (p *Patched) Edits() (ops []patch.Operation, ok bool) {
	jp := &p.jp
	if !jp.fastOK || len(jp.natives) == 0 {
		return nil, false
	}
	var t reflect.Type
	if gvk := (&unstructured.Unstructured{Object: p.obj}).GroupVersionKind(); gvk.Kind != "" && scheme.Scheme.Recognizes(gvk) {
		if t, ok = scheme.Scheme.AllKnownTypes()[gvk]; !ok {
			return nil, false
		}
	}
	ops, memos := jp.fastOps, jp.memos
	for len(ops) > 0 && ops[0].Op == opTest {
		var memo *typeMemo
		if memos != nil {
			memo, memos = memos[0], memos[1:]
		}
		if !testHolds(p.obj, ops[0], memo, t, p.types) {
			return nil, false
		}
		ops = ops[1:]
	}
	if slices.ContainsFunc(ops, func(op patch.Operation) bool { return op.Op == opTest }) {
		if ops, memos, ok = p.testsAmongEdits(ops, memos, t); !ok {
			return nil, false
		}
	}
	if t != nil && !fitTypes(ops, memos, t, p.types) {
		return nil, false
	}
	return ops, true
}

// testsAmongEdits drops from ops (an edit first) the tests that hold, with
// their memos, and returns the edits; ok is false when Apply must decide. A
// test after edits is of the edited object: the object itself where every
// edit before it is apart from its path. Each test is compared with every
// edit before it: past maxEditsBeforeTest edits (a patch built over the
// object's lists can have thousands) Apply decides, in time linear in the
// operations.
func (p *Patched) testsAmongEdits(ops []patch.Operation, memos []*typeMemo, t reflect.Type) (edits []patch.Operation, editMemos []*typeMemo, ok bool) {
	if len(ops) > maxEditsBeforeTest {
		return nil, nil, false
	}
	edits = make([]patch.Operation, 0, len(ops))
	if memos != nil {
		editMemos = make([]*typeMemo, 0, len(ops))
	}
	for i, op := range ops {
		var memo *typeMemo
		if memos != nil {
			memo = memos[i]
		}
		if op.Op != opTest {
			edits = append(edits, op)
			if memos != nil {
				editMemos = append(editMemos, memo)
			}
			continue
		}
		for _, e := range edits {
			if !apart(p.obj, e.Path, op.Path) {
				return nil, nil, false
			}
		}
		if !testHolds(p.obj, op, memo, t, p.types) {
			return nil, nil, false
		}
	}
	return edits, editMemos, true
}

// maxEditsBeforeTest bounds testsAmongEdits' comparisons.
const maxEditsBeforeTest = 32

// apart reports whether an edit at a leaves what is at b in obj as it is:
// neither path is the other's beginning, and where they part obj holds an
// object, whose other members the edit leaves alone (in an array, an edit
// at another index could move b's element).
func apart(obj any, a, b patch.Pointer) bool {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	if k == len(a) || k == len(b) {
		return false
	}
	c, _ := valueAt(obj, a[:k])
	_, isObject := c.(map[string]any)
	return isObject
}

// Apply applies the patch to the object as Mutation.Apply does.
func (p *Patched) Apply() (map[string]any, error) {
	res, err := p.jp.apply(p.obj, true, nil, p.types)
	if err != nil {
		return nil, fmt.Errorf("cel: %w", err)
	}
	return res, nil
}

// fitsType reports whether v, written at path, decodes strictly into the
// Go type of that place in t.
func fitsType(t reflect.Type, path patch.Pointer, memo *typeMemo, v any, types *goTypes) bool {
	ft, ok := memo.typeAt(types, t, path)
	if !ok {
		return false
	}
	if fits, known := fitsScalar(ft, v, types); known {
		return fits
	}
	return decodesStrictly(ft, v)
}

// decodesStrictly reports whether v, as JSON, decodes strictly into a
// value of type ft.
func decodesStrictly(ft reflect.Type, v any) bool {
	b, err := value.AppendJSON(nil, v)
	if err != nil {
		return false
	}
	strict, err := sigsjson.UnmarshalStrict(b, reflect.New(ft).Interface())
	return err == nil && len(strict) == 0
}

// fitsScalar answers fitsType without encoding and decoding for a string,
// a boolean or an integer (int64, or a json.Number of one) written into a plain string, boolean or number
// (through pointers): what the strict JSON decoding would say (a string
// into a string, a boolean into a boolean, an integer into a number it
// does not overflow). known is false for anything else, a type that
// decodes itself (a Quantity, an IntOrString) among it.
func fitsScalar(ft reflect.Type, v any, types *goTypes) (fits, known bool) {
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	k := ft.Kind()
	plain := k == reflect.String || k == reflect.Bool || isNumberKind(k)
	if !plain || ft == jsonNumber || types.info(ft).decodesItself {
		return false, false
	}
	if n, ok := v.(json.Number); ok { // CEL's integers (toJSON)
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return false, false
		}
		v = i
	}
	switch x := v.(type) {
	case string:
		return k == reflect.String, true
	case bool:
		return k == reflect.Bool, true
	case int64:
		switch k {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return !reflect.Zero(ft).OverflowInt(x), true
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			return x >= 0 && !reflect.Zero(ft).OverflowUint(uint64(x)), true
		case reflect.Float32, reflect.Float64:
			return true, true
		}
		return false, true
	}
	return false, false
}

func isNumberKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uintptr || k == reflect.Float32 || k == reflect.Float64
}

var jsonNumber = reflect.TypeFor[json.Number]()

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// typeAt is the Go type at path in t (by the fields' JSON names, list
// indices and map keys); ok is false for a path t does not have, or one
// that goes inside a type that decodes itself (a Quantity, a Time).
func (g *goTypes) typeAt(t reflect.Type, path patch.Pointer) (reflect.Type, bool) {
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		in := g.info(t)
		if in.decodesItself {
			return nil, false
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := in.fields[seg]
			if !ok {
				return nil, false
			}
			t = f
		case reflect.Slice:
			if t.Elem().Kind() == reflect.Uint8 { // []byte: a base64 string
				return nil, false
			}
			if _, err := strconv.Atoi(seg); err != nil && seg != "-" {
				return nil, false
			}
			t = t.Elem()
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return nil, false
			}
			t = t.Elem()
		default:
			return nil, false
		}
	}
	return t, true
}

// testHolds reports whether a test operation holds on doc: the value at
// its path exists and equals the operation's, and for a built-in kind (t
// not nil) the field's Go type is a plain one.
func testHolds(doc any, op patch.Operation, memo *typeMemo, t reflect.Type, types *goTypes) bool {
	if t != nil {
		ft, ok := memo.typeAt(types, t, op.Path)
		if !ok {
			return false
		}
		for ft.Kind() == reflect.Pointer { // *int32 replicas
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64:
			if types.info(ft).decodesItself {
				return false
			}
		default:
			return false
		}
	}
	v, ok := valueAt(doc, op.Path)
	return ok && value.Equal(v, op.Value)
}

// valueAt is the value at path in doc (object members, array indexes);
// false when there is none.
func valueAt(doc any, path patch.Pointer) (any, bool) {
	v := doc
	for _, seg := range path {
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[seg]
			if !ok {
				return nil, false
			}
			v = x
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}
