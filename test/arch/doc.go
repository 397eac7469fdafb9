// Package arch holds the check of the house's rules that a compiler does
// not enforce (docs/architecture.md, "Rules the build checks"): the kernel
// (internal/engine), the webhook, the metrics, the runner, the controllers
// and the cluster sources name no rule kind; the
// CLI names kinds only in its registry and reaches the engine only through
// the runner; no hand-written function is longer than 120 lines. It runs
// with make test (go test ./test/arch) and has no code besides its test.
package arch
