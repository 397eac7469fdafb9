package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and version of the ModRule API.
const (
	Group   = "api.kubemod.io"
	Version = "v1beta1"
	Kind    = "ModRule"
)

// GroupVersion is the API group and version of ModRule.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme registers ModRule and ModRuleList with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ModRule{}, &ModRuleList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
