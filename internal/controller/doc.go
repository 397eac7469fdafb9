// Package controller holds the in-cluster operator's controllers and
// admission handlers that are not the dragnet:
//
//   - the status reconciler, one per rule kind (observedGeneration, the Ready
//     condition, Warning events for rules that do not compile);
//   - the certificate manager: a CA and serving certificate in a Secret,
//     rotated before expiry, and the caBundle (and the dragnet's target
//     resources) kept correct in the operator's webhook configurations;
//   - the serving-certificate provider every replica's webhook server uses;
//   - the pods/binding webhook that records a Pod's node for
//     syntheticRefs.node, and the rules' validating webhook (every kind of the
//     registry): both are
//     webhook.AdmitFuncs served by webhook.Handler, the dragnet's codec.
//
// It talks to the API server only through controller-runtime clients and
// caches. It must not evaluate rules (internal/engine does) nor know about
// the command line (internal/cli wires it).
package controller
