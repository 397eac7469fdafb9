// Package images owns Kyverno's `images` context variable: the container
// images of an object, by container sort and name, each parsed into
// Kyverno's image information (registry, path, name, tag, digest,
// reference, referenceWithTag, jsonPointer).
//
// The objects and paths are Kyverno's default extractors: a Pod's
// spec.{initContainers,containers,ephemeralContainers}; the pod template
// (spec.template.spec) of a Deployment, DaemonSet, StatefulSet, ReplicaSet,
// ReplicationController and Job; a CronJob's
// spec.jobTemplate.spec.template.spec. References are parsed with
// github.com/distribution/reference, as Kyverno parses them, after
// Kyverno's defaulting: an image without a registry is in docker.io, and
// without a tag or digest its tag is "latest".
//
// Kyverno's per-kind custom extractors (its ConfigMap's imageExtractors)
// are not supported: no ModwrightPolicy field names them yet.
//
// Package images must not know rule kinds, languages, admission requests
// or HTTP.
package images
