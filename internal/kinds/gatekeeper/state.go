package gatekeeper

import (
	"fmt"
	"slices"
	"sync"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyvernoreq"
	"github.com/modwright/modwright/internal/lang/rego"
)

// evalState is what every constraint of one evaluation shares, whatever
// its kind, for the object's version: what the match reads, the
// Namespace, input.review (converted once for Rego), the request CEL
// reads and data.inventory.
type evalState struct {
	version uint64
	target  *target

	nsDone bool
	nsObj  map[string]any
	nsErr  error

	review    map[string]any
	reviewVal rego.Value
	reviewErr error
	request   map[string]any

	invDone bool
	inv     rego.Value
	invErr  error

	// exempt is, by process (the order of processes), whether the object
	// is exempted from it, once asked.
	exempt [len(processes)]struct{ asked, is bool }
}

// processes are Gatekeeper's processes a constraint or mutator runs in.
var processes = [...]string{"webhook", "audit", "mutation-webhook"}

// exemptions is what an inventory reader of the cluster also says: which
// namespaces Gatekeeper's Config exempts from a process.
type exemptions interface {
	Excluded(process, namespace string) bool
}

// ignoreLabel exempts a namespace from Gatekeeper's admission webhooks
// (their namespaceSelector leaves it out), not from its audit.
const ignoreLabel = "admission.gatekeeper.sh/ignore"

// exempted reports whether the Config exempts the object's namespace (a
// Namespace's own name) from process, or, for the webhooks, the
// namespace has Gatekeeper's ignore label; once per evaluation.
func (st *evalState) exempted(h *engine.Handle, process string) bool {
	slot := &st.exempt[slices.Index(processes[:], process)]
	if slot.asked {
		return slot.is
	}
	ex, ok := h.Inventory().(exemptions)
	e := ok && ex.Excluded(process, st.target.ns)
	if !e && process != "audit" && st.target.ns != "" {
		nsObj := h.Object()
		if !st.target.namespace {
			nsObj, _ = st.namespace(h)
		}
		m, _ := nsObj.(map[string]any)
		md, _ := m["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		_, e = labels[ignoreLabel]
	}
	slot.asked, slot.is = true, e
	return e
}

func stateOf(h *engine.Handle) *evalState {
	slot := h.State(gkv1.ConstraintsGroup)
	st, _ := (*slot).(*evalState)
	if st == nil || st.version != h.ObjectVersion() {
		st = &evalState{version: h.ObjectVersion()}
		st.target = targetOf(h, st)
		*slot = st
	}
	return st
}

// namespace is the object's Namespace, read once (nil when unknown).
func (st *evalState) namespace(h *engine.Handle) (map[string]any, error) {
	if !st.nsDone {
		st.nsDone = true
		if !st.target.namespace {
			st.nsObj, st.nsErr = namespaceOf(h, st.target.ns)
		}
	}
	return st.nsObj, st.nsErr
}

// reviewValue is input.review converted for Rego, once.
func (st *evalState) reviewValue(h *engine.Handle) (rego.Value, error) {
	if st.review == nil {
		nsObj, _ := st.namespace(h)
		st.review = review(h, nsObj)
		st.reviewVal, st.reviewErr = rego.ToValue(st.review)
	}
	return st.reviewVal, st.reviewErr
}

// celRequest is the request CEL's `request` reads, once.
func (st *evalState) celRequest(h *engine.Handle) map[string]any {
	if st.request == nil {
		st.request = kyvernoreq.Request(h.Request(), st.target.gvk.Kind)
	}
	return st.request
}

// inventory is data.inventory converted for Rego, once per evaluation,
// and kept across evaluations while the inventory's version stays.
func (st *evalState) inventory(h *engine.Handle, cache *inventoryCache) (rego.Value, error) {
	if !st.invDone {
		st.invDone = true
		st.inv, st.invErr = cache.get(h)
	}
	return st.inv, st.invErr
}

// inventoryCache is data.inventory converted for Rego at one version of
// one reader, shared by the constraints of a kind's compilations.
type inventoryCache struct {
	mu      sync.Mutex
	reader  engine.InventoryReader
	version uint64
	val     rego.Value
	ok      bool
}

func (c *inventoryCache) get(h *engine.Handle) (rego.Value, error) {
	r := h.Inventory()
	if r == nil {
		return rego.ToValue(map[string]any{})
	}
	version, objs, err := r.Inventory(h.Context())
	if err != nil {
		return rego.Value{}, fmt.Errorf("reading the inventory: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && c.reader == r && c.version == version {
		return c.val, nil
	}
	val, err := rego.ToValue(layout(objs))
	if err != nil {
		return rego.Value{}, err
	}
	c.reader, c.version, c.val, c.ok = r, version, val, true
	return val, nil
}
