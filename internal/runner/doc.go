// Package runner is the one way to admit objects offline: "rules +
// objects -> what the API server would answer". It owns the API server's
// admission chain (Chain: the CRD checks, Kubernetes' admission policies
// around the rules, the check of what mutating admission made) and the
// two drivers the chain runs its rules through.
//
// Two drivers stand behind the Driver interface: Engine calls
// engine.Evaluate, as every CLI command does, and Webhook serves an
// admission.k8s.io/v1 AdmissionReview to the dragnet handler
// (webhook.Dragnet) in memory and applies the returned patch to the
// input, as the API server does. apply, explain, krm and test run every
// object through a Chain around the Engine driver; the txtar corpus runs
// each case through apply's chain with each driver and compares, so that
// what proves `apply` also proves the server.
//
// It owns building offline requests (the attributes the CLI knows: the
// operation, the object's kind, name and namespace, and the old object of
// an UPDATE when the caller has one, which the Webhook driver sends as the
// review's oldObject) and comparing results (Diff). It must not know where
// rules or objects come from (files, suites, the corpus: the callers load
// them), how a rule kind is compiled or matched (the engine and the
// kinds), nor the command line: it does not import internal/cli.
package runner
