// Package controller holds the in-cluster operator's controllers and
// admission handlers that are not the dragnet:
//
//   - the status reconciler, one per rule kind (observedGeneration, the
//     Ready condition, Warning events for rules that do not compile),
//     reading rules as unstructured objects and compiling them through
//     their kind;
//   - the certificate manager: a CA and serving certificate in a Secret,
//     rotated before expiry, and the caBundle (and the dragnet's target
//     resources) kept correct in the operator's webhook configurations;
//   - the serving-certificate provider every replica's webhook server uses;
//   - the pods/binding webhook that records a Pod's node for
//     syntheticRefs.node, and the rules' validating webhook (every kind of
//     the registry, compiled as the rule source compiles it): both are
//     webhook.AdmitFuncs served by webhook.Handler, the dragnet's codec;
//   - the violations writer: the background scan's count of each rule's
//     fail results in its status (totalViolations, auditTimestamp);
//   - the rule status writer: the status of the rules of the kinds that
//     have it in their peer's shape (kinds.StatusWritten), after each
//     compilation;
//   - the definition installer: the CRD of each rule kind the definitions
//     in the cluster define (kinds.Defining), installed by the leader and
//     deleted with its definition, and each definition's status;
//   - the policy installer (--compile-native): the rules that translate
//     exactly (internal/translate) installed as admission policies by the
//     leader, taken out of every replica's webhook once the API server
//     holds them, each rule's NativeAdmission condition; placed by
//     translate.Place (those faster in the webhook stay there), from the
//     scopes of every rule served (Scopes).
//
// It talks to the API server only through controller-runtime clients and
// caches. It must not evaluate rules (internal/engine does) nor know about
// the command line (internal/cli wires it).
package controller
