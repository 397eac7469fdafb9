package cel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	mappatch "k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/quantity"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/value"
)

// MutationKind is the kind of a mutation expression, as a
// MutatingAdmissionPolicy's patchType.
type MutationKind uint8

const (
	// JSONPatch: the expression evaluates to list(JSONPatch), an RFC 6902
	// patch.
	JSONPatch MutationKind = iota + 1
	// ApplyConfiguration: the expression evaluates to an Object{...},
	// merged into the object as server-side apply merges.
	ApplyConfiguration
)

func (k MutationKind) String() string {
	switch k {
	case JSONPatch:
		return "JSONPatch"
	case ApplyConfiguration:
		return "ApplyConfiguration"
	}
	return fmt.Sprintf("MutationKind(%d)", uint8(k))
}

// The types a mutation expression must evaluate to, as the apiserver's
// JSONPatchCondition and ApplyConfigurationCondition declare them.
var (
	jsonPatchResult = cel.ListType(types.NewObjectType(mutation.JSONPatchTypeName))
	// jsonPatchWhole is the same type, asked of an expression that is
	// not to be taken apart (patchplan.go): tests compare the two.
	jsonPatchWhole    = cel.ListType(types.NewObjectType(mutation.JSONPatchTypeName))
	applyConfigResult = types.NewObjectType(mutation.ObjectTypeName)
)

// Mutation is a compiled mutation expression; it is immutable and safe for
// concurrent use.
type Mutation struct {
	kind MutationKind
	prg  *Program
	// converter is the type converter of built-in kinds (ApplyConfiguration).
	converter managedfields.TypeConverter
	// types is what JSONPatch's fast path knows of the built-in kinds' Go
	// types (the EnvCache's, shared by a kind's rules).
	types *goTypes
}

// CompileMutation compiles a mutation expression of kind against env (the
// environment of CompileExpr with the apiserver's mutation types:
// JSONPatch, Object and Object.<field path>, resolved by its
// DynamicTypeResolver). The expression must have exactly the type the
// apiserver requires (list(JSONPatch), Object): a dynamic result is
// refused, as the apiserver refuses it.
func (l Language) CompileMutation(env *lang.Env, kind MutationKind, src string) (*Mutation, []lang.Diagnostic) {
	return l.compileMutation(env, kind, src, false)
}

// compileMutation is CompileMutation; whole keeps a JSONPatch expression
// whole (not taken apart), for tests.
func (l Language) compileMutation(env *lang.Env, kind MutationKind, src string, whole bool) (*Mutation, []lang.Diagnostic) {
	var want *cel.Type
	switch kind {
	case JSONPatch:
		want = jsonPatchResult
		if whole {
			want = jsonPatchWhole
		}
	case ApplyConfiguration:
		want = applyConfigResult
	default:
		return nil, []lang.Diagnostic{{Pos: -1, Msg: fmt.Sprintf("unknown mutation kind %d", uint8(kind))}}
	}
	name, opts, vars := l.extras()
	// Macro calls are kept so that a patch's computed fields can be
	// written out again (patchplan.go).
	extraName, extra := "mutation"+name, append([]cel.EnvOption{common.ResolverEnvOption(&mutation.DynamicTypeResolver{}), cel.EnableMacroCallTracking()}, opts...)
	p, ds := compileCEL(l.Envs, env, src, extraName, extra, vars, want, typedVars{})
	if ds != nil {
		return nil, ds
	}
	m := &Mutation{kind: kind, prg: p, types: l.Envs.goTypes()}
	if kind == ApplyConfiguration {
		m.converter = applyconfigurations.NewTypeConverter(scheme.Scheme)
	}
	return m, nil
}

// Kind returns the mutation's kind.
func (m *Mutation) Kind() MutationKind { return m.kind }

// ReadsAny reports whether the mutation's expression refers to one of
// names.
func (m *Mutation) ReadsAny(names ...string) bool { return m.prg.ReadsAny(names...) }

// Source returns the expression's text.
func (m *Mutation) Source() string { return m.prg.src }

// Cost returns the expression's estimated cost (see Program.Cost).
func (m *Mutation) Cost() (min, max uint64) { return m.prg.Cost() }

// LargeCost is Program.LargeCost for the mutation's expression.
func (m *Mutation) LargeCost() uint64 { return m.prg.LargeCost() }

// Apply evaluates the expression over in and applies its result to obj as
// MutatingAdmissionPolicy applies it; obj is never modified. It returns
// the new object (json.Number numbers), the evaluation's runtime cost and
// an error; when a JSONPatch's test operation fails, the patch is not
// applied and obj itself is returned, without an error, as the apiserver
// does (obj itself too for an empty patch). See the package doc for the
// semantics.
func (m *Mutation) Apply(ctx context.Context, in *lang.Activation, obj map[string]any) (map[string]any, uint64, error) {
	if m.kind == JSONPatch {
		jp, cost, err := m.gather(ctx, in, nil)
		if err != nil {
			return nil, cost, err
		}
		res, err := jp.apply(obj, true, nil, m.types)
		if err != nil {
			return nil, cost, fmt.Errorf("cel: %w", err)
		}
		return res, cost, nil
	}
	out, cost, err := m.prg.eval(ctx, in)
	if err != nil {
		return nil, cost, err
	}
	if err := ctx.Err(); err != nil {
		return nil, cost, fmt.Errorf("cel: %w", err)
	}
	res, err := m.applyConfiguration(out, obj)
	if err != nil {
		return nil, cost, fmt.Errorf("cel: %w", err)
	}
	return res, cost, nil
}

// gather evaluates a JSONPatch mutation's expression over in and reads its
// operations, into st's storage when st is not nil: through its plan when
// it has one (patchplan.go).
func (m *Mutation) gather(ctx context.Context, in *lang.Activation, st *PatchStorage) (jsonPatch, uint64, error) {
	if m.prg.patch != nil {
		return m.prg.patch.gather(ctx, in, st)
	}
	out, cost, err := m.prg.eval(ctx, in)
	if err != nil {
		return jsonPatch{}, cost, err
	}
	if err := ctx.Err(); err != nil {
		return jsonPatch{}, cost, fmt.Errorf("cel: %w", err)
	}
	jp, err := gatherJSONPatch(out)
	if err != nil {
		return jsonPatch{}, cost, fmt.Errorf("cel: %w", err)
	}
	return jp, cost, nil
}

// applyJSONPatchWith applies out, a list(JSONPatch), to obj as the
// apiserver's jsonPatcher does (the operations built as it builds them and
// applied by the same JSON Patch library; the result of a built-in kind
// decoding strictly into its Go type), with the fast path (fastpatch.go)
// or without it (tests compare the two); fast, when not nil, is set when
// the fast path gave the result.
func applyJSONPatchWith(out ref.Val, obj map[string]any, fastAllowed bool, fast *bool, gt *goTypes) (map[string]any, error) {
	jp, err := gatherJSONPatch(out)
	if err != nil {
		return nil, err
	}
	return jp.apply(obj, fastAllowed, fast, gt)
}

// jsonPatch is a JSONPatch mutation's operations, gathered once from its
// expression's result: as the apiserver reads them (natives), and for the
// fast path (fastOps, when it can take them: fastOK).
type jsonPatch struct {
	natives []patchOp
	fastOps []patch.Operation
	fastOK  bool
	// memos are fastOps' typeMemos, when the expression was taken apart
	// (nil for an operation whose op or path is computed).
	memos []*typeMemo
}

// gatherJSONPatch reads an expression's result as JSONPatches, with the
// apiserver's errors.
func gatherJSONPatch(out ref.Val) (jsonPatch, error) {
	jp := jsonPatch{fastOK: true}
	iter, ok := out.(traits.Lister)
	if !ok {
		return jp, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	for it := iter.Iterator(); it.HasNext() == types.True; {
		native, err := it.Next().ConvertToNative(reflect.TypeOf(&mutation.JSONPatchVal{}))
		if err != nil {
			return jp, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: %w", err)
		}
		op, ok := native.(*mutation.JSONPatchVal)
		if !ok {
			return jp, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %T", native)
		}
		if err := jp.addOp(op.Op, op.Path, op.From, op.Val, nil); err != nil {
			return jp, err
		}
	}
	return jp, nil
}

// addOp adds one JSONPatch to jp as the apiserver reads it: its op, path
// and from, and its value (nil when it has none); pre, when given, holds
// the fast path's operation for that op and path, parsed once.
func (jp *jsonPatch) addOp(opName, path, from string, val ref.Val, pre *planOp) error {
	n := patchOp{op: opName, path: path, from: from}
	if val != nil {
		if ov, ok := val.(*dynamic.ObjectVal); ok {
			if err := ov.CheckTypeNamesMatchFieldPathNames(); err != nil {
				return fmt.Errorf("type mismatch: %w", err)
			}
		}
		var err error
		if n.val, err = toJSON(val); err != nil {
			return fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
		}
		n.hasVal = true
	}
	if jp.fastOK {
		var fo patch.Operation
		var ok bool
		if pre != nil {
			if fo, ok = pre.fast, pre.fastOK; ok {
				fo.Value = n.val
			}
		} else {
			fo, ok = fastOp(opName, path, n.val)
		}
		if !n.hasVal {
			ok = ok && fo.Op == patch.Remove // a test without a value: the apiserver's way
		}
		jp.fastOps, jp.fastOK = append(jp.fastOps, fo), ok
	}
	jp.natives = append(jp.natives, n)
	return nil
}

// apply applies the operations to obj: on the fast path when it takes
// them (and fastAllowed; *fast, when given, says it did), else the
// apiserver's way.
func (jp *jsonPatch) apply(obj map[string]any, fastAllowed bool, fast *bool, gt *goTypes) (map[string]any, error) {
	natives, fastOps, fastOK := jp.natives, jp.fastOps, jp.fastOK
	if len(natives) == 0 {
		return obj, nil
	}
	gvk := (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
	builtin := gvk.Kind != "" && scheme.Scheme.Recognizes(gvk)
	if fastOK && fastAllowed {
		if res, ok := applyFast(fastOps, obj, gvk, builtin, gt); ok {
			if fast != nil {
				*fast = true
			}
			return res, nil
		}
	}
	// The apiserver's way: its operations, as its jsonPatcher builds them.
	ops := make(jsonpatch.Patch, 0, len(natives))
	for _, n := range natives {
		o, err := n.operation()
		if err != nil {
			return nil, err
		}
		ops = append(ops, o)
	}
	doc, err := value.AppendJSON(nil, obj)
	if err != nil {
		return nil, fmt.Errorf("failed to create JSON patch: %w", err)
	}
	// A built-in kind is patched as the apiserver patches it: as its Go
	// type serializes it (empty structs present, quantities canonical).
	// Operations that only add, replace and remove give the same result on
	// obj's own text when they succeed on it: that is tried first.
	var norm any
	var patched []byte
	if builtin && onlyEdits(ops) {
		if patched, err = patch.ApplyJSONPatchV4(ops, doc); err != nil {
			patched = nil
		}
	}
	if builtin && patched == nil {
		if err := quantity.CheckTree(obj); err != nil {
			return nil, fmt.Errorf("failed to create JSON patch: %w", err)
		}
		if doc, norm, err = normalize(doc, gvk); err != nil {
			return nil, fmt.Errorf("failed to create JSON patch: %w", err)
		}
	}
	if patched == nil {
		patched, err = patch.ApplyJSONPatchV4(ops, doc)
	}
	if err != nil {
		if errors.Is(err, jsonpatch.ErrTestFailed) {
			return obj, nil
		}
		if errors.Is(err, patch.ErrTooLarge) {
			err = lang.Limit(err)
		}
		return nil, fmt.Errorf("JSON Patch: %w", err)
	}
	v, err := value.Decode(patched)
	if err != nil {
		return nil, fmt.Errorf("JSON Patch: %w", err)
	}
	if builtin {
		if err := quantity.CheckTree(v); err != nil {
			return nil, fmt.Errorf("JSON Patch: the patched %s is invalid: %w", gvk.Kind, err)
		}
		if _, err := decodeTyped(patched, gvk, true); err != nil {
			return nil, fmt.Errorf("JSON Patch: the patched %s is invalid: %w", gvk.Kind, err)
		}
	}
	if norm != nil {
		// What the patch did not touch is obj's, not its Go form's.
		v, _ = restore(v, norm, obj, true)
	}
	res, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("JSON Patch: the result is not an object")
	}
	return res, nil
}

// onlyEdits reports whether ops only add, replace and remove.
func onlyEdits(ops jsonpatch.Patch) bool {
	for _, o := range ops {
		switch o.Kind() {
		case "add", "replace", "remove":
		default:
			return false
		}
	}
	return true
}

// patchOp is one JSONPatch of an expression's result, its value as a JSON
// tree (hasVal: it has one, null included).
type patchOp struct {
	op, path, from string
	val            any
	hasVal         bool
}

// operation is the JSON Patch operation the apiserver builds of o.
func (o patchOp) operation() (jsonpatch.Operation, error) {
	op := jsonpatch.Operation{
		"op":   raw(strconv.Quote(o.op)),
		"path": raw(strconv.Quote(o.path)),
	}
	if o.from != "" {
		op["from"] = raw(strconv.Quote(o.from))
	}
	if o.hasVal {
		b, err := value.AppendJSON(nil, o.val)
		if err != nil {
			return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
		}
		op["value"] = raw(string(b))
	}
	return op, nil
}

func raw(s string) *json.RawMessage {
	r := json.RawMessage(s)
	return &r
}

// serializer is the apiserver's JSON serializer of built-in kinds; strict
// refuses unknown fields and duplicates.
func serializer(strict bool) *kjson.Serializer {
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, kjson.SerializerOptions{Strict: strict})
}

// decodeTyped decodes data into a new Go object of the built-in kind gvk;
// strict as the apiserver decodes a patched object (an unknown field or a
// value of the wrong type is an error).
func decodeTyped(data []byte, gvk schema.GroupVersionKind, strict bool) (runtime.Object, error) {
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if !strict {
		// What the serializer does for a registered kind's object, without
		// reading the apiVersion and kind from the text first (gvk is the
		// object's own).
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, typed); err != nil {
			return nil, err
		}
		return typed, nil
	}
	if _, _, err := serializer(strict).Decode(data, nil, typed); err != nil {
		return nil, err
	}
	return typed, nil
}

// normalize returns data, an object of the built-in kind gvk, as its Go
// type serializes it, and that text's tree.
func normalize(data []byte, gvk schema.GroupVersionKind) ([]byte, any, error) {
	typed, err := decodeTyped(data, gvk, false)
	if err != nil {
		return nil, nil, err
	}
	out, err := json.Marshal(typed) // the serializer's encoding, without its newline
	if err != nil {
		return nil, nil, err
	}
	tree, err := value.Decode(out)
	if err != nil {
		return nil, nil, err
	}
	return out, tree, nil
}

// restore returns res, a patched tree, with the parts equal to norm (the
// tree that was patched) taken from orig (the tree norm normalized): a
// part the patch did not change keeps its original form, or stays absent
// (present is false) when norm added it; a member norm dropped stays. An element of a list is matched
// by its index, else by an equal element of norm.
func restore(res, norm, orig any, origOK bool) (v any, present bool) {
	if reflect.DeepEqual(res, norm) {
		return orig, origOK
	}
	switch r := res.(type) {
	case map[string]any:
		nm, ok1 := norm.(map[string]any)
		om, ok2 := orig.(map[string]any)
		if !ok1 || !ok2 {
			return res, true
		}
		out := make(map[string]any, len(r))
		for k, e := range r {
			n, nok := nm[k]
			if !nok {
				out[k] = e
				continue
			}
			o, ook := om[k]
			if e, ok := restore(e, n, o, ook); ok {
				out[k] = e
			}
		}
		// What the normalization dropped (an empty list, a null) and the
		// patch did not add stays.
		for k, o := range om {
			_, inNorm := nm[k]
			if _, inRes := r[k]; !inNorm && !inRes {
				out[k] = o
			}
		}
		return out, true
	case []any:
		nl, ok1 := norm.([]any)
		ol, ok2 := orig.([]any)
		if !ok1 || !ok2 || len(nl) != len(ol) {
			return res, true
		}
		out := make([]any, len(r))
		for i, e := range r {
			out[i] = e
			j := i
			if j >= len(nl) || !reflect.DeepEqual(e, nl[j]) {
				j = slices.IndexFunc(nl, func(n any) bool { return reflect.DeepEqual(e, n) })
			}
			if j < 0 && i < len(nl) {
				j = i
			}
			if j >= 0 {
				out[i], _ = restore(e, nl[j], ol[j], true)
			}
		}
		return out, true
	}
	return res, true
}

// applyConfiguration merges out, an Object{...}, into obj as the
// apiserver's applyConfigPatcher does (ApplyStructuredMergeDiff): with the
// schema of a built-in kind, else with the deduced type (maps merged,
// lists atomic), as the apiserver types a kind it has no schema for.
func (m *Mutation) applyConfiguration(out ref.Val, obj map[string]any) (map[string]any, error) {
	ov, ok := out.(*dynamic.ObjectVal)
	if !ok {
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", out.Type())
	}
	if err := ov.CheckTypeNamesMatchFieldPathNames(); err != nil {
		return nil, fmt.Errorf("type mismatch: %w", err)
	}
	pv, err := nativeJSON(ov.Value())
	if err != nil {
		return nil, fmt.Errorf("invalid return type: %w", err)
	}
	pu, err := toUnstructured(pv, true)
	if err != nil {
		return nil, err
	}
	ou, err := toUnstructured(obj, false)
	if err != nil {
		return nil, err
	}
	orig := &unstructured.Unstructured{Object: ou.(map[string]any)}
	p := &unstructured.Unstructured{Object: pu.(map[string]any)}
	p.SetGroupVersionKind(orig.GroupVersionKind())
	tc := m.converter
	stub := &unstructured.Unstructured{}
	stub.SetGroupVersionKind(orig.GroupVersionKind())
	if _, err := tc.ObjectToTyped(stub); err != nil {
		tc = managedfields.NewDeducedTypeConverter()
	}
	res, err := mappatch.ApplyStructuredMergeDiff(tc, orig, p)
	if err != nil {
		return nil, err
	}
	u, ok := res.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("error applying patch: unexpected result %T", res)
	}
	return fromUnstructured(u.Object, obj).(map[string]any), nil
}

// nativeJSON converts a Go value a CEL value's Value gave (the apiserver's
// Object values hold such natives: int64, float64, maps of ref.Val, ...)
// to a JSON tree.
func nativeJSON(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string, json.Number:
		return v, nil
	case structpb.NullValue:
		return nil, nil
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case int:
		return json.Number(strconv.Itoa(v)), nil
	case uint64:
		return json.Number(strconv.FormatUint(v, 10)), nil
	case float64:
		return toJSON(types.Double(v))
	case []byte:
		return base64.StdEncoding.EncodeToString(v), nil
	case time.Duration:
		return toJSON(types.Duration{Duration: v})
	case time.Time:
		return toJSON(types.Timestamp{Time: v})
	case ref.Val:
		if ov, ok := v.(*dynamic.ObjectVal); ok {
			return nativeJSON(ov.Value())
		}
		return toJSON(v)
	case error:
		return nil, v
	case []any:
		return nativeList(v)
	case []ref.Val:
		return nativeList(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := nativeJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[ref.Val]ref.Val:
		out := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is of type %s, not string", k, k.Type().TypeName())
			}
			c, err := nativeJSON(e)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("value of type %T has no JSON form", v)
}

// nativeList converts the elements of l with nativeJSON.
func nativeList[T any](l []T) ([]any, error) {
	out := make([]any, len(l))
	for i, e := range l {
		c, err := nativeJSON(e)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// toUnstructured converts a JSON tree to unstructured content (the types
// the apimachinery's JSON decoding gives): an integer's text to int64, other
// numbers to float64 (an integer out of int64's range too, as the
// apimachinery decodes it). dropNull drops the members whose value is null
// (an apply configuration's, which CEL sees as absent).
func toUnstructured(v any, dropNull bool) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !isRangeError(err) {
			return nil, fmt.Errorf("invalid number %q", string(v))
		}
		return f, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if e == nil && dropNull {
				continue
			}
			c, err := toUnstructured(e, dropNull)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := toUnstructured(e, dropNull)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// fromUnstructured converts unstructured content back to a JSON tree with
// json.Number numbers; a number equal to the one at the same place in
// orig keeps orig's text (so that an unchanged 1e3 stays 1e3).
func fromUnstructured(v, orig any) any {
	switch v := v.(type) {
	case int64:
		if o, ok := orig.(json.Number); ok {
			if i, err := strconv.ParseInt(string(o), 10, 64); err == nil && i == v {
				return o
			}
			if f, err := strconv.ParseFloat(string(o), 64); err == nil && f == float64(v) && float64(v) < 1<<53 && float64(v) > -(1<<53) {
				return o
			}
		}
		return json.Number(strconv.FormatInt(v, 10))
	case float64:
		if o, ok := orig.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(o), 64); (err == nil || isRangeError(err)) && f == v {
				return o
			}
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
	case map[string]any:
		om, _ := orig.(map[string]any)
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = fromUnstructured(e, om[k])
		}
		return out
	case []any:
		ol, _ := orig.([]any)
		out := make([]any, len(v))
		for i, e := range v {
			var o any
			if i < len(ol) {
				o = ol[i]
			}
			out[i] = fromUnstructured(e, o)
		}
		return out
	}
	return v
}

// GoForm is obj, an object of a built-in kind, as its Go type serializes
// it (empty structs present, quantities canonical): what the API server's
// admission sees. ok is false for a kind that is not built in.
func GoForm(obj map[string]any) (form map[string]any, ok bool, err error) {
	gvk := (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
	if gvk.Kind == "" || !scheme.Scheme.Recognizes(gvk) {
		return nil, false, nil
	}
	doc, err := value.AppendJSON(nil, obj)
	if err != nil {
		return nil, false, err
	}
	_, tree, err := normalize(doc, gvk)
	if err != nil {
		return nil, false, err
	}
	form, ok = tree.(map[string]any)
	return form, ok, nil
}

// Restore is res, what became of form (GoForm's of orig), with the parts
// equal to form's taken from orig: what did not change keeps its original
// form (restore).
func Restore(res, form, orig map[string]any) map[string]any {
	v, _ := restore(res, form, orig, true)
	m, _ := v.(map[string]any)
	return m
}
