// Package certs creates and loads the TLS material the admission webhooks
// serve with: a self-signed certificate authority and a serving certificate
// signed by it, stored as PEM files in a directory (tls.crt, tls.key, ca.crt,
// ca.key: the names controller-runtime's webhook server and Kubernetes
// Secrets of type kubernetes.io/tls use).
//
// It knows nothing about Kubernetes objects or HTTP serving; the caller
// decides where the files go and when to rotate.
package certs
