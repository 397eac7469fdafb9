// Package webhook answers Kubernetes admission reviews: it decodes
// AdmissionReview requests (admission.k8s.io/v1 and v1beta1: every attribute
// of the request, mapped to the engine's kind-neutral engine.Request, with
// the objects left as JSON text), hands it to the engine, and encodes the
// decision as an AdmissionReview
// response (a JSON patch, a denial, warnings). It owns admission control
// (admit.go: a review's body is read within its deadline before it takes
// anything, then the review is admitted by the memory its evaluation is
// estimated to take and by count, or answered 503/413 in time) and the
// bounds of what it returns (patchbound.go: the patch's depth and size;
// base64.go encodes the patch, the response's largest part).
// The other webhooks (the ModRule validating webhook, pods/binding) go
// through the same codec with Handler (handler.go): the same request
// checks, bounded body read, decoder and encoder, around an AdmitFunc.
// It also provides the HTTPS server, standalone and for the operator's
// webhooks (TLS 1.2+, HTTP/2, health, readiness, metrics, read and idle
// timeouts, and a shutdown in steps: unready, a delay, a drain in which
// reviews keep their own deadlines).
//
// It holds no rule logic: what a rule means is the engine's business, where
// rules come from is the source's. It must not import the CLI or the
// controller.
package webhook
