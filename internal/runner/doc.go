// Package runner is the one way to run "rules + objects -> expected
// result": it evaluates a compiled snapshot against admission requests
// through a Driver and reports, per object, what the API server would see
// (admitted or denied with the denial message, the resulting object, the
// JSONPatch, the rule errors as warnings).
//
// Two drivers stand behind the Driver interface: Engine calls
// engine.Evaluate directly, as `modwright apply` and `modwright test` do,
// and Webhook serves an admission.k8s.io/v1 AdmissionReview to the
// dragnet handler (webhook.Dragnet) in memory and applies the returned
// patch to the input, as the API server does. The txtar corpus, the test
// suites and the KubeMod conformance data run through it, so that what
// proves `apply` also proves the server.
//
// It owns building offline requests (the attributes the CLI knows: the
// operation, the object's kind, name and namespace, and the old object of
// an UPDATE when the caller has one, which the Webhook driver sends as the
// review's oldObject) and comparing results
// (Diff). It must not know where rules or objects come from (files, suites,
// the corpus: the callers load them), how a rule kind is compiled or
// matched (the engine and the kinds), nor the command line: it does not
// import internal/cli.
package runner
