package modrule

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
)

// countingQuery counts its Values calls and fails when told to.
type countingQuery struct {
	lang.Query
	calls int
	fail  error
}

func (q *countingQuery) Values(ctx context.Context, root any, dst []any) ([]any, bool, error) {
	q.calls++
	if q.fail != nil {
		return dst, false, q.fail
	}
	return q.Query.Values(ctx, root, dst)
}

func countingSelect(t *testing.T, src string) *countingQuery {
	t.Helper()
	q, err := compileSelect(src)
	if err != nil {
		t.Fatal(err)
	}
	return &countingQuery{Query: q}
}

// A query is evaluated once per version of the object; its values come
// back equal, read-only (not the caller's buffer); another version, a
// reset and a failure each evaluate it again.
func TestSelectValues(t *testing.T) {
	ctx := context.Background()
	root := map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"image": "nginx:1.14.2"}, map[string]any{"image": "envoy:1.30"},
	}}}
	images := []any{"nginx:1.14.2", "envoy:1.30"}
	var st evalState
	q := countingSelect(t, "$.spec.containers[*].image")

	buf := make([]any, 0, 4)
	vals, single, own, err := st.selectValues(ctx, q, root, 7, buf)
	if err != nil || single || !own || q.calls != 1 {
		t.Fatalf("first call: err %v, single %v, own %v, calls %d; want nil, false, true, 1", err, single, own, q.calls)
	}
	if diff := cmp.Diff(images, vals); diff != "" {
		t.Fatalf("first call (-want +got):\n%s", diff)
	}
	clear(buf[:cap(buf)]) // the caller reuses its buffer
	for i := range 3 {
		vals, single, own, err = st.selectValues(ctx, q, root, 7, buf)
		if err != nil || single || own || q.calls != 1 {
			t.Fatalf("call %d on the same version: err %v, single %v, own %v, calls %d; want nil, false, false, 1", i+2, err, single, own, q.calls)
		}
		if diff := cmp.Diff(images, vals); diff != "" {
			t.Fatalf("call %d on the same version (-want +got):\n%s", i+2, diff)
		}
	}
	if _, _, own, _ = st.selectValues(ctx, q, root, 8, nil); !own || q.calls != 2 {
		t.Errorf("another version: own %v, calls %d; want true, 2", own, q.calls)
	}
	if !st.ResetState() {
		t.Fatal("ResetState dropped a small state")
	}
	if len(st.selected) != 0 || len(st.selVals) != 0 {
		t.Errorf("ResetState kept %d selections, %d values", len(st.selected), len(st.selVals))
	}
	if _, _, _, _ = st.selectValues(ctx, q, root, 8, nil); q.calls != 3 {
		t.Errorf("after ResetState: calls %d, want 3", q.calls)
	}

	// Another query on the same version is its own.
	names := countingSelect(t, "$.spec.containers[0].image")
	if vals, single, _, _ := st.selectValues(ctx, names, root, 8, nil); !single || !cmp.Equal(vals, []any{"nginx:1.14.2"}) || names.calls != 1 {
		t.Errorf("another query: %v single %v calls %d", vals, single, names.calls)
	}

	// A failure is not remembered.
	boom := errors.New("boom")
	bad := countingSelect(t, "$.spec")
	bad.fail = boom
	for i := range 2 {
		if _, _, _, err := st.selectValues(ctx, bad, root, 8, nil); !errors.Is(err, boom) || bad.calls != i+1 {
			t.Errorf("failing query, call %d: err %v, calls %d", i+1, err, bad.calls)
		}
	}
}

// Beyond maxSelections queries, or evalStateKept values, a query is
// evaluated on every call and its values are still right.
func TestSelectValuesBounds(t *testing.T) {
	ctx := context.Background()
	many := make([]any, evalStateKept+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	root := map[string]any{"a": "x", "many": many}
	var st evalState
	var qs []*countingQuery
	for range maxSelections + 2 {
		qs = append(qs, countingSelect(t, "$.a"))
	}
	for round := 1; round <= 2; round++ {
		for i, q := range qs {
			vals, _, _, err := st.selectValues(ctx, q, root, 1, nil)
			if err != nil || !cmp.Equal(vals, []any{"x"}) {
				t.Fatalf("round %d, query %d: %v, %v", round, i, vals, err)
			}
			want := 1
			if i >= maxSelections {
				want = round
			}
			if q.calls != want {
				t.Errorf("round %d, query %d: calls %d, want %d", round, i, q.calls, want)
			}
		}
	}
	st.forgetSelections()
	big := countingSelect(t, "$.many[*]")
	for round := 1; round <= 2; round++ {
		vals, _, own, err := st.selectValues(ctx, big, root, 2, nil)
		if err != nil || len(vals) != len(many) || !own || big.calls != round {
			t.Errorf("round %d, %d values: %d values, err %v, own %v, calls %d", round, len(many), len(vals), err, own, big.calls)
		}
	}
}
