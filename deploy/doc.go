// Package deploy holds modwright's installation manifests: the ModRule CRD
// (generated from api/v1beta1 by controller-gen), the Helm chart
// (helm/modwright) and the kustomize bundle rendered from it. It embeds the
// CRD and the bundle so that the sandbox and the tests install exactly what
// users install.
package deploy

import _ "embed"

// CRD is the ModRule CustomResourceDefinition (YAML).
//
//go:embed crds/api.kubemod.io_modrules.yaml
var CRD []byte

// Bundle is `helm template` of the chart with its default values (YAML,
// several documents), namespace modwright-system.
//
//go:embed bundle/modwright.yaml
var Bundle []byte
