package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/source"
)

// decided is an evaluator that returns a fixed decision.
type decided struct{ dec *engine.Decision }

func (e decided) Evaluate(context.Context, *engine.Snapshot, engine.Request) (*engine.Decision, error) {
	return e.dec, nil
}

// nested is a value n objects deep: {"x":{"x":...{}}}.
func nested(n int) any {
	v := map[string]any{}
	for range n - 1 {
		v = map[string]any{"x": v}
	}
	return v
}

// TestDragnetBoundsPatch: a patch whose patched object would nest deeper
// than the API server decodes, or that is larger than it accepts, is not
// returned: the review fails (denied, or admitted unchanged under
// FailOpen), naming the operation, the bound and the rules.
func TestDragnetBoundsPatch(t *testing.T) {
	deepPath := make(patch.Pointer, MaxPatchDepth)
	for i := range deepPath {
		deepPath[i] = "x"
	}
	label := patch.Operation{Op: patch.Add, Path: patch.Pointer{"metadata", "labels", "a"}, Value: "b"}
	for _, tc := range []struct {
		name     string
		ops      []patch.Operation
		failOpen bool
		want     string // in the message; "" when the patch is returned
	}{
		{"deep value", []patch.Operation{label, {Op: patch.Add, Path: patch.Pointer{"spec", "deep"}, Value: nested(MaxPatchDepth - 1)}}, false,
			"the patch built by ns1/deep cannot be returned: operation 1 (add /spec/deep) nests the object or the patch more than 10000 levels deep"},
		{"deepest allowed value", []patch.Operation{{Op: patch.Add, Path: patch.Pointer{"spec", "deep"}, Value: nested(MaxPatchDepth - 2)}}, false, ""},
		{"deep value at the root", []patch.Operation{{Op: patch.Replace, Path: patch.Pointer{}, Value: nested(MaxPatchDepth - 1)}}, false, "operation 0 (replace ) nests"},
		{"deep path", []patch.Operation{{Op: patch.Add, Path: deepPath, Value: map[string]any{}}}, false, "operation 0 (add /x/x/x/x"},
		{"deepest allowed path", []patch.Operation{{Op: patch.Add, Path: deepPath, Value: "s"}}, false, ""},
		{"deep path, a scalar", []patch.Operation{{Op: patch.Add, Path: append(deepPath, "y"), Value: json.Number("1")}}, false, "operation 0 (add /x/x/x/x"},
		{"large", []patch.Operation{label, {Op: patch.Add, Path: patch.Pointer{"data", "big"}, Value: strings.Repeat("a", MaxPatchBytes)}}, false,
			"the patch exceeds 3145728 bytes (the API server's request size limit) at operation 1 (add /data/big)"},
		{"large, fail-open", []patch.Operation{{Op: patch.Add, Path: patch.Pointer{"data", "big"}, Value: strings.Repeat("a", MaxPatchBytes)}}, true,
			"the patch exceeds 3145728 bytes"},
		{"largest allowed", []patch.Operation{{Op: patch.Add, Path: patch.Pointer{"data", "big"}, Value: strings.Repeat("a", MaxPatchBytes-len(`[{"op":"add","path":"/data/big","value":""}]`))}}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, reg := newTestDragnet(t, decided{&engine.Decision{Patch: tc.ops, Applied: []engine.RuleRef{{Kind: "ModRule", Key: "ns1/deep"}}}}, func(o *Options) { o.FailOpen = tc.failOpen })
			_, resp := decodeResponse(t, post(t, h, DragnetPath, reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "x"), "")))
			if tc.want == "" {
				if !resp.Allowed || resp.Patch == nil || !json.Valid(resp.Patch) {
					t.Fatalf("want the patch returned: %+v", resp.Result)
				}
				if d := jsonDepth(resp.Patch); d > MaxPatchDepth {
					t.Errorf("patch depth %d", d)
				}
				return
			}
			if resp.Patch != nil {
				t.Errorf("a patch of %d bytes was returned", len(resp.Patch))
			}
			if tc.failOpen {
				if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], tc.want) {
					t.Errorf("fail-open: %+v", resp)
				}
			} else if resp.Allowed || resp.Result.Code != 500 || !strings.Contains(resp.Result.Message, tc.want) {
				t.Errorf("got %+v, want denied with %q", resp.Result, tc.want)
			}
			if n := counterSum(t, reg, "modwright_rule_evaluation_errors_total", "rule", "ns1/deep"); n != 1 {
				t.Errorf("rule errors counted %v, want 1 for ns1/deep", n)
			}
		})
	}
}

func TestJSONDepth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`1`, 0},
		{`"[{"`, 0},
		{`{"a":"\"[","b":[1,[]]}`, 3},
		{`[{},{"a":{"b":[]}}]`, 4},
	} {
		if got := jsonDepth([]byte(tc.in)); got != tc.want {
			t.Errorf("jsonDepth(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
	// What scalar takes for one is one: its operation nests one level.
	for _, v := range []any{nil, "a\"[{", true, json.Number("1e3"), 1.5, 2, int64(3)} {
		if !scalar(v) {
			t.Errorf("scalar(%#v) = false", v)
		}
		op := patch.Operation{Op: patch.Add, Path: patch.Pointer{"a"}, Value: v}
		b, err := op.AppendJSON(nil)
		if err != nil || jsonDepth(b) != 1 {
			t.Errorf("%#v: operation %s (%v) nests %d levels, want 1", v, b, err, jsonDepth(b))
		}
	}
	for _, v := range []any{map[string]any{}, []any{}, []string{"a"}} {
		if scalar(v) {
			t.Errorf("scalar(%#v) = true", v)
		}
	}
}

// TestDragnetBoundsPatchFromRule: a real rule building an object deeper
// than the API server decodes (add creates the missing members of its
// path) fails the review instead of returning the patch.
func TestDragnetBoundsPatchFromRule(t *testing.T) {
	rule := `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: deep, namespace: ns1}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - {op: add, path: /spec` + strings.Repeat("/x", MaxPatchDepth) + `, value: '1'}
`
	docs, err := source.ParseManifest("rules.yaml", []byte(rule))
	if err != nil {
		t.Fatal(err)
	}
	res := source.LoadRules(docs, testKinds())
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	st := &source.Store{}
	st.Publish(engine.NewSnapshot(res.Rules))
	for _, noTrace := range []bool{false, true} {
		h, _ := newTestDragnet(t, engine.New(engine.Options{NoTrace: noTrace}), func(o *Options) { o.Snapshots = st })
		rec := post(t, h, DragnetPath, reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "x"), ""))
		_, resp := decodeResponse(t, rec)
		// With or without a trace (serve), the decision names the rules
		// that applied.
		by := "ns1/deep"
		if resp.Patch != nil || resp.Allowed || !strings.Contains(resp.Result.Message, "the patch built by "+by+" cannot be returned: operation 0 (add /spec/x)") ||
			!strings.Contains(resp.Result.Message, "nests the object or the patch more than 10000 levels deep") {
			t.Errorf("NoTrace %v: got allowed=%v, patch of %d bytes, %+v", noTrace, resp.Allowed, len(resp.Patch), resp.Result)
		}
	}
}
