package kinds

import (
	"encoding/base64"
	"maps"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// IsClusterScoped reports whether a built-in Kubernetes kind has no
// namespace. Other kinds (custom resources included) are taken as
// namespaced. It is Kubernetes knowledge, not any rule kind's: the front
// ends use it to place an offline object, the adapters to build samples.
func IsClusterScoped(kind string) bool {
	switch kind {
	case "APIService",
		"CertificateSigningRequest",
		"ClusterRole",
		"ClusterRoleBinding",
		"ComponentStatus",
		"CSIDriver",
		"CSINode",
		"CustomResourceDefinition",
		"FlowSchema",
		"IngressClass",
		"MutatingAdmissionPolicy",
		"MutatingAdmissionPolicyBinding",
		"MutatingWebhookConfiguration",
		"Namespace",
		"Node",
		"PersistentVolume",
		"PriorityClass",
		"PriorityLevelConfiguration",
		"RuntimeClass",
		"StorageClass",
		"ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding",
		"ValidatingWebhookConfiguration",
		"VolumeAttachment",
		"VolumeAttributesClass",
		"DeviceClass",
		"ClusterTrustBundle",
		"IPAddress",
		"ServiceCIDR":
		return true
	}
	return false
}

// OfflineRequest builds the admission request for an object admitted
// without an API server (lint's samples): the operation, the object's
// name and kind (group and version from its apiVersion), and ns as its
// namespace ("" for cluster-scoped). The object is the old object on
// DELETE; an UPDATE carries no old object (OfflineUpdate gives it one).
// The resource, the user, the uid and the options are unknown offline and
// left empty; DryRun is false.
func OfflineRequest(obj map[string]any, ns string, op rules.Operation) engine.Request {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	req := engine.Request{Operation: op, Name: name, Namespace: ns, Kind: engine.GroupVersionKind{Kind: kind}}
	if av, _ := obj["apiVersion"].(string); av != "" {
		req.Kind.Group, req.Kind.Version, _ = strings.Cut(av, "/")
		if req.Kind.Version == "" {
			req.Kind.Group, req.Kind.Version = "", av
		}
	}
	if op == rules.Delete {
		req.OldObject = obj
	} else {
		req.Object = obj
	}
	return req
}

// OfflineUpdate is OfflineRequest for an UPDATE of old into obj: the
// attributes are obj's, and the request carries old as its old object
// (none when old is nil, as OfflineRequest).
func OfflineUpdate(obj, old map[string]any, ns string) engine.Request {
	req := OfflineRequest(obj, ns, rules.Update)
	if old != nil {
		req.OldObject = old
	}
	return req
}

// AsDecoded returns obj as the API server's decoding hands it to
// admission: a core v1 Secret's stringData merged into data (each value
// base64-encoded, replacing data's of the same key) and removed, as
// Secret's conversion does before any webhook or policy sees it. obj is
// not modified; any other object is returned as it is.
func AsDecoded(obj map[string]any) map[string]any {
	if obj == nil || obj["apiVersion"] != "v1" || obj["kind"] != "Secret" {
		return obj
	}
	sd, ok := obj["stringData"].(map[string]any)
	if !ok {
		if _, present := obj["stringData"]; !present {
			return obj
		}
	}
	out := maps.Clone(obj)
	delete(out, "stringData")
	if len(sd) == 0 {
		return out
	}
	data, _ := obj["data"].(map[string]any)
	merged := maps.Clone(data)
	if merged == nil {
		merged = make(map[string]any, len(sd))
	}
	for k, v := range sd {
		s, _ := v.(string)
		merged[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	out["data"] = merged
	return out
}

// ValidateMetadata checks obj's labels and annotations as the API server
// validates every object's metadata after admission (apimachinery's
// ValidateAnnotations and ValidateLabels: qualified keys, label values,
// 256 KiB of annotations); nil when valid. The error is the API server's
// (an Invalid status naming the object). A built-in kind's own fields
// are validated by code that is not a library (k8s.io/kubernetes), so
// they are not checked here.
func ValidateMetadata(obj map[string]any) error {
	u := &unstructured.Unstructured{Object: obj}
	md := field.NewPath("metadata")
	errs := apivalidation.ValidateAnnotations(u.GetAnnotations(), md.Child("annotations"))
	errs = append(errs, metav1validation.ValidateLabels(u.GetLabels(), md.Child("labels"))...)
	if len(errs) == 0 {
		return nil
	}
	gvk := u.GroupVersionKind()
	return apierrors.NewInvalid(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, u.GetName(), errs)
}
