// Package e2e runs modwright's operator (`modwright serve`, the real command
// line) against a real kube-apiserver and etcd (controller-runtime envtest),
// wired through the webhook configurations and RBAC that deploy/ installs.
//
// The tests need KUBEBUILDER_ASSETS (etcd and kube-apiserver); `make e2e`
// (part of `make test`) provides them with hack/envtest-assets.sh. Without
// them the tests skip, unless MODWRIGHT_E2E=1, when they fail.
package e2e
