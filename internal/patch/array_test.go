package patch

import (
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/value"
)

// arrayOpsN is the array length of the scenario of issue 13 (a 20,000
// element array in a ConfigMap, every element selected by one rule).
const arrayOpsN = 20000

// arrayOpsBudget bounds the bytes allocated per element by a rule's n
// operations on one n-element array: the journal entry, the doubling copies
// of the array, the identities of owned arrays. Copying the array per
// operation, as Doc did, allocates about 8n bytes per element (3.2 GB for
// n = 20,000).
const arrayOpsBudget = 1024

// TestManyArrayOpsLinearMemory applies, as one rule would (one mark, no
// Release), one operation per element of a large array, and checks that the
// bytes allocated stay within a linear budget (checked as it goes, so that a
// quadratic implementation fails early instead of exhausting memory); then
// that rolling back restores the original exactly, and that the diff of the
// result reproduces it.
func TestManyArrayOpsLinearMemory(t *testing.T) {
	n := arrayOpsN
	elems := make([]any, n)
	for i := range elems {
		elems[i] = strconv.Itoa(i)
	}
	tests := []struct {
		name string
		op   func(i int) Operation // the i-th operation, i in [0, n)
		want func() any            // the expected result
	}{{
		// select '$.data.a[*]', path /data/a/#0: the engine removes from
		// the highest index down.
		name: "remove from the end",
		op: func(i int) Operation {
			return Operation{Op: Remove, Path: Pointer{"data", "a", strconv.Itoa(n - 1 - i)}}
		},
		want: func() any { return map[string]any{"data": map[string]any{"a": []any{}}} },
	}, {
		name: "remove the first",
		op:   func(int) Operation { return Operation{Op: Remove, Path: Pointer{"data", "a", "0"}} },
		want: func() any { return map[string]any{"data": map[string]any{"a": []any{}}} },
	}, {
		name: "append with -1 to a missing array",
		op: func(i int) Operation {
			return Operation{Op: Add, Path: Pointer{"data", "b", "-1"}, Value: elems[i]}
		},
		want: func() any {
			return map[string]any{"data": map[string]any{"a": elems, "b": elems}}
		},
	}, {
		name: "append with - to the array itself",
		op: func(i int) Operation {
			return Operation{Op: Add, Path: Pointer{"data", "a", "-"}, Value: elems[i]}
		},
		want: func() any {
			return map[string]any{"data": map[string]any{"a": append(append([]any(nil), elems...), elems...)}}
		},
	}, {
		name: "prepend",
		op: func(i int) Operation {
			return Operation{Op: Add, Path: Pointer{"data", "b", "0"}, Value: elems[n-1-i]}
		},
		want: func() any {
			return map[string]any{"data": map[string]any{"a": elems, "b": elems}}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := map[string]any{"data": map[string]any{"a": append([]any(nil), elems...)}}
			input := value.DeepCopy(orig)
			d := NewDoc(input)
			mark := d.Mark()
			budget := uint64(arrayOpsBudget * n)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			start := ms.TotalAlloc
			for i := 0; i < n; i++ {
				if err := d.Apply(tc.op(i)); err != nil {
					t.Fatalf("operation %d: %v", i, err)
				}
				if i%1000 == 999 || i == n-1 {
					runtime.ReadMemStats(&ms)
					if used := ms.TotalAlloc - start; used > budget {
						t.Fatalf("after %d operations: %d bytes allocated, over the linear budget of %d bytes (%d per element)", i+1, used, budget, arrayOpsBudget)
					}
				}
			}
			t.Logf("%d bytes allocated per element", (ms.TotalAlloc-start)/uint64(n))
			if diff := cmp.Diff(tc.want(), d.Root()); diff != "" {
				t.Fatalf("result (-want +got):\n%s", diff)
			}
			got, err := ApplyRFC6902(input, Diff(input, d.Root()))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want(), got); diff != "" {
				t.Fatalf("the diff does not reproduce the result (-want +got):\n%s", diff)
			}
			d.Rollback(mark)
			if diff := cmp.Diff(orig, d.Root()); diff != "" {
				t.Fatalf("rollback (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orig, input); diff != "" {
				t.Fatalf("the input changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestArrayChurnRollback applies long random sequences of inserts, removes
// and nested changes to the arrays of one document (so that arrays are
// shifted in place, grown, shifted at the front, emptied and refilled),
// taking marks as it goes, and checks every rollback against a snapshot, the
// input against its original, and the diff against the result.
func TestArrayChurnRollback(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 1))
	iterations := 100
	if testing.Short() {
		iterations = 20
	}
	type snap struct {
		mark int
		tree any
	}
	for it := 0; it < iterations; it++ {
		elems := []any{}
		for i := 0; i < r.IntN(12); i++ {
			elems = append(elems, map[string]any{"i": num(i), "l": []any{num(i)}})
		}
		orig := map[string]any{"a": elems, "b": []any{}}
		input := value.DeepCopy(orig)
		d := NewDoc(input)
		if it%5 == 0 {
			d = NewOwnedDoc(input)
			input = nil
		}
		stack := []snap{{d.Mark(), value.DeepCopy(orig)}}
		for step := 0; step < 200; step++ {
			root := d.Root().(map[string]any)
			arr := []string{"a", "b"}[r.IntN(2)]
			n := len(root[arr].([]any))
			idx := func(extra int) string {
				switch k := r.IntN(8); {
				case k == 0:
					return "-"
				case k == 1 && n > 0:
					return strconv.Itoa(-1 - r.IntN(n))
				case n+extra == 0:
					return "0"
				default:
					return strconv.Itoa(r.IntN(n + extra))
				}
			}
			var op Operation
			switch k := r.IntN(12); {
			case k == 0:
				stack = append(stack, snap{d.Mark(), value.DeepCopy(d.Root())})
				continue
			case k == 1 && len(stack) > 1:
				s := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				d.Rollback(s.mark)
				if diff := cmp.Diff(s.tree, d.Root()); diff != "" {
					t.Fatalf("iteration %d step %d: rollback (-want +got):\n%s", it, step, diff)
				}
				continue
			case k == 2:
				d.Release()
				stack = []snap{{d.Mark(), value.DeepCopy(d.Root())}}
				continue
			case k < 6:
				op = Operation{Op: Add, Path: Pointer{arr, idx(1)}, Value: num(step)}
			case k < 9:
				op = Operation{Op: Remove, Path: Pointer{arr, idx(0)}}
			case k < 10:
				op = Operation{Op: Replace, Path: Pointer{arr, idx(0)}, Value: map[string]any{"l": []any{}}}
			default:
				op = Operation{Op: Add, Path: Pointer{arr, idx(0), "l", idx(1)}, Value: num(step)}
			}
			before := value.DeepCopy(d.Root())
			want, wantErr := refApply(before, op)
			err := d.Apply(op)
			if sentinel(err) != wantErr {
				t.Fatalf("iteration %d step %d: Apply(%v): error %v, reference %v", it, step, op, err, wantErr)
			}
			if err != nil {
				want = before
			}
			if diff := cmp.Diff(want, d.Root()); diff != "" {
				t.Fatalf("iteration %d step %d: Apply(%v) (-want +got):\n%s", it, step, op, diff)
			}
		}
		if input != nil {
			if diff := cmp.Diff(orig, input); diff != "" {
				t.Fatalf("iteration %d: the input changed (-orig +now):\n%s", it, diff)
			}
			result := value.DeepCopy(d.Root())
			got, err := ApplyRFC6902(input, Diff(input, d.Root()))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(result, got); diff != "" {
				t.Fatalf("iteration %d: the diff does not reproduce the result (-want +got):\n%s", it, diff)
			}
		}
		d.Rollback(stack[0].mark)
		if diff := cmp.Diff(stack[0].tree, d.Root()); diff != "" {
			t.Fatalf("iteration %d: rollback to the first mark (-want +got):\n%s", it, diff)
		}
	}
}

// num returns i as the decoder would.
func num(i int) any { return json.Number(strconv.Itoa(i)) }

// TestOwnedDocSpareCapacity checks that even a Doc made by NewOwnedDoc
// never inserts into the spare capacity of an array it was given, which may
// hold another array's elements.
func TestOwnedDocSpareCapacity(t *testing.T) {
	buf := []any{"a0", "a1", "b0", "b1"}
	root := map[string]any{"a": buf[0:2], "b": buf[2:4]}
	d := NewOwnedDoc(root)
	for _, op := range []Operation{
		{Op: Add, Path: Pointer{"a", "-"}, Value: "x"},
		{Op: Add, Path: Pointer{"a", "0"}, Value: "y"},
		{Op: Remove, Path: Pointer{"a", "0"}},
		{Op: Add, Path: Pointer{"a", "-"}, Value: "z"},
	} {
		if err := d.Apply(op); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]any{"a": []any{"a0", "a1", "x", "z"}, "b": []any{"b0", "b1"}}
	if diff := cmp.Diff(want, d.Root()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
