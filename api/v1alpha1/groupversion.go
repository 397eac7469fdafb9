package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, version and kinds of the policy API. Policy and ClusterPolicy
// are the former names of ModwrightPolicy and ClusterModwrightPolicy
// (Kyverno's kinds have them too), read for one release.
const (
	Group                      = "modwright.io"
	Version                    = "v1alpha1"
	KindModwrightPolicy        = "ModwrightPolicy"
	KindClusterModwrightPolicy = "ClusterModwrightPolicy"
	KindPolicy                 = "Policy"
	KindClusterPolicy          = "ClusterPolicy"
)

// GroupVersion is the API group and version of the policy kinds.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme registers the policy kinds and their lists with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ModwrightPolicy{}, &ModwrightPolicyList{}, &ClusterModwrightPolicy{}, &ClusterModwrightPolicyList{},
		&Policy{}, &PolicyList{}, &ClusterPolicy{}, &ClusterPolicyList{}, &GenerateRequest{}, &GenerateRequestList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// PolicyKind reports whether kind is one of the policy kinds, under its
// current or former name, and whether it is cluster-scoped.
func PolicyKind(kind string) (ok, cluster bool) {
	switch kind {
	case KindModwrightPolicy, KindPolicy:
		return true, false
	case KindClusterModwrightPolicy, KindClusterPolicy:
		return true, true
	}
	return false, false
}

// CurrentKind is kind, or the current name of a policy kind written under
// its former name (Policy: ModwrightPolicy).
func CurrentKind(kind string) string {
	switch kind {
	case KindPolicy:
		return KindModwrightPolicy
	case KindClusterPolicy:
		return KindClusterModwrightPolicy
	}
	return kind
}
