package packs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/packs"
)

func TestCache(t *testing.T) {
	var calls atomic.Int64
	fail := false
	derive := func(_ context.Context, obj map[string]any) ([]packs.Edge, []error) {
		calls.Add(1)
		time.Sleep(10 * time.Millisecond) // long enough for concurrent callers to meet
		if fail {
			return nil, []error{errors.New("boom")}
		}
		return []packs.Edge{{Type: "T", From: packs.Ref{Kind: "A", Name: "a"}, To: packs.Ref{Kind: "B", Name: "b"}}}, nil
	}
	c := packs.NewCache(derive, "rules-1", 2)
	ctx := context.Background()
	obj := func(uid, rv string) map[string]any {
		return map[string]any{"metadata": map[string]any{"uid": uid, "resourceVersion": rv}}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if es, errs := c.Derive(ctx, obj("u1", "1")); len(es) != 1 || errs != nil {
				t.Errorf("%v %v", es, errs)
			}
		})
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("8 concurrent callers evaluated %d times", n)
	}
	// A caller the scheduler starts after the first evaluation is done
	// finds it kept: a hit. How many did is the machine's business.
	concurrentHits, _ := c.Stats()
	if concurrentHits > 7 { // one of the eight evaluated
		t.Errorf("8 concurrent callers counted %d hits", concurrentHits)
	}
	c.Derive(ctx, obj("u1", "1"))
	if n := calls.Load(); n != 1 {
		t.Errorf("a repeated object evaluated again (%d)", n)
	}
	c.Derive(ctx, obj("u1", "2")) // a new resourceVersion
	c.Derive(ctx, obj("u2", "1"))
	c.Derive(ctx, obj("u1", "1")) // evicted: the cache holds 2
	if n := calls.Load(); n != 4 {
		t.Errorf("%d evaluations, want 4", n)
	}
	c.Derive(ctx, map[string]any{"metadata": map[string]any{}}) // no uid: never kept
	c.Derive(ctx, map[string]any{"metadata": map[string]any{}})
	if n := calls.Load(); n != 6 {
		t.Errorf("%d evaluations, want 6", n)
	}
	fail = true
	c.Derive(ctx, obj("u3", "1"))
	c.Derive(ctx, obj("u3", "1"))
	if n := calls.Load(); n != 8 {
		t.Errorf("errors are kept: %d evaluations, want 8", n)
	}
	if hits, _ := c.Stats(); hits != concurrentHits+1 { // the one repeat of an object kept
		t.Errorf("hits %d, want %d (the concurrent callers' %d and the one repeat)", hits, concurrentHits+1, concurrentHits)
	}
}

// TestDecodeAttributes: an edge's attributes are kept (strings only).
func TestDecodeAttributes(t *testing.T) {
	edge := func(attrs any) map[string]any {
		return map[string]any{"type": "ENFORCES", "from": map[string]any{"kind": "A", "name": "a"}, "to": map[string]any{"kind": "B", "name": "b"}, "attributes": attrs}
	}
	got, err := packs.DecodeEdges([]any{edge(map[string]any{"violated": "true", "message": "no"})})
	if err != nil {
		t.Fatal(err)
	}
	if m := got[0].Attributes.Map(); len(m) != 2 || m["violated"] != "true" || m["message"] != "no" {
		t.Errorf("attributes %v", m)
	}
	if tree := got[0].Tree(); tree["attributes"].(map[string]any)["message"] != "no" {
		t.Errorf("tree %v", tree)
	}
	for _, bad := range []any{"x", map[string]any{"n": json.Number("1")}, map[string]any{"b": true}} {
		if _, err := packs.DecodeEdges([]any{edge(bad)}); !errors.Is(err, packs.ErrShape) {
			t.Errorf("attributes %v: %v", bad, err)
		}
	}
	if got, err := packs.DecodeEdges([]any{edge(nil)}); err != nil || got[0].Attributes != "" {
		t.Errorf("null attributes: %v %v", got, err)
	}
}
