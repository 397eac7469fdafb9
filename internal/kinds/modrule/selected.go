package modrule

import (
	"context"

	"github.com/modwright/modwright/internal/lang"
)

// selection is what one query selected from one version of the object
// (engine.Handle.ObjectVersion): the values are evalState.selVals[from:to].
//
// ModRules loaded together share one compiled query per distinct text
// (Cache), and the rules of a tier are all matched against the object as
// the tier found it: the rules testing what another tested before them
// (the same kind, label or images) read its values instead of selecting
// them again.
type selection struct {
	q        lang.Query
	from, to int
	single   bool
}

// maxSelections bounds the selections an evaluation remembers for one
// version of the object; evalStateKept bounds their values.
const maxSelections = 64

// selectValues returns q's values from root, the object at version: those
// an earlier call found for q and version, or q.Values' into buf. Values
// remembered are read-only (a caller keeping them copies them, as
// Handle.Keep does); own reports that vals is buf's storage, the caller's
// to keep. A query that fails is not remembered: its error is returned
// by every call.
func (st *evalState) selectValues(ctx context.Context, q lang.Query, root any, version uint64, buf []any) (vals []any, single, own bool, err error) {
	if st.selVersion != version {
		st.forgetSelections()
		st.selVersion = version
	}
	for i := range st.selected {
		if s := &st.selected[i]; s.q == q {
			return st.selVals[s.from:s.to:s.to], s.single, false, nil
		}
	}
	vals, single, err = q.Values(ctx, root, buf)
	if err == nil && len(st.selected) < maxSelections && len(st.selVals)+len(vals) <= evalStateKept {
		from := len(st.selVals)
		st.selVals = append(st.selVals, vals...)
		st.selected = append(st.selected, selection{q: q, from: from, to: len(st.selVals), single: single})
	}
	return vals, single, true, err
}

// forgetSelections drops the selections and their values.
func (st *evalState) forgetSelections() {
	clear(st.selected)
	clear(st.selVals)
	st.selected, st.selVals = st.selected[:0], st.selVals[:0]
}
