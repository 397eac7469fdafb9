// Package value defines the in-memory JSON tree every other package of
// modwright works on, and the few operations all of them need on it.
//
// A tree holds only these Go types: nil (JSON null), bool, string,
// json.Number (every JSON number, kept as its source text so nothing is lost
// or reformatted), []any and map[string]any. Values computed inside
// expressions may also be float64 or int64; they never enter a tree. A tree
// DecodeLazy makes also holds Raw, containers not decoded yet: it is made
// to edit a few paths and be written back (the last-applied
// configuration), and only AppendJSON, Expand and patch.Doc know it.
// Canonical text (Canonical: what AppendJSON writes) can also be edited as
// text, found with SkipCanonical and PlainKey (patch.Text). DecodeOmitting
// leaves out a member nothing reads (a review's managedFields). A Storage
// lends the maps of the trees decoded through it, and copies of them
// (Clone: patch.Doc's, copy-on-write), and takes them back when their
// caller is done (the webhook, from one review to the next).
//
// The package knows nothing of Kubernetes, JSONPath or patches.
package value
