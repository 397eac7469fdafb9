package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, version and kinds of kinitiras' policy API.
const (
	Group                     = "policy.kcloudlabs.io"
	Version                   = "v1alpha1"
	KindOverridePolicy        = "OverridePolicy"
	KindClusterOverridePolicy = "ClusterOverridePolicy"
	KindClusterValidatePolicy = "ClusterValidatePolicy"
)

// GroupVersion is the API group and version.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme registers the three kinds and their lists with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&OverridePolicy{}, &OverridePolicyList{},
		&ClusterOverridePolicy{}, &ClusterOverridePolicyList{},
		&ClusterValidatePolicy{}, &ClusterValidatePolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
