// Package metrics defines modwright's Prometheus metrics in one place, so
// that their names and labels are documented together (docs/serve.md#metrics)
// and every component receives them by injection instead of registering
// globals.
//
// It must not know where rules come from or how requests are served.
package metrics
