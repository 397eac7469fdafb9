// Package engine evaluates a rules.Snapshot against one admission request and
// returns a Decision: the patched object, a minimal RFC 6902 patch, the
// rejections and a trace of every rule considered.
//
// The engine never modifies its input: it works on a copy-on-write
// patch.Doc of the object (only the containers a rule changes are copied),
// applies each rule's operations through its undo journal (a rule is
// atomic: all of its operations apply or none do), and diffs the result
// against the original. It honours the context's deadline between rules and
// inside selection, matching and rendering, and bounds what one rule may
// build (values selected, text tested, text rendered: see MaxMatchText,
// MaxRenderText and package jsonpath). A Patch rule that hits a bound fails
// alone; a Reject rule that does fails the evaluation (ErrUndecided), since
// it might have rejected the object. No evaluation that ran out of time
// returns a decision.
//
// syntheticRefs is context: the engine puts the real related objects there
// (the client's own member is never believed), an operation whose rendered
// path is under it fails its rule (ErrSyntheticRefs; a static one does not
// load), and a rule that replaces the whole object gets them back, so every
// rule, Reject rules included, sees the real ones.
//
// It knows nothing of HTTP, AdmissionReview, informers or files: a request
// comes in as a Request (the admission attributes the API server sends, in
// plain types: operation, objects as JSON trees or JSON text, name,
// namespace, kind, resource, subresource, userInfo, dryRun, options),
// related objects (a namespace, a node) are read by reference through the
// small ObjectReader interface, and results go out as plain values.
package engine
