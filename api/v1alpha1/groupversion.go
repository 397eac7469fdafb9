package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, version and kinds of the Policy API.
const (
	Group             = "modwright.io"
	Version           = "v1alpha1"
	KindPolicy        = "Policy"
	KindClusterPolicy = "ClusterPolicy"
)

// GroupVersion is the API group and version of Policy and ClusterPolicy.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme registers Policy, ClusterPolicy and their lists with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Policy{}, &PolicyList{}, &ClusterPolicy{}, &ClusterPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
