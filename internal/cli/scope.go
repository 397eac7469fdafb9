package cli

// clusterScoped lists the built-in kinds that have no namespace. Other kinds
// (custom resources included) are taken as namespaced unless they carry
// none and are listed here.
var clusterScoped = map[string]bool{
	"APIService":                       true,
	"CertificateSigningRequest":        true,
	"ClusterRole":                      true,
	"ClusterRoleBinding":               true,
	"ComponentStatus":                  true,
	"CSIDriver":                        true,
	"CSINode":                          true,
	"CustomResourceDefinition":         true,
	"FlowSchema":                       true,
	"IngressClass":                     true,
	"MutatingAdmissionPolicy":          true,
	"MutatingAdmissionPolicyBinding":   true,
	"MutatingWebhookConfiguration":     true,
	"Namespace":                        true,
	"Node":                             true,
	"PersistentVolume":                 true,
	"PriorityClass":                    true,
	"PriorityLevelConfiguration":       true,
	"RuntimeClass":                     true,
	"StorageClass":                     true,
	"ValidatingAdmissionPolicy":        true,
	"ValidatingAdmissionPolicyBinding": true,
	"ValidatingWebhookConfiguration":   true,
	"VolumeAttachment":                 true,
	"VolumeAttributesClass":            true,
	"DeviceClass":                      true,
	"ClusterTrustBundle":               true,
	"IPAddress":                        true,
	"ServiceCIDR":                      true,
}

// IsClusterScoped reports whether a built-in kind has no namespace.
func IsClusterScoped(kind string) bool { return clusterScoped[kind] }
