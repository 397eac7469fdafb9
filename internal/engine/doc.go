// Package engine is the kernel: it evaluates an immutable Snapshot of
// compiled rules of any kind against one admission request and returns a
// Decision (the patched object, a minimal RFC 6902 patch, the rejections,
// warnings, errors and a trace of every rule considered).
//
// It knows no rule kind and no expression language. A kind adapter
// (internal/kinds/...) compiles a manifest into a Rule that states its
// RuleInfo (kind, key, tier, phase, index keys, compile error) and
// evaluates through a Handle. The kernel owns what every kind shares:
// candidates from the Snapshot's index (IndexKeys: namespace, operations,
// kinds; InScope for what the index cannot decide), the order (tier, then
// kind, then namespace/name; Mutate rules tier by tier, every rule of a
// tier matched against the object as the tier found it and then applied;
// Validate rules on the final object; Request.Phases runs one phase alone,
// as a mutating or a validating webhook), the copy-on-write patch.Doc and its
// journal (Handle.Patch applies a rule's operations atomically), the
// managedFields and last-applied-configuration handling (mirrored unless
// a rule keeps it: RuleInfo.KeepLastApplied), the members kinds prepare
// for their rules (Input: built once per evaluation when a candidate
// declares one, read-only to rules, the client's own never believed, a
// rule's view computed once per key), the diff, the trace, and the denial
// that lists every rejecting rule of every kind.
//
// The engine never modifies its input. It honours the context's deadline
// between rules (rules check it inside long loops); a Mutate rule that
// fails (a bound, a patch that does not apply) fails alone, a Validate rule
// that cannot be decided fails the evaluation (ErrUndecided). No
// evaluation that ran out of time returns a decision.
//
// It knows nothing of HTTP, AdmissionReview, informers or files: a request
// comes in as a Request (the admission attributes the API server sends, in
// plain types), what rules read beyond the object comes through small
// context readers it carries for them (ObjectReader for related objects,
// APIReader, RoleReader, KindReader for objects of any kind, HTTPReader for
// a rule's external requests, SchemaReader for custom resources' values as
// their CRDs type them; implemented by the cluster's caches and
// clients and offline by the CLI's context), a namespaced rule's reads
// authorized as its namespace's rule reader (Handle.AuthorizeRead, through
// the Authorizer), and results go out as plain values. When the object under review is a Secret, its values are
// replaced by Redacted in every text a decision carries (errors,
// rejections, warnings, audit annotations, the trace's reasons) and in the
// evaluation's error,
// so no front end can print them (redact.go).
package engine
