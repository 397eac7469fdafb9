// Package kyverno is the adapter of Kyverno's own policy kinds,
// ClusterPolicy and Policy (kyverno.io/v1, also read as kyverno.io/v2beta1;
// Go types in api/kyverno/v1), so that a Kyverno user's policies run
// unchanged: it decodes their manifests strictly and compiles each rule
// once (match and exclude, context entries, preconditions, validate:
// pattern and anyPattern through internal/lang/pattern, deny through
// internal/lang/conditions, foreach, the message's {{ }} variables through
// internal/lang/subst, JMESPath programs through internal/lang/jmespath),
// with Kyverno's autogen rules for pod controllers (autogen.go).
//
// validate.cel runs the expressions of a ValidatingAdmissionPolicy
// (variables, expressions, messages, celPreconditions) through
// internal/lang/cel, the kube-apiserver's CEL, cost-bounded;
// validate.podSecurity the checks of k8s.io/pod-security-admission (pss.go).
// Context entries read through engine.Handle: configMap (ObjectReader) and
// apiCall (APIReader), a namespaced Policy's reads confined to its
// namespace and authorized as its namespace's rule reader.
// PolicyExceptions (exception.go) come from a test suite (WithExceptions)
// or, in the cluster, from the trusted namespaces (WithExceptionSource).
//
// Evaluation follows Kyverno's engine: a rule that does not match gives no
// result; preconditions that do not hold skip it; a pattern fails at a
// path, a conditional or global anchor skips; a rule that cannot be
// evaluated (an undefined variable) is an error. Each rule's result
// (pass, fail, skip, error, with Kyverno's message) is recorded in the
// trace (Results), which `modwright test` compares with a kyverno-test.yaml
// suite. At admission a failure of an Enforce rule rejects the object with
// Kyverno's message, a failure of an Audit rule warns, an error obeys the
// policy's failurePolicy.
//
// Mutate rules (mutate.go) run in the kernel's Mutate phase, the others in
// its Validate phase: patchStrategicMerge with Kyverno's anchors resolved
// against the object (smp.go) and merged by kustomize's kyaml merge2, as
// Kyverno merges; patchesJson6902 through evanphx/json-patch with
// Kyverno's options; foreach over lists, nested; each rule patches the
// difference (engine.Handle.Patch), and the next sees the object as it
// left it.
//
// validate.cel's params (paramKind, paramRef) are read through the
// engine's KindReader, in the Policy's namespace only for a Policy.
//
// Not evaluated, reported as such (the policy loads, and every request it
// matches gets the rule's error): validate.manifests and verifyImages.
// The imageRegistry context entry reads through the engine's ImageReader
// (offline without image data, as kyverno test, a value of the same name
// stands for it). An apiCall's service is called through the engine's
// HTTPReader.
//
// It must not know how HTTP requests are made, the CLI or how rules are sourced; other kinds and
// the kernel's internals are none of its business.
package kyverno
