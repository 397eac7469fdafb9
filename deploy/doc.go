// Package deploy holds modwright's installation manifests: the CRDs
// (ModRule, ModwrightPolicy and ClusterModwrightPolicy and their former
// names Policy and ClusterPolicy, generated from api/v1beta1 and
// api/v1alpha1 by controller-gen, and kinitiras' OverridePolicy,
// ClusterOverridePolicy and ClusterValidatePolicy from
// api/kinitiras/v1alpha1), the Helm chart (helm/modwright) and the
// kustomize bundle rendered from it. It embeds the CRDs and the bundle so
// that the sandbox and the tests install exactly what users install.
package deploy

import _ "embed"

// CRD is the ModRule CustomResourceDefinition (YAML).
//
//go:embed crds/api.kubemod.io_modrules.yaml
var CRD []byte

// PolicyCRD is the ModwrightPolicy CustomResourceDefinition (YAML).
//
//go:embed crds/modwright.io_modwrightpolicies.yaml
var PolicyCRD []byte

// ClusterPolicyCRD is the ClusterModwrightPolicy CustomResourceDefinition
// (YAML).
//
//go:embed crds/modwright.io_clustermodwrightpolicies.yaml
var ClusterPolicyCRD []byte

// GenerateRequestCRD is the GenerateRequest CustomResourceDefinition
// (YAML): the operator's record of generate work not done yet.
//
//go:embed crds/modwright.io_generaterequests.yaml
var GenerateRequestCRD []byte

// The CustomResourceDefinitions of the policy kinds' former names, Policy
// and ClusterPolicy (YAML; their version is marked deprecated), installed
// for one more release.
var (
	//go:embed crds/modwright.io_policies.yaml
	FormerPolicyCRD []byte
	//go:embed crds/modwright.io_clusterpolicies.yaml
	FormerClusterPolicyCRD []byte
)

// The CustomResourceDefinitions of kinitiras' kinds (YAML), generated
// from api/kinitiras/v1alpha1.
var (
	//go:embed crds/policy.kcloudlabs.io_overridepolicies.yaml
	OverridePolicyCRD []byte
	//go:embed crds/policy.kcloudlabs.io_clusteroverridepolicies.yaml
	ClusterOverridePolicyCRD []byte
	//go:embed crds/policy.kcloudlabs.io_clustervalidatepolicies.yaml
	ClusterValidatePolicyCRD []byte
)

// The CustomResourceDefinitions of Kyverno's kinds (YAML; kyverno.io and
// its CEL policies' policies.kyverno.io), generated from api/kyverno: for clusters without Kyverno (where Kyverno is installed,
// its own CRDs serve). The chart installs them when absent (Helm leaves a
// CRD that exists alone); kubectl apply -k deploy/ leaves them out.
var (
	//go:embed crds/kyverno.io_clusterpolicies.yaml
	KyvernoClusterPolicyCRD []byte
	//go:embed crds/kyverno.io_policies.yaml
	KyvernoPolicyCRD []byte
	//go:embed crds/kyverno.io_policyexceptions.yaml
	KyvernoPolicyExceptionCRD []byte
	//go:embed crds/kyverno.io_globalcontextentries.yaml
	KyvernoGlobalContextEntryCRD []byte
	//go:embed crds/policies.kyverno.io_validatingpolicies.yaml
	KyvernoValidatingPolicyCRD []byte
	//go:embed crds/policies.kyverno.io_namespacedvalidatingpolicies.yaml
	KyvernoNamespacedValidatingPolicyCRD []byte
	//go:embed crds/policies.kyverno.io_mutatingpolicies.yaml
	KyvernoMutatingPolicyCRD []byte
	//go:embed crds/policies.kyverno.io_namespacedmutatingpolicies.yaml
	KyvernoNamespacedMutatingPolicyCRD []byte
	//go:embed crds/policies.kyverno.io_generatingpolicies.yaml
	KyvernoGeneratingPolicyCRD []byte
	//go:embed crds/policies.kyverno.io_namespacedgeneratingpolicies.yaml
	KyvernoNamespacedGeneratingPolicyCRD []byte
	//go:embed crds/policies.kyverno.io_policyexceptions.yaml
	KyvernoCELPolicyExceptionCRD []byte
)

// The CustomResourceDefinitions of the wgpolicyk8s.io reports the
// background scan writes (YAML), generated from api/wgpolicyk8s: for
// clusters where no other tool (Kyverno, Policy Reporter) installed them.
// The chart installs them when absent; kubectl apply -k deploy/ leaves them
// out.
var (
	//go:embed crds/wgpolicyk8s.io_policyreports.yaml
	PolicyReportCRD []byte
	//go:embed crds/wgpolicyk8s.io_clusterpolicyreports.yaml
	ClusterPolicyReportCRD []byte
)

// CRDs returns every CustomResourceDefinition of deploy/crds (YAML each):
// the rule kinds modwright serves, ModRule first, then the reports.
func CRDs() [][]byte {
	return [][]byte{CRD, PolicyCRD, ClusterPolicyCRD, FormerPolicyCRD, FormerClusterPolicyCRD, GenerateRequestCRD, OverridePolicyCRD, ClusterOverridePolicyCRD, ClusterValidatePolicyCRD,
		KyvernoClusterPolicyCRD, KyvernoPolicyCRD, KyvernoPolicyExceptionCRD, KyvernoGlobalContextEntryCRD, KyvernoValidatingPolicyCRD, KyvernoNamespacedValidatingPolicyCRD,
		KyvernoMutatingPolicyCRD, KyvernoNamespacedMutatingPolicyCRD, KyvernoGeneratingPolicyCRD, KyvernoNamespacedGeneratingPolicyCRD, KyvernoCELPolicyExceptionCRD,
		PolicyReportCRD, ClusterPolicyReportCRD}
}

// Bundle is `helm template` of the chart with its default values (YAML,
// several documents), namespace modwright-system.
//
//go:embed bundle/modwright.yaml
var Bundle []byte
