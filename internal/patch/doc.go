// Package patch applies and computes JSON patches on the in-memory JSON trees
// of package value.
//
// It owns four things:
//
//   - Doc, a mutable tree to which operations are applied one at a time with
//     KubeMod's semantics (add creates missing parents, remove of a missing
//     path is a no-op, negative array indices count from the end), and which
//     journals every change so that a group of operations can be rolled back
//     atomically to a mark;
//   - Text, the same operations (KubeMod's) on the canonical JSON text of
//     an object, in place, for those that need no decoding: the text stays
//     what encoding the tree a Doc would hold gives. Both start an
//     operation at the object the last ones went to when its path leads
//     there (places.go), and forget it when an operation may move it;
//   - Diff, which computes a small RFC 6902 patch between two trees (and
//     the same patch cheaper where the change is known: DiffPaths, along
//     the paths operations wrote, and MemberChanges with DiffChanges, read
//     off operations that write object members), and ApplyRFC6902, which
//     applies one with the standard semantics;
//   - the vocabulary both share: Pointer (RFC 6901), Operation and its JSON
//     form, and the sentinel errors that classify failures.
//
// The package works on concrete JSON pointers only. It knows nothing of
// Kubernetes objects or admission, of JSONPath selection (callers expand
// selectors into concrete pointers before calling it) or of value templates
// (callers render values before putting them in an Operation). Its only
// dependency within modwright is package value.
package patch
